package dev.pacer.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.testing.Arrival;
import dev.pacer.testing.Door;
import dev.pacer.testing.Timeline;
import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * More processes fetch than {@code maxFetchingProcesses} says, and PostgreSQL goes away: four
 * worker JVMs of two threads each, configured for 2, a 7/s ceiling, the server stopped with
 * {@code pg_ctl stop -m immediate} once every worker has been counted by the census and left down
 * to the end of the run. Each process divides by the 4 it saw taking turns, so the fleet at the
 * door stays at the ceiling through the outage: 4 × 7/4 = 7/s once the shared queue has drained.
 * The twin runs the same fleet on the key/value layout, which keeps no census: each process
 * divides by the configured 2 alone, and the fleet runs at twice the ceiling.
 *
 * <p>Why 7/s: processes pacing alone keep no common phase, so in a sliding 1-s window each can
 * show one turn more than its rate. At 7/s each of the four paces every 571 ms, two turns in any
 * window, eight in all: the ceiling + 1 whatever their phases, with 71 ms to spare for a late
 * stamp. (At 10/s each would pace every 400 ms, and four phases can line up three turns each.)
 */
class LargerFleetOutageTest {

  private static final double RATE = 7;
  private static final int PROCESSES = 4;
  private static final int THREADS = 2;
  private static final int MAX_FETCHING_PROCESSES = 2;
  /** Two census periods and a little: every worker has counted all four. */
  private static final long COUNTED_AFTER_MILLIS = 2 * FetcherCensus.PERIOD.toMillis() + 1000;
  private static final int RUN_SECONDS = 13;
  /**
   * From the outage's start to the first local turns: the shared queue drains ((4 − 1) × 2 turns
   * at 7/s, 0.86 s, after the cursor as last seen), then each process waits out its first local
   * interval (4/7 s). 3 s leaves room for a worker that noticed the outage late.
   */
  private static final long LOCAL_PACING_AFTER_NANOS = 3_000_000_000L;
  /** The per-process rates' sum may exceed the ceiling by 2 %: the stamps' jitter over 5 s. */
  private static final double RATE_TOLERANCE = 0.02;
  private static final long SECOND = 1_000_000_000L;

  @Test
  void aFleetLargerThanConfiguredHoldsTheCeilingThroughAnOutage() throws Exception {
    Outage outage = runThroughAnOutage(null);
    assertThat(outage.before().peakOneSecondWindow()).as("before the outage, %s", outage)
        .isLessThanOrEqualTo((int) RATE + 1);
    assertThat(outage.during().peakOneSecondWindow()).as("busiest 1-s window of the outage, %s",
        outage).isLessThanOrEqualTo((int) RATE + 1);
    assertThat(outage.localRate()).as("the processes' local rates summed, %s", outage)
        .isLessThanOrEqualTo(RATE * (1 + RATE_TOLERANCE));
    // Divided by 4, the fleet runs at the ceiling once the shared queue has drained; a process
    // that stalled, or divided by far more, would fall well short.
    assertThat(outage.localRate()).as("the processes' local rates summed, %s", outage)
        .isGreaterThan(0.9 * RATE);
    assertThat(outage.during().aggregateRatePerSecond()).as("fleet rate during the outage, %s",
        outage).isBetween(0.6 * RATE, RATE * (1 + RATE_TOLERANCE));
  }

  /**
   * The key/value layout keeps no census (docs/reliability.md): the same fleet divides by the
   * configured 2, paces at 3.5/s a process, and breaks both bounds the census keeps.
   */
  @Test
  void withoutTheCensusTheSameFleetRunsAtTwiceTheCeilingThroughAnOutage() throws Exception {
    Outage outage = runThroughAnOutage("larger_fleet_cache");
    assertThat(outage.during().peakOneSecondWindow()).as("busiest 1-s window of the outage, %s",
        outage).isGreaterThan((int) RATE + 1);
    assertThat(outage.localRate()).as("the processes' local rates summed, %s", outage)
        .isGreaterThan(RATE * (1 + RATE_TOLERANCE));
  }

  /**
   * What the door saw: the turns before the server stopped and after, and the sum of the
   * processes' own rates over their local pacing ({@link #LOCAL_PACING_AFTER_NANOS} after the
   * stop to the end), each {@code (turns − 1) ÷ span}, so that no process's phase against the
   * others' moves the figure.
   */
  private record Outage(Timeline before, Timeline during, List<Timeline> local) {
    double localRate() {
      return local.stream().mapToDouble(Timeline::aggregateRatePerSecond).sum();
    }

    @Override
    public String toString() {
      return String.format(Locale.ROOT, "before the outage %s, during it %s; from %d s into it,"
              + " each process %s, %.2f/s summed", before, during,
          LOCAL_PACING_AFTER_NANOS / SECOND, local.stream().map(t -> String.format(Locale.ROOT,
              "%.3f/s", t.aggregateRatePerSecond())).toList(), localRate());
    }
  }

  /**
   * Runs the fleet, each worker sending its turns to the door as {@code /r?worker=i}, on Pacer's
   * table, or on a Django-style cache table of that name when {@code djangoCacheTable} is given.
   */
  private static Outage runThroughAnOutage(String djangoCacheTable) throws Exception {
    String destination = "larger-" + UUID.randomUUID().toString().substring(0, 8);
    try (RestartablePostgres postgres = new RestartablePostgres(); Door door = Door.start()) {
      if (djangoCacheTable != null) {
        try (Connection c = DriverManager.getConnection(postgres.jdbcUrl());
            Statement s = c.createStatement()) {
          s.execute("CREATE TABLE " + djangoCacheTable + " (cache_key varchar(255) PRIMARY KEY,"
              + " value text NOT NULL, expires timestamptz NOT NULL)");
        }
      }
      List<Process> workers = new ArrayList<>();
      try {
        String java = System.getProperty("java.home") + File.separator + "bin" + File.separator + "java";
        Path logs = Files.createTempDirectory("larger-fleet-logs");
        List<BufferedReader> readers = new ArrayList<>();
        for (int i = 0; i < PROCESSES; i++) {
          List<String> command = new ArrayList<>(List.of(java, "-XX:TieredStopAtLevel=1", "-cp",
              System.getProperty("java.class.path"), OutageWorker.class.getName(),
              postgres.jdbcUrl(), destination, String.valueOf(RATE), String.valueOf(THREADS),
              String.valueOf(MAX_FETCHING_PROCESSES), String.valueOf(RUN_SECONDS),
              door.uri().resolve("/r?worker=" + i).toString()));
          if (djangoCacheTable != null) {
            command.add(djangoCacheTable);
          }
          Process p = new ProcessBuilder(command)
              .redirectError(logs.resolve("worker-" + i + ".log").toFile()).start();
          workers.add(p);
          readers.add(new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8)));
        }
        for (BufferedReader r : readers) {
          assertThat(r.readLine()).isEqualTo("READY");
        }
        for (Process p : workers) {
          Writer in = new OutputStreamWriter(p.getOutputStream(), StandardCharsets.UTF_8);
          in.write("GO\n");
          in.flush();
        }
        List<CompletableFuture<List<String>>> outputs = new ArrayList<>();
        for (BufferedReader r : readers) {
          outputs.add(CompletableFuture.supplyAsync(() -> r.lines().toList()));
        }
        Thread.sleep(COUNTED_AFTER_MILLIS);
        long down = System.nanoTime();
        postgres.stopImmediately();
        for (int i = 0; i < PROCESSES; i++) {
          outputs.get(i).get(RUN_SECONDS + 30, TimeUnit.SECONDS);
          assertThat(workers.get(i).waitFor(30, TimeUnit.SECONDS)).isTrue();
          assertThat(workers.get(i).exitValue()).as("worker %d exit", i).isZero();
        }

        List<Arrival> turns = door.arrivals().stream()
            .filter(a -> a.path().equals("/r")).toList();
        List<Timeline> local = new ArrayList<>();
        for (int i = 0; i < PROCESSES; i++) {
          String target = "/r?worker=" + i;
          local.add(new Timeline(turns.stream().filter(a -> a.target().equals(target))
              .map(Arrival::nanos).filter(t -> t - down >= LOCAL_PACING_AFTER_NANOS)
              .toList()));
        }
        Outage outage = new Outage(
            new Timeline(turns.stream().map(Arrival::nanos).filter(t -> t - down < 0)
                .toList()),
            new Timeline(turns.stream().map(Arrival::nanos).filter(t -> t - down >= 0)
                .toList()),
            local);
        System.out.printf("larger fleet on %s: %d processes, maxFetchingProcesses %d, at the door"
                + " %s%n", djangoCacheTable == null ? "Pacer's table" : "a key/value table",
            PROCESSES, MAX_FETCHING_PROCESSES, outage);
        for (int i = 0; i < PROCESSES; i++) {
          for (String line : Files.readAllLines(logs.resolve("worker-" + i + ".log"))) {
            if (line.contains("pacing locally")) {
              System.out.println("larger fleet: worker " + i + ": " + line);
            }
          }
        }
        return outage;
      } finally {
        workers.forEach(Process::destroyForcibly);
      }
    }
  }
}
