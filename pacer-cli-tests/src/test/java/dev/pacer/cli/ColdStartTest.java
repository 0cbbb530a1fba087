package dev.pacer.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.postgres.TestDatabase;
import dev.pacer.testing.FleetBounds;
import dev.pacer.testing.Timeline;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Three cold worker JVMs started together keep the ceiling at the destination's door from the very
 * first request. A cold JVM's first HTTP request is slow (class loading, the client's selector
 * thread): if that happened after the first turn, the first few turns would wait in it together and
 * then leave together, a burst in the first second. Each run is also held to the aggregate over its
 * steady part, a delivered bound ({@link FleetBounds}, {@link DeliverableRate}) and the late turns
 * its workers gave up, which a busy host makes, and three cold JVMs on a small one do; the same
 * cold start paced per process (the twin) breaks the window and the aggregate. The run is a JVM of
 * its own, as an operator's is, so that its workers' logs can be read.
 */
class ColdStartTest {

  private static final int RUNS = 3;
  private static final double RATE = 7;

  /** 28 items at 7/s: 4 s, so all three workers are fetching at once in the first second. */
  private static final int ITEMS = 28;

  private static final int PROCESSES = 3;

  @TempDir Path dir;

  @Test
  void threeColdWorkersKeepTheFirstSecondWithinTheCeilingPlusOne() throws Exception {
    List<String> figures = new ArrayList<>();
    for (int run = 1; run <= RUNS; run++) {
      try (TestDestination destination = new TestDestination()) {
        String job = "cold-start-" + ProcessHandle.current().pid() + "-" + run;
        Cli.Result result = coldStart(destination, job, "FLEET");
        List<TestDestination.Arrival> arrivals = destination.arrivals();
        Timeline door = TestDestination.timeline(arrivals);
        long firstSecond =
            arrivals.stream().filter(a -> a.nanos() - door.first() < 1_000_000_000L).count();
        figures.add(
            "run "
                + run
                + ": first second "
                + firstSecond
                + ", "
                + door
                + ", "
                + gridDeviation(arrivals)
                + ", workers "
                + arrivals.stream().map(TestDestination.Arrival::worker).distinct().count()
                + ", "
                + result.lateTurns()
                + ", summary "
                + result.summary());
        assertThat(door.size()).as(figures.toString()).isEqualTo(ITEMS);
        assertThat(firstSecond).as(figures.toString()).isLessThanOrEqualTo((long) RATE + 1);
        FleetBounds bounds = FleetBounds.at(RATE, "cold start, run " + run);
        bounds.assertHeld(door, steady(arrivals));
        // Before the delivered bound: turns given up as late are a reason to deliver less.
        result.lateTurns().assertFew(bounds, PROCESSES, door);
        bounds.assertDelivered(
            door,
            DeliverableRate.of(
                RATE, arrivals, TestDestination.Arrival::nanos, TestDestination.Arrival::worker));
        // The run judges itself from the request log: it must agree with the door.
        assertThat(result.number("requestsAtDestination")).isEqualTo(ITEMS);
        long peak = door.peakOneSecondWindow();
        assertThat(result.number("busiestOneSecondWindow"))
            .as(figures.toString())
            .isBetween(peak - 1, peak + 1);
      }
    }
    System.out.println("ColdStartTest: " + String.join("; ", figures));
  }

  /**
   * The same cold start with each worker pacing alone at the ceiling: the bounds that {@link
   * #threeColdWorkersKeepTheFirstSecondWithinTheCeilingPlusOne} holds the fleet to break.
   */
  @Test
  void threeColdWorkersPacedPerProcessBreakTheBounds() throws Exception {
    try (TestDestination destination = new TestDestination()) {
      String job = "cold-start-per-process-" + ProcessHandle.current().pid();
      coldStart(destination, job, "PER_PROCESS");
      List<TestDestination.Arrival> arrivals = destination.arrivals();
      assertThat(arrivals).hasSize(ITEMS);
      FleetBounds bounds = FleetBounds.at(RATE, "cold start paced per process");
      bounds.assertWindowBroke(TestDestination.timeline(arrivals));
      bounds.assertAggregateBroke(steady(arrivals));
    }
  }

  /** {@value #ITEMS} items fetched by three cold worker JVMs x 6 threads at the ceiling. */
  private Cli.Result coldStart(TestDestination destination, String job, String pacing)
      throws Exception {
    Path input = Files.write(dir.resolve(job + ".txt"), destination.items(ITEMS));
    Cli.Result result =
        Cli.runAlone(
            dir,
            job,
            "fetch",
            input.toString(),
            "--job",
            job,
            "--destination",
            job,
            "--db",
            TestDatabase.jdbcUrl(),
            "--out",
            dir.resolve("out").toString(),
            "--max-load",
            "1000",
            "--processes",
            Integer.toString(PROCESSES),
            "--threads",
            "6",
            "--concurrency",
            "6",
            "--rate",
            Double.toString(RATE),
            "--pacing",
            pacing,
            // Each worker claims its items one at a time, as it comes up: leasing ahead, the first
            // worker up would take most of a job this small, and the three cold workers this test
            // is about would not all be fetching.
            "--outage-buffer",
            "0");
    assertThat(result.code()).as(result.err()).isEqualTo(0);
    assertThat(result.number("done")).isEqualTo(ITEMS);
    return result;
  }

  /** The steady part: the arrivals after the first second, which holds the cold first requests. */
  private static Timeline steady(List<TestDestination.Arrival> arrivals) {
    return TestDestination.timeline(arrivals).after(1);
  }

  /**
   * With every thread waiting, the shared cursor hands out turns exactly one interval apart, so the
   * k-th arrival would be k intervals after the first if nothing delayed a request after its turn.
   * How far arrivals stray from that grid is their lateness at the door, relative to the first; a
   * spread over one interval is what puts an extra request in a 1-s window.
   */
  private static String gridDeviation(List<TestDestination.Arrival> arrivals) {
    List<Long> sorted = arrivals.stream().map(TestDestination.Arrival::nanos).sorted().toList();
    double min = 0;
    double max = 0;
    for (int k = 0; k < sorted.size(); k++) {
      double deviation = (sorted.get(k) - sorted.get(0)) / 1e6 - k * 1000 / RATE;
      min = Math.min(min, deviation);
      max = Math.max(max, deviation);
    }
    return String.format(
        java.util.Locale.ROOT, "door deviation from the turn grid %.1f..%.1f ms", min, max);
  }
}
