package dev.pacer.http;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.http.fleet.FleetMember;
import dev.pacer.postgres.TestDatabase;
import dev.pacer.testing.Arrival;
import dev.pacer.testing.Door;
import dev.pacer.testing.FleetBounds;
import dev.pacer.testing.Timeline;
import dev.pacer.testing.TurnTrace;
import dev.pacer.testing.WallClockSteps;
import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Three processes, one per client (the JDK's through {@code PacedHttpClient}, OkHttp through
 * {@code PacingInterceptor}, Apache's through {@code PacingExecChainHandler}), each written with
 * Pacer's public API alone ({@link FleetMember}) and its own {@code PostgresCursor} on a real
 * PostgreSQL, pace one destination together, judged at the {@link Door} by {@link FleetBounds}:
 * the busiest 1-s window from the first arrival, the aggregate and the delivered rate over the run
 * but its first second, the turns given up as late. The twin runs the same processes each on a
 * {@code LocalCursor}, as per-process pacers would, and must break the ceiling. A second fleet,
 * three processes of the JDK's client through {@code PacedHttpClient}, is held to the same bounds
 * at 100/s, each request traced from its turn to the door ({@link TurnTrace}): the turns are held
 * to the window with no excuse, and a window broken at the door by a request held up after its
 * hand-over to the JDK's client, where no check can see it, is reported as skipped with its
 * figures.
 */
class ThreeClientsOneCursorTest {

  /** The three clients at a rate where the aggregate is the bound that bites. */
  private static final double MIXED_CEILING = 10;
  private static final List<Client> MIXED = List.of(Client.values());
  /**
   * Three processes of the JDK's client at 100/s, turns 10 ms apart, where a window may hold one
   * request more than the ceiling, a hundredth of it. One client throughout, since the clients
   * take different times from a turn to the socket, and at 10 ms a turn that difference is what
   * a window's slack of one request must absorb.
   */
  private static final double JDK_CEILING = 100;
  private static final List<Client> JDK_ONLY = List.of(Client.JDK, Client.JDK, Client.JDK);
  private static final double RUN_SECONDS = 6;
  private static final double TWIN_SECONDS = 3;
  /** The steady part: every process asks without pause from GO, its first second aside. */
  private static final double START_SECONDS = 1;

  private static Door door;

  /**
   * What a run left at the door, and what its members reported: the requests the JDK's members
   * traced from turn to door among them.
   */
  private record Run(List<Arrival> atTheDoor, Map<String, Long> byMember, long sent, long late,
      TurnTrace trace) {

    Timeline arrivals() {
      return Timeline.of(atTheDoor);
    }
  }

  @BeforeAll
  static void openTheDoor() throws IOException {
    WallClockSteps.get();
    door = Door.start();
  }

  @AfterAll
  static void closeTheDoor() throws IOException {
    door.close();
  }

  @Test
  void threeClientsInThreeProcessesKeepTheCeilingAtTheDoor() throws Exception {
    assertKept(MIXED, MIXED_CEILING, "three clients, three processes, one table");
  }

  @Test
  void threeClientsInThreeProcessesEachOnALocalCursorBreakTheCeiling() throws Exception {
    assertBroke(MIXED, MIXED_CEILING, "three clients, a local cursor each");
  }

  @Test
  void threePacedHttpClientProcessesKeepAHundredPerSecondAtTheDoor() throws Exception {
    assertKept(JDK_ONLY, JDK_CEILING, "three PacedHttpClient processes at 100/s, one table");
  }

  @Test
  void threePacedHttpClientProcessesEachOnALocalCursorBreakAHundredPerSecond()
      throws Exception {
    assertBroke(JDK_ONLY, JDK_CEILING, "three PacedHttpClient processes, a local cursor each");
  }

  private static void assertKept(List<Client> members, double ceiling, String what)
      throws Exception {
    Run run = run(members, "shared", ceiling, RUN_SECONDS);
    FleetBounds bounds = FleetBounds.at(ceiling, what, door);
    System.out.printf("%s: by member %s; %d sent, %d given up as late; %s%n", what,
        run.byMember(), run.sent(), run.late(), run.trace().stampDelays(run.atTheDoor()));
    assertThat(run.arrivals().size()).as("requests at the door").isEqualTo(run.sent());
    Timeline steady = run.arrivals().after(START_SECONDS);
    bounds.assertDelivered(steady);
    bounds.assertFewLateTurns(run.late(), run.sent() + run.late());
    assertThat(run.byMember().values()).as("every member sent its share, %s", run.byMember())
        .allSatisfy(n -> assertThat(n).isGreaterThanOrEqualTo((long) ceiling));
    // Last, since a window broken by a request held up after its hand-over skips the rest.
    if (members.stream().allMatch(Client.JDK::equals)) {
      bounds.assertHeld(run.arrivals(), steady, run.trace(), run.atTheDoor());
    } else {
      bounds.assertHeld(run.arrivals(), steady);
    }
  }

  private static void assertBroke(List<Client> members, double ceiling, String what)
      throws Exception {
    Run run = run(members, "local", ceiling, TWIN_SECONDS);
    FleetBounds bounds = FleetBounds.at(ceiling, what, door);
    bounds.assertWindowBroke(run.arrivals());
    bounds.assertAggregateBroke(run.arrivals());
  }

  /**
   * Runs one process per client of {@code members}, the {@code i}th sending under {@code
   * <path>/<i>} so that each member's arrivals are told apart.
   */
  private static Run run(List<Client> members, String mode, double ceiling, double seconds)
      throws Exception {
    String destination = "three-clients-" + UUID.randomUUID().toString().substring(0, 8);
    String path = "/" + destination;
    String java = System.getProperty("java.home") + File.separator + "bin" + File.separator + "java";
    List<Process> processes = new ArrayList<>();
    List<BufferedReader> outputs = new ArrayList<>();
    try {
      for (int i = 0; i < members.size(); i++) {
        Process p = new ProcessBuilder(java, "-Xshare:auto", "-XX:TieredStopAtLevel=1",
            "-cp", System.getProperty("java.class.path"), FleetMember.class.getName(),
            members.get(i).name(), mode, TestDatabase.jdbcUrl(), destination,
            String.valueOf(ceiling), String.valueOf(members.size()), door.url(path + "/" + i),
            String.valueOf(seconds))
            .redirectError(ProcessBuilder.Redirect.INHERIT)
            .start();
        processes.add(p);
        outputs.add(new BufferedReader(new InputStreamReader(p.getInputStream(),
            StandardCharsets.UTF_8)));
      }
      for (BufferedReader out : outputs) {
        assertThat(out.readLine()).as("member start-up").isEqualTo("READY");
      }
      for (Process p : processes) {
        Writer in = new OutputStreamWriter(p.getOutputStream(), StandardCharsets.UTF_8);
        in.write("GO\n");
        in.flush();
      }
      long sent = 0;
      long late = 0;
      TurnTrace trace = new TurnTrace(ceiling);
      for (BufferedReader out : outputs) {
        String line;
        while ((line = out.readLine()) != null) {
          String[] parts = line.split(" ");
          if (parts.length == 4 && parts[0].equals("TRACE")) {
            trace.sent(parts[1], Long.parseLong(parts[2]), Long.parseLong(parts[3]));
          } else if (parts.length == 4 && parts[0].equals("SENT") && parts[2].equals("LATE")) {
            sent += Long.parseLong(parts[1]);
            late += Long.parseLong(parts[3]);
          }
        }
      }
      for (Process p : processes) {
        assertThat(p.waitFor(60, TimeUnit.SECONDS)).as("member exited").isTrue();
        assertThat(p.exitValue()).as("member exit code").isZero();
      }
      List<Arrival> arrivals = door.arrivals().stream()
          .filter(a -> a.path().startsWith(path + "/") && a.path().contains("/ok/")).toList();
      Map<String, Long> byMember = new LinkedHashMap<>();
      for (int i = 0; i < members.size(); i++) {
        String member = path + "/" + i + "/ok/" + members.get(i);
        byMember.put(members.get(i) + " " + i,
            arrivals.stream().filter(a -> a.path().equals(member)).count());
      }
      return new Run(arrivals, byMember, sent, late, trace);
    } finally {
      processes.forEach(Process::destroyForcibly);
    }
  }
}
