package dev.pacer.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.testing.Arrival;
import dev.pacer.testing.Door;
import dev.pacer.testing.FleetBounds;
import dev.pacer.testing.Timeline;
import dev.pacer.testing.WallClockSteps;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * More processes fetch than {@code maxFetchingProcesses} says, and PostgreSQL goes away: four
 * worker JVMs of two threads each, configured for 2, a 7/s ceiling, each turn a request to the
 * door, the server stopped with {@code pg_ctl stop -m immediate} once every worker has been counted
 * by the census and left down to the end of the run. Each process divides by the 4 it saw taking
 * turns and paces at 7/4 = 1.75/s, so the fleet at the door stays at the ceiling through the
 * outage.
 *
 * <p>Its twin runs beside it through the same crash: four members configured for 2 on the key/value
 * layout, which keeps no census, so each divides by the configured 2 alone and paces at 3.5/s: the
 * fleet at twice the ceiling, which must break the bounds the fleet above holds.
 *
 * <p>Why 7/s: processes pacing alone keep no common phase, so in a sliding 1-s window each can show
 * one turn more than its rate. At 7/s each of the four paces every 571 ms, two turns in any window,
 * eight in all: the ceiling + 1 whatever their phases, with 71 ms to spare for a late stamp. (At
 * 10/s each would pace every 400 ms, and four phases can line up three turns each.)
 */
class LargerFleetOutageTest {

  private static final double RATE = 7;
  private static final int PROCESSES = 4;
  private static final int THREADS = 2;
  private static final int MAX_FETCHING_PROCESSES = 2;

  /** Two census periods and a little: every worker has counted all four. */
  private static final long COUNTED_AFTER_MILLIS = 2 * FetcherCensus.PERIOD.toMillis() + 1000;

  private static final int RUN_SECONDS = 13;

  /** Long enough for a few seconds of local pacing after the crash. */
  private static final int TWIN_SECONDS = 9;

  private static final String TWIN_TABLE = "larger_twin_cache";

  /** Time the crash may take to refuse the last reservation after {@code down} is read. */
  private static final long CRASH_NANOS = 200_000_000L;

  private static final long SECOND = 1_000_000_000L;

  @Test
  void aFleetLargerThanConfiguredHoldsTheCeilingThroughAnOutage() throws Exception {
    WallClockSteps.get();
    String destination = "larger-" + UUID.randomUUID().toString().substring(0, 8);
    try (RestartablePostgres postgres = new RestartablePostgres();
        Door door = Door.start()) {
      postgres.execute(TestDatabase.djangoCacheTableDdl(TWIN_TABLE));
      OutageFleet.Plan plan =
          new OutageFleet.Plan(
              postgres.jdbcUrl(),
              "pacer",
              destination,
              RATE,
              MAX_FETCHING_PROCESSES,
              PROCESSES,
              1,
              THREADS,
              RUN_SECONDS);
      OutageFleet.Plan twinPlan =
          new OutageFleet.Plan(
              postgres.jdbcUrl(),
              "key-value:" + TWIN_TABLE,
              destination + "-twin",
              RATE,
              MAX_FETCHING_PROCESSES,
              1,
              PROCESSES,
              1,
              TWIN_SECONDS);
      try (OutageFleet fleet = OutageFleet.start(plan, door.url("/fleet"), "worker");
          OutageFleet twin = OutageFleet.start(twinPlan, door.url("/twin"), "twin")) {
        fleet.go();
        twin.go();
        Thread.sleep(COUNTED_AFTER_MILLIS);
        long down = System.nanoTime();
        postgres.stopImmediately();
        TurnsTaken turns = fleet.finish();
        TurnsTaken twinTurns = twin.finish();

        List<Arrival> arrivals = door.arrivals();
        Timeline whole = RunArrivals.on(arrivals, "/fleet");
        Timeline before = RunArrivals.steady(whole.between(whole.first(), down));
        long localFrom =
            down + CRASH_NANOS + (long) (plan.secondsToLocalPacing(PROCESSES) * SECOND);
        List<Timeline> local = new ArrayList<>();
        RunArrivals.byMember(arrivals, "/fleet")
            .values()
            .forEach(m -> local.add(m.between(localFrom, m.last() + 1)));
        System.out.printf(
            "larger fleet: %d processes, maxFetchingProcesses %d, at the door %s;"
                + " %s before the outage, %s paced locally by each process; %s%n",
            PROCESSES, MAX_FETCHING_PROCESSES, whole, before, local, turns);
        fleet
            .logLines(line -> line.contains("pacing locally"))
            .forEach(line -> System.out.println("larger fleet: " + line));

        assertThat(whole.size()).as("requests at the door").isEqualTo(turns.sent());
        FleetBounds bounds = FleetBounds.at(RATE, "larger fleet, the fleet", door);
        bounds.assertHeld(whole, before);
        bounds.assertDelivered(before);
        // Divided by 4, each process paces at a quarter of the ceiling; one that stalled, or
        // divided by far more, would fall short.
        FleetBounds paced =
            FleetBounds.at(RATE / PROCESSES, "larger fleet, one process pacing locally", door)
                .turnsCheckedAt(RATE);
        assertThat(local).as("processes at the door").hasSize(PROCESSES);
        local.forEach(paced::assertHeld);
        paced.assertDeliveredByMembers(local);
        bounds.assertFewLateTurns(turns.late(), turns.sent());

        long twinLocalFrom =
            down
                + CRASH_NANOS
                + (long) (twinPlan.secondsToLocalPacing(MAX_FETCHING_PROCESSES) * SECOND);
        Timeline twinWhole = RunArrivals.on(arrivals, "/twin");
        assertThat(twinWhole.size())
            .as("the twin's requests at the door")
            .isEqualTo(twinTurns.sent());
        FleetBounds twinBounds =
            FleetBounds.at(RATE, "larger fleet, twin without the census", door);
        twinBounds.assertWindowBroke(twinWhole.between(twinLocalFrom, twinWhole.last() + 1));
        FleetBounds twinPaced =
            FleetBounds.at(RATE / PROCESSES, "larger fleet, twin member without the census", door)
                .turnsCheckedAt(RATE);
        RunArrivals.byMember(arrivals, "/twin")
            .values()
            .forEach(m -> twinPaced.assertAggregateBroke(m.between(twinLocalFrom, m.last() + 1)));
      }
    }
  }
}
