package dev.pacer.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.Cursor;
import dev.pacer.Destination;
import dev.pacer.DestinationLimiter;
import dev.pacer.LimiterRegistry;
import dev.pacer.LocalCursor;
import dev.pacer.Timeline;
import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;

/**
 * The ceiling is one for the whole fleet: several OS processes, or several independent limiters,
 * each pacing at the full rate, together stay under it. Each scenario is bounded from above
 * (aggregate rate, busiest 1-s window) and from below (span), and each is run again with
 * per-process pacing to prove the bounds catch the N-times defect.
 */
class FleetTest {

  /** Three processes at 20/s, 10 turns each. */
  private static final double PROCESS_RATE = 20;
  private static final int PROCESSES = 3;
  private static final int PROCESS_TURNS = 10;
  /** Four independent limiters at 25/s, 8 turns each. */
  private static final double INSTANCE_RATE = 25;
  private static final int INSTANCES = 4;
  private static final int INSTANCE_TURNS = 8;
  /**
   * Headroom for timestamp jitter (a turn's instant is taken after an oversleep of up to a few ms,
   * so even a perfect pacer shows 26 turns in some 1-s window at 25/s): the upper bounds sit 25 %
   * above the ceiling, the lower bound on the span at 75 % of the ideal. At 20/s that is the
   * issue's 25/s, 25 per window and 0.75 x 29/20 s; the four-limiter scenario scales the same way.
   * Per-process pacing lands at 3x and 4x, far outside both.
   */
  private static final double UPPER_SLACK = 1.25;
  private static final double LOWER_SLACK = 0.75;

  @Test
  void threeProcessesShareOneCeiling() throws Exception {
    Timeline t = runProcesses("shared");
    System.out.println("three processes, shared cursor: " + t);
    assertWithinCeiling(t, PROCESS_RATE, PROCESSES * PROCESS_TURNS);
  }

  @Test
  void threeProcessesPacingPerProcessBreakTheCeiling() throws Exception {
    Timeline t = runProcesses("local");
    System.out.println("three processes, per-process pacing: " + t);
    assertBreaksCeiling(t, PROCESS_RATE, PROCESSES * PROCESS_TURNS);
  }

  @Test
  void fourIndependentLimitersShareOneCeiling() throws Exception {
    List<PostgresCursor> cursors = new ArrayList<>();
    try {
      Timeline t = runInstances(() -> {
        PostgresCursor c = TestDatabase.cursor(TableLayout.pacerTable());
        cursors.add(c);
        return c;
      });
      System.out.println("four limiters, shared cursor: " + t);
      assertWithinCeiling(t, INSTANCE_RATE, INSTANCES * INSTANCE_TURNS);
    } finally {
      cursors.forEach(PostgresCursor::close);
    }
  }

  @Test
  void fourIndependentLimitersPacingPerProcessBreakTheCeiling() throws Exception {
    Timeline t = runInstances(LocalCursor::new);
    System.out.println("four limiters, per-process pacing: " + t);
    assertBreaksCeiling(t, INSTANCE_RATE, INSTANCES * INSTANCE_TURNS);
  }

  private static void assertWithinCeiling(Timeline t, double ceiling, int events) {
    assertThat(t.size()).isEqualTo(events);
    assertThat(t.aggregateRatePerSecond()).as("aggregate rate, %s", t)
        .isLessThanOrEqualTo(ceiling * UPPER_SLACK);
    assertThat(t.peakOneSecondWindow()).as("busiest 1-s window, %s", t)
        .isLessThanOrEqualTo((int) Math.floor(ceiling * UPPER_SLACK));
    assertThat(t.spanSeconds()).as("span, %s", t)
        .isGreaterThanOrEqualTo(LOWER_SLACK * (events - 1) / ceiling);
  }

  /** The per-process pacer must fail both the upper and the lower bound, or the test proves nothing. */
  private static void assertBreaksCeiling(Timeline t, double ceiling, int events) {
    assertThat(t.size()).isEqualTo(events);
    assertThat(t.aggregateRatePerSecond()).as("aggregate rate, %s", t)
        .isGreaterThan(ceiling * UPPER_SLACK);
    assertThat(t.peakOneSecondWindow()).as("busiest 1-s window, %s", t)
        .isGreaterThan((int) Math.floor(ceiling * UPPER_SLACK));
    assertThat(t.spanSeconds()).as("span, %s", t).isLessThan(LOWER_SLACK * (events - 1) / ceiling);
  }

  private static Timeline runProcesses(String mode) throws Exception {
    String destination = "fleet-" + UUID.randomUUID().toString().substring(0, 8);
    String java = System.getProperty("java.home") + File.separator + "bin" + File.separator + "java";
    List<Process> processes = new ArrayList<>();
    List<BufferedReader> outputs = new ArrayList<>();
    try {
      for (int i = 0; i < PROCESSES; i++) {
        Process p = new ProcessBuilder(java, "-Xshare:auto", "-XX:TieredStopAtLevel=1",
            "-cp", System.getProperty("java.class.path"), FleetWorker.class.getName(),
            mode, TestDatabase.jdbcUrl(), destination, String.valueOf(PROCESS_RATE),
            String.valueOf(PROCESS_TURNS))
            .redirectError(ProcessBuilder.Redirect.INHERIT)
            .start();
        processes.add(p);
        outputs.add(new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8)));
      }
      for (BufferedReader out : outputs) {
        String line = out.readLine();
        assertThat(line).as("worker start-up").isEqualTo("READY");
      }
      for (Process p : processes) {
        Writer in = new OutputStreamWriter(p.getOutputStream(), StandardCharsets.UTF_8);
        in.write("GO\n");
        in.flush();
      }
      List<Long> instants = new ArrayList<>();
      for (BufferedReader out : outputs) {
        String line;
        while ((line = out.readLine()) != null) {
          if (line.startsWith("ACQ ")) {
            instants.add(Long.parseLong(line.substring(4)));
          }
        }
      }
      for (Process p : processes) {
        assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).isZero();
      }
      return new Timeline(instants);
    } finally {
      processes.forEach(Process::destroyForcibly);
    }
  }

  private static Timeline runInstances(Supplier<Cursor> cursors) throws Exception {
    String destination = "fleet-" + UUID.randomUUID().toString().substring(0, 8);
    List<DestinationLimiter> limiters = new ArrayList<>();
    for (int i = 0; i < INSTANCES; i++) {
      Destination d = Destination.builder(destination).ratePerSecond(INSTANCE_RATE).maxConcurrency(1).build();
      limiters.add(new LimiterRegistry(cursors.get()).limiter(d));
    }
    List<Long> instants = Collections.synchronizedList(new ArrayList<>());
    CountDownLatch go = new CountDownLatch(1);
    ExecutorService pool = Executors.newFixedThreadPool(INSTANCES);
    try {
      List<Future<?>> done = new ArrayList<>();
      for (DestinationLimiter limiter : limiters) {
        done.add(pool.submit(() -> {
          go.await();
          for (int i = 0; i < INSTANCE_TURNS; i++) {
            limiter.acquire().close();
            Instant now = Instant.now();
            instants.add(now.getEpochSecond() * 1_000_000_000L + now.getNano());
          }
          return null;
        }));
      }
      go.countDown();
      for (Future<?> f : done) {
        f.get(60, TimeUnit.SECONDS);
      }
    } finally {
      pool.shutdownNow();
    }
    return new Timeline(instants);
  }
}
