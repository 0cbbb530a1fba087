package dev.pacer.http;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.testing.Door;
import dev.pacer.testing.DoorExtension;
import dev.pacer.testing.FleetBounds;
import dev.pacer.testing.Timeline;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Each integration's warm-up in a fresh JVM ({@link ColdStart}): 30 requests from 30 threads at
 * 10/s, judged at the {@link Door} by {@link FleetBounds}: the busiest 1-s window from the first
 * arrival, and the aggregate and the delivered rate over the run but its first request, which opens
 * the connection to the destination inside its turn (the warm-up sends nothing to the destination).
 * Without the warm-up, the first requests load the client's classes after their turns began, and
 * requests of other threads granted turns meanwhile may wait for the same loading and leave with
 * them. The twin sends the same requests through the same client unpaced, and must break the window
 * and the aggregate.
 */
class ColdStartTest {

  @RegisterExtension static final DoorExtension door = new DoorExtension();

  /** What a run left at the door, and the turns its child gave up as late. */
  private record Run(Timeline arrivals, long late) {}

  @ParameterizedTest
  @EnumSource(Client.class)
  void aWarmedUpClientsFirstRequestsKeepTheCeiling(Client kind) throws Exception {
    Run run = run(kind, "warm");
    FleetBounds bounds = FleetBounds.at(ColdStart.CEILING, kind + " warmed up", door);
    assertThat(run.arrivals().size()).isEqualTo(ColdStart.REQUESTS);
    Timeline steady = run.arrivals().withoutFirst();
    bounds.assertHeld(run.arrivals(), steady);
    bounds.assertDelivered(steady);
    bounds.assertFewLateTurns(run.late(), ColdStart.REQUESTS + run.late());
  }

  @ParameterizedTest
  @EnumSource(Client.class)
  void theTwinUnpacedBreaksTheCeiling(Client kind) throws Exception {
    Run run = run(kind, "unpaced");
    assertThat(run.arrivals().size()).isEqualTo(ColdStart.REQUESTS);
    FleetBounds bounds = FleetBounds.at(ColdStart.CEILING, kind + " unpaced", door);
    bounds.assertWindowBroke(run.arrivals());
    bounds.assertAggregateBroke(run.arrivals());
  }

  private static Run run(Client kind, String warmth) throws Exception {
    String path = "/cold-start-" + UUID.randomUUID().toString().substring(0, 8);
    Process child =
        new ProcessBuilder(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-cp",
                System.getProperty("java.class.path"),
                ColdStart.class.getName(),
                kind.name(),
                door.url(path),
                warmth)
            .redirectError(ProcessBuilder.Redirect.INHERIT)
            .start();
    String out = new String(child.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(child.waitFor(90, TimeUnit.SECONDS)).as("child finished").isTrue();
    assertThat(child.exitValue()).as("child's exit status").isZero();
    String late =
        out.lines()
            .filter(l -> l.startsWith("LATE "))
            .findFirst()
            .orElseThrow(() -> new AssertionError("the child reported no LATE line: " + out));
    return new Run(
        Timeline.of(
            door.arrivals().stream().filter(a -> a.path().startsWith(path + "/ok/")).toList()),
        Long.parseLong(late.substring("LATE ".length()).trim()));
  }
}
