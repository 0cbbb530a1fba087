package dev.pacer.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.testing.Arrival;
import dev.pacer.testing.Door;
import dev.pacer.testing.FleetBounds;
import dev.pacer.testing.Timeline;
import dev.pacer.testing.WallClockSteps;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * PostgreSQL crashes under a running fleet and comes back: three worker JVMs of six threads each, a
 * 10/s ceiling, each turn a request to the door, the server stopped with {@code pg_ctl stop -m
 * immediate} and restarted 12 s later. At the door the fleet must neither exceed the ceiling
 * (through the outage and both hand-overs) nor stop: at the coordinated full rate before the crash,
 * each process at 10/4 = 2.5/s once it paces locally, and back at the full rate from 1 s after the
 * hand-over ends (the second boundary after the server's return). The outage must cost each process
 * at most the attempt that noticed it and one per 5-s retry boundary.
 *
 * <p>Its twin runs beside it through the same crash, on a destination of its own: three members
 * with {@code maxFetchingProcesses} 1 on the key/value layout, which keeps no census of the
 * processes taking turns, so nothing divides their ceiling while the database is away. Each paces
 * at the full rate, and the fleet's degraded phase must break the bounds the fleet above holds.
 */
class OutageTest {

  private static final double RATE = 10;
  private static final int PROCESSES = 3;
  private static final int THREADS = 6;

  /** As the CLI derives it: the most processes that can fetch at once, plus one. */
  private static final int MAX_FETCHING_PROCESSES = PROCESSES + 1;

  private static final int RUN_SECONDS = 41;

  /** Long enough for a few seconds of local pacing after the crash, 6 s after GO. */
  private static final int TWIN_SECONDS = 10;

  private static final String TWIN_TABLE = "outage_twin_cache";

  /** Time the crash may take to refuse the last reservation after {@code down} is read. */
  private static final long CRASH_NANOS = 200_000_000L;

  private static final long SECOND = 1_000_000_000L;

  @Test
  void theFleetHoldsTheCeilingThroughACrashAndRestart() throws Exception {
    WallClockSteps.get();
    try (RestartablePostgres postgres = new RestartablePostgres();
        TcpProxy proxy = new TcpProxy(postgres.port());
        Door door = Door.start()) {
      postgres.execute(TestDatabase.djangoCacheTableDdl(TWIN_TABLE));
      String url = "jdbc:postgresql://127.0.0.1:" + proxy.port() + "/postgres?user=postgres";
      OutageFleet.Plan plan =
          new OutageFleet.Plan(
              url,
              "pacer",
              "outage",
              RATE,
              MAX_FETCHING_PROCESSES,
              PROCESSES,
              1,
              THREADS,
              RUN_SECONDS);
      // Straight to the server, not through the proxy, whose connections the main fleet's count.
      OutageFleet.Plan twinPlan =
          new OutageFleet.Plan(
              postgres.jdbcUrl(),
              "key-value:" + TWIN_TABLE,
              "outage-twin",
              RATE,
              1,
              1,
              PROCESSES,
              1,
              TWIN_SECONDS);
      try (OutageFleet fleet = OutageFleet.start(plan, door.url("/fleet"), "worker");
          OutageFleet twin = OutageFleet.start(twinPlan, door.url("/twin"), "twin")) {
        fleet.go();
        twin.go();

        Thread.sleep(6_000);
        long attemptsBefore = proxy.connectionsAccepted();
        long down = System.nanoTime();
        long downEpoch = epochNanos();
        postgres.stopImmediately();
        Thread.sleep(12_000);
        long attemptsDuringOutage = proxy.connectionsAccepted() - attemptsBefore;
        long attemptsWindow = epochNanos() - downEpoch;
        postgres.start();
        long up = System.nanoTime();
        long upEpoch = epochNanos();

        TurnsTaken turns = fleet.finish();
        TurnsTaken twinTurns = twin.finish();
        List<Arrival> arrivals = door.arrivals();
        Timeline whole = RunArrivals.on(arrivals, "/fleet");
        long localFrom =
            down
                + CRASH_NANOS
                + (long) (plan.secondsToLocalPacing(MAX_FETCHING_PROCESSES) * SECOND);
        List<Timeline> local = new ArrayList<>();
        RunArrivals.byMember(arrivals, "/fleet")
            .values()
            .forEach(m -> local.add(m.between(localFrom, up)));
        long handOverEnds = up + (RetryGrid.handOverEnds(upEpoch) - upEpoch);
        Timeline before = RunArrivals.steady(whole.between(whole.first(), down));
        Timeline recovered = whole.between(handOverEnds + SECOND, whole.last() + 1);
        System.out.printf(
            "outage test: %.1f s outage, %d connection attempts during it; the"
                + " fleet's %s; %s before it, %s paced locally by each process, %s from 1 s after"
                + " the hand-over; %s%n",
            (up - down) / 1e9, attemptsDuringOutage, whole, before, local, recovered, turns);
        fleet
            .logLines(line -> line.contains("WARN") || line.contains("INFO"))
            .forEach(line -> System.out.println("outage test: " + line));

        assertThat(whole.size()).as("requests at the door").isEqualTo(turns.sent());
        FleetBounds bounds = FleetBounds.at(RATE, "outage test, the fleet", door);
        bounds.assertHeld(whole, before);
        bounds.assertDelivered(before);
        FleetBounds paced =
            FleetBounds.at(
                    RATE / MAX_FETCHING_PROCESSES, "outage test, one process pacing locally", door)
                .turnsCheckedAt(RATE);
        assertThat(local).as("processes at the door").hasSize(PROCESSES);
        local.forEach(paced::assertHeld);
        paced.assertDeliveredByMembers(local);
        bounds.assertHeld(recovered);
        bounds.assertDelivered(recovered);
        bounds.assertFewLateTurns(turns.late(), turns.sent());
        assertThat(attemptsDuringOutage)
            .as("connection attempts during a %.1f s outage", attemptsWindow / 1e9)
            .isLessThanOrEqualTo(
                PROCESSES
                    * (RetryGrid.boundariesBetween(downEpoch, downEpoch + attemptsWindow) + 1));

        long twinLocalFrom =
            down + CRASH_NANOS + (long) (twinPlan.secondsToLocalPacing(1) * SECOND);
        Timeline twinWhole = RunArrivals.on(arrivals, "/twin");
        assertThat(twinWhole.size())
            .as("the twin's requests at the door")
            .isEqualTo(twinTurns.sent());
        FleetBounds twinBounds =
            FleetBounds.at(RATE, "outage test, twin without the divisor", door);
        twinBounds.assertWindowBroke(twinWhole.between(twinLocalFrom, twinWhole.last() + 1));
        FleetBounds twinPaced =
            FleetBounds.at(
                    RATE / MAX_FETCHING_PROCESSES,
                    "outage test, twin member without the divisor",
                    door)
                .turnsCheckedAt(RATE);
        RunArrivals.byMember(arrivals, "/twin")
            .values()
            .forEach(m -> twinPaced.assertAggregateBroke(m.between(twinLocalFrom, m.last() + 1)));
      }
    }
  }

  private static long epochNanos() {
    Instant now = Instant.now();
    return now.getEpochSecond() * SECOND + now.getNano();
  }
}
