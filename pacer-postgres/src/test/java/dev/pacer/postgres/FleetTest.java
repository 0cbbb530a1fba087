package dev.pacer.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.Destination;
import dev.pacer.DestinationLimiter;
import dev.pacer.LimiterRegistry;
import dev.pacer.LocalCursor;
import dev.pacer.spi.Cursor;
import dev.pacer.testing.Arrival;
import dev.pacer.testing.DoorExtension;
import dev.pacer.testing.FleetBounds;
import dev.pacer.testing.Timeline;
import dev.pacer.testing.TurnTrace;
import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The ceiling is one for the whole fleet: several OS processes, or several independent limiters,
 * each pacing at the full rate and sending one request to the door per turn, together stay under it
 * where the requests arrive. Each run is held to {@link FleetBounds} at the door (busiest 1-s
 * window, aggregate, delivered rate, late turns), and each is run again with per-process pacing,
 * which must break the upper bounds, to prove they catch the N-times defect.
 *
 * <p>Every member asks without pause from GO on. The busiest window is judged from the first
 * arrival, and the aggregate and the delivered rate over the run but its start ({@link
 * RunArrivals#steady}). Before GO a member takes one turn only, its client's opening request
 * ({@link DoorClient}): {@code PostgresCursor} rehearses the statement on each connection it opens,
 * and turns are placed on the database's clock, so the window holds from the first turn.
 *
 * <p>Each request is traced from its turn to the door ({@link TurnTrace}): the turns themselves are
 * held to the window with no excuse, and a window over the bound at the door is told apart from a
 * request delayed after its turn's check, as {@link FleetBounds#assertHeld(Timeline, Timeline,
 * TurnTrace, List)} says. At 20 and 25 turns a second, the late-turn limit (half a turn) and the
 * stamp error together exceed the turn, so such a delay is enough to put one more arrival in a
 * window.
 */
class FleetTest {

  /**
   * Three processes at 20/s, 34 turns each: 102 requests, 5.05 s at the ceiling, of which the
   * steady part's 82 turns may give up as late the 3 a stall can cost ({@link
   * FleetBounds#STALL_SECONDS}).
   */
  private static final double PROCESS_RATE = 20;

  private static final int PROCESSES = 3;
  private static final int PROCESS_TURNS = 34;

  /** Four independent limiters at 25/s, 26 turns each: 104 requests, 4.12 s at the ceiling. */
  private static final double INSTANCE_RATE = 25;

  private static final int INSTANCES = 4;
  private static final int INSTANCE_TURNS = 26;

  /** One door for every run of the class: each run sends to a path of its own. */
  @RegisterExtension static final DoorExtension door = new DoorExtension();

  /**
   * What a run left at the door, and what its members reported: their turns taken and given up, and
   * each request's turn and send ({@link TurnTrace}).
   */
  private record Run(List<Arrival> atTheDoor, TurnsTaken turns, TurnTrace trace) {
    Timeline arrivals() {
      return Timeline.of(atTheDoor);
    }
  }

  @Test
  void threeProcessesShareOneCeiling() throws Exception {
    Run run = runProcesses("shared");
    assertHeld(
        FleetBounds.at(PROCESS_RATE, "three processes, shared cursor", door),
        run,
        PROCESSES * PROCESS_TURNS);
  }

  @Test
  void threeProcessesPacingPerProcessBreakTheCeiling() throws Exception {
    Run run = runProcesses("local");
    assertBroke(
        FleetBounds.at(PROCESS_RATE, "three processes, per-process pacing", door),
        run,
        PROCESSES * PROCESS_TURNS);
  }

  @Test
  void fourIndependentLimitersShareOneCeiling() throws Exception {
    List<PostgresCursor> cursors = new ArrayList<>();
    try {
      Run run =
          runInstances(
              () -> {
                PostgresCursor c = TestDatabase.cursor(TableLayout.pacerTable());
                cursors.add(c);
                return c;
              });
      assertHeld(
          FleetBounds.at(INSTANCE_RATE, "four limiters, shared cursor", door),
          run,
          INSTANCES * INSTANCE_TURNS);
    } finally {
      cursors.forEach(PostgresCursor::close);
    }
  }

  @Test
  void fourIndependentLimitersPacingPerProcessBreakTheCeiling() throws Exception {
    Run run = runInstances(LocalCursor::new);
    assertBroke(
        FleetBounds.at(INSTANCE_RATE, "four limiters, per-process pacing", door),
        run,
        INSTANCES * INSTANCE_TURNS);
  }

  private static void assertHeld(FleetBounds bounds, Run run, int requests) {
    assertThat(run.arrivals().size()).as("requests at the door").isEqualTo(requests);
    Timeline steady = RunArrivals.steady(run.arrivals());
    System.out.println(run.trace().busiestWindow(run.atTheDoor()));
    bounds.assertHeld(run.arrivals(), steady, run.trace(), run.atTheDoor());
    bounds.assertDelivered(steady);
    bounds.assertFewLateTurns(run.turns().late(), run.turns().sent());
  }

  /**
   * The per-process pacer must break both upper bounds, or the test proves nothing: the aggregate
   * over the whole run, which at N times the ceiling lasts not much over a second.
   */
  private static void assertBroke(FleetBounds bounds, Run run, int requests) {
    assertThat(run.arrivals().size()).as("requests at the door").isEqualTo(requests);
    bounds.assertWindowBroke(run.arrivals());
    bounds.assertAggregateBroke(run.arrivals());
  }

  private static Run runProcesses(String mode) throws Exception {
    String destination = "fleet-" + UUID.randomUUID().toString().substring(0, 8);
    String path = "/" + destination;
    String java =
        System.getProperty("java.home") + File.separator + "bin" + File.separator + "java";
    List<Process> processes = new ArrayList<>();
    List<BufferedReader> outputs = new ArrayList<>();
    try {
      for (int i = 0; i < PROCESSES; i++) {
        Process p =
            new ProcessBuilder(
                    java,
                    "-Xshare:auto",
                    "-XX:TieredStopAtLevel=1",
                    "-cp",
                    System.getProperty("java.class.path"),
                    FleetWorker.class.getName(),
                    mode,
                    TestDatabase.jdbcUrl(),
                    destination,
                    String.valueOf(PROCESS_RATE),
                    String.valueOf(PROCESS_TURNS),
                    door.url(path),
                    "process-" + i)
                .redirectError(ProcessBuilder.Redirect.INHERIT)
                .start();
        processes.add(p);
        outputs.add(
            new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8)));
      }
      for (BufferedReader out : outputs) {
        assertThat(out.readLine()).as("worker start-up").isEqualTo("READY");
      }
      for (Process p : processes) {
        Writer in = new OutputStreamWriter(p.getOutputStream(), StandardCharsets.UTF_8);
        in.write("GO\n");
        in.flush();
      }
      TurnsTaken turns = TurnsTaken.NONE;
      TurnTrace trace = new TurnTrace(PROCESS_RATE);
      for (BufferedReader out : outputs) {
        String line;
        while ((line = out.readLine()) != null) {
          if (!TraceLines.read(line, trace)) {
            turns = TurnsTaken.parse(line).map(turns::plus).orElse(turns);
          }
        }
      }
      for (Process p : processes) {
        assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).isZero();
      }
      return new Run(RunArrivals.of(door.arrivals(), path), turns, trace);
    } finally {
      processes.forEach(Process::destroyForcibly);
    }
  }

  private static Run runInstances(Supplier<Cursor> cursors) throws Exception {
    String destination = "fleet-" + UUID.randomUUID().toString().substring(0, 8);
    String path = "/" + destination;
    List<DestinationLimiter> limiters = new ArrayList<>();
    List<DoorClient> clients = new ArrayList<>();
    TurnTrace trace = new TurnTrace(INSTANCE_RATE);
    for (int i = 0; i < INSTANCES; i++) {
      Destination d =
          Destination.builder(destination).ratePerSecond(INSTANCE_RATE).maxConcurrency(1).build();
      LimiterRegistry registry = new LimiterRegistry(cursors.get());
      DestinationLimiter limiter = registry.limiter(d);
      limiters.add(limiter);
      clients.add(
          DoorClient.opened(
              limiter,
              URI.create(door.url(path)),
              "limiter-" + i,
              sent -> TraceLines.record(sent, trace)));
      // One turn on a destination of its own, so that the measured turns run warm code.
      registry
          .limiter(Destination.builder(destination + "-warm-" + i).ratePerSecond(1).build())
          .acquire()
          .close();
    }
    CountDownLatch go = new CountDownLatch(1);
    ExecutorService pool = Executors.newFixedThreadPool(INSTANCES);
    TurnsTaken turns = TurnsTaken.NONE;
    try {
      List<Future<TurnsTaken>> done = new ArrayList<>();
      for (int m = 0; m < INSTANCES; m++) {
        DoorClient client = clients.get(m);
        DestinationLimiter limiter = limiters.get(m);
        String member = "limiter-" + m;
        done.add(
            pool.submit(
                () -> {
                  go.await();
                  SteadyTurns steady =
                      new SteadyTurns(System.nanoTime(), limiter::lateTurnsSkipped);
                  for (int i = 0; i < INSTANCE_TURNS; i++) {
                    steady.beforeTurn();
                    client.send(query(member, i));
                  }
                  return steady.taken();
                }));
      }
      go.countDown();
      for (Future<TurnsTaken> f : done) {
        turns = turns.plus(f.get(60, TimeUnit.SECONDS));
      }
    } finally {
      pool.shutdownNow();
    }
    return new Run(RunArrivals.of(door.arrivals(), path), turns, trace);
  }

  /** The query of {@code member}'s {@code n}th request: each request of a run has its own. */
  static String query(String member, int n) {
    return "m=" + member + "&n=" + n;
  }
}
