package dev.pacer.http;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.http.fleet.FleetMember;
import dev.pacer.postgres.TestDatabase;
import dev.pacer.testing.Arrival;
import dev.pacer.testing.Door;
import dev.pacer.testing.DoorExtension;
import dev.pacer.testing.FleetBounds;
import dev.pacer.testing.Timeline;
import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Three processes, one per client (the JDK's through {@code PacedHttpClient}, OkHttp through {@code
 * PacingInterceptor}, Apache's through {@code PacingExecChainHandler}), each written with Pacer's
 * public API alone ({@link FleetMember}) and its own {@code PostgresCursor} on a real PostgreSQL,
 * pace one destination together, judged at the {@link Door} by {@link FleetBounds}: the busiest 1-s
 * window from the first arrival, the aggregate and the delivered rate over the run but its first
 * second, the turns given up as late. The twin runs the same processes each on a {@code
 * LocalCursor}, as per-process pacers would, and must break the ceiling.
 */
class ThreeClientsOneCursorTest {

  private static final double CEILING = 10;
  private static final double RUN_SECONDS = 6;
  private static final double TWIN_SECONDS = 3;

  /** The steady part: every process asks without pause from GO, its first second aside. */
  private static final double START_SECONDS = 1;

  @RegisterExtension static final DoorExtension door = new DoorExtension();

  /** What a run left at the door, and what its members reported. */
  private record Run(Timeline arrivals, Map<Client, Long> byClient, long sent, long late) {}

  @Test
  void threeClientsInThreeProcessesKeepTheCeilingAtTheDoor() throws Exception {
    Run run = run("shared", RUN_SECONDS);
    FleetBounds bounds = FleetBounds.at(CEILING, "three clients, three processes, one table", door);
    System.out.printf(
        "three clients: by client %s; %d sent, %d given up as late%n",
        run.byClient(), run.sent(), run.late());
    assertThat(run.arrivals().size()).as("requests at the door").isEqualTo(run.sent());
    Timeline steady = run.arrivals().after(START_SECONDS);
    bounds.assertHeld(run.arrivals(), steady);
    bounds.assertDelivered(steady);
    bounds.assertFewLateTurns(run.late(), run.sent() + run.late());
    assertThat(run.byClient().values())
        .as("every client sent its share, %s", run.byClient())
        .allSatisfy(n -> assertThat(n).isGreaterThanOrEqualTo(10));
  }

  @Test
  void theTwinPacingEachProcessOnItsOwnCursorBreaksTheCeiling() throws Exception {
    Run run = run("local", TWIN_SECONDS);
    FleetBounds bounds = FleetBounds.at(CEILING, "three clients, a local cursor each", door);
    bounds.assertWindowBroke(run.arrivals());
    bounds.assertAggregateBroke(run.arrivals());
  }

  private static Run run(String mode, double seconds) throws Exception {
    String destination = "three-clients-" + UUID.randomUUID().toString().substring(0, 8);
    String path = "/" + destination;
    String java =
        System.getProperty("java.home") + File.separator + "bin" + File.separator + "java";
    List<Process> processes = new ArrayList<>();
    List<BufferedReader> outputs = new ArrayList<>();
    try {
      for (Client kind : Client.values()) {
        Process p =
            new ProcessBuilder(
                    java,
                    "-Xshare:auto",
                    "-XX:TieredStopAtLevel=1",
                    "-cp",
                    System.getProperty("java.class.path"),
                    FleetMember.class.getName(),
                    kind.name(),
                    mode,
                    TestDatabase.jdbcUrl(),
                    destination,
                    String.valueOf(CEILING),
                    String.valueOf(Client.values().length),
                    door.url(path),
                    String.valueOf(seconds))
                .redirectError(ProcessBuilder.Redirect.INHERIT)
                .start();
        processes.add(p);
        outputs.add(
            new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8)));
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
      for (BufferedReader out : outputs) {
        String line;
        while ((line = out.readLine()) != null) {
          String[] parts = line.split(" ");
          if (parts.length == 4 && parts[0].equals("SENT") && parts[2].equals("LATE")) {
            sent += Long.parseLong(parts[1]);
            late += Long.parseLong(parts[3]);
          }
        }
      }
      for (Process p : processes) {
        assertThat(p.waitFor(60, TimeUnit.SECONDS)).as("member exited").isTrue();
        assertThat(p.exitValue()).as("member exit code").isZero();
      }
      List<Arrival> arrivals =
          door.arrivals().stream().filter(a -> a.path().startsWith(path + "/ok/")).toList();
      Map<Client, Long> byClient = new EnumMap<>(Client.class);
      for (Client kind : Client.values()) {
        byClient.put(
            kind, arrivals.stream().filter(a -> a.path().equals(path + "/ok/" + kind)).count());
      }
      return new Run(Timeline.of(arrivals), byClient, sent, late);
    } finally {
      processes.forEach(Process::destroyForcibly);
    }
  }
}
