package dev.pacer.bench;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * One key at a ceiling beyond what one row carries a statement per turn: {@value #PROCESSES} worker
 * JVMs × {@value #THREADS} threads, each acquiring without pause from one destination at {@value
 * #CEILING}/s on the shared PostgreSQL cursor, once with leases of turns ({@code maxLeasedTurns}
 * {@value #MAX_LEASED}, a horizon of {@value #HORIZON_MICROS} µs) and once without. For each:
 * delivered against the ceiling, the busiest 10-ms window against its share + 1, and the cursor's
 * reservation statements per permit. Each configuration runs once unmeasured first, so that the
 * measured run finds the workers' code compiled. The full run measures it beside the other
 * throughput figures ({@code leases_*} in the results, P4 of the targets); {@code --only leases}
 * runs it alone.
 */
final class LeaseBench {

  static final int PROCESSES = 4;
  static final int THREADS = 16;
  static final double CEILING = 100_000;
  static final int MAX_LEASED = 64;
  static final long HORIZON_MICROS = 2_000;
  private static final long WINDOW_MICROS = 10_000;
  private static final long MEASURE_MILLIS = 5_000;

  private LeaseBench() {}

  /** What one configuration delivered. */
  record Point(String label, Accuracy accuracy, long statements) {

    /** The most acquisitions in any window {@code [t, t + 10 ms)}. */
    int busiestWindow() {
      long[] t = accuracy.sortedMicros();
      int most = 0;
      for (int first = 0, last = 0; last < t.length; last++) {
        while (t[last] - t[first] >= WINDOW_MICROS) {
          first++;
        }
        most = Math.max(most, last - first + 1);
      }
      return most;
    }

    double statementsPerPermit() {
      return (double) statements / accuracy.count();
    }
  }

  /** Both configurations, with leases first, on {@code target}: each warmed, then measured. */
  record Result(Point leased, Point unleased) {

    /** The busiest 10-ms window's bound: the ceiling's share of it, + 1. */
    static double windowBound() {
      return CEILING * WINDOW_MICROS / 1e6 + 1;
    }
  }

  /** Measures both configurations, each {@code measureMillis} after a warm-up of 2/5 of that. */
  static Result measure(Database.Target target, long measureMillis) throws Exception {
    long warmMillis = measureMillis * 2 / 5;
    try (WorkerPool pool = new WorkerPool(PROCESSES, target)) {
      List<Point> points = new ArrayList<>();
      for (int leased : new int[] {MAX_LEASED, 1}) {
        measure(pool, leased, warmMillis);
        points.add(measure(pool, leased, measureMillis));
      }
      return new Result(points.get(0), points.get(1));
    }
  }

  static void log(Result result, PrintStream log) {
    for (Point p : List.of(result.leased(), result.unleased())) {
      log.printf(
          Locale.ROOT,
          "%s: %,d permits in %.2f s, delivered %.3f x the ceiling (%,.0f/s); busiest 10-ms"
              + " window %d against its share + 1, %.0f; %,d statements, %.4f a permit%n",
          p.label(),
          p.accuracy().count(),
          p.accuracy().spanSeconds(),
          p.accuracy().deliveredRatio(),
          p.accuracy().deliveredRatio() * CEILING,
          p.busiestWindow(),
          Result.windowBound(),
          p.statements(),
          p.statementsPerPermit());
    }
  }

  static void run(BenchOptions options, PrintStream log) throws Exception {
    double[] load = Machine.loadAverage();
    log.printf(Locale.ROOT, "load average at start: %.2f %.2f %.2f%n", load[0], load[1], load[2]);
    try (Database db =
        options.dbUrl() == null ? Database.embedded() : Database.external(options.dbUrl())) {
      db.createTables();
      log(measure(db.target(), MEASURE_MILLIS), log);
    }
    load = Machine.loadAverage();
    log.printf(Locale.ROOT, "load average at end: %.2f %.2f %.2f%n", load[0], load[1], load[2]);
  }

  private static Point measure(WorkerPool pool, int leased, long millis) {
    String destination = "bench-leases-" + leased + "-" + System.nanoTime();
    List<String> prepare = new ArrayList<>();
    for (int p = 0; p < PROCESSES; p++) {
      prepare.add(
          String.join(
              " ",
              "accuracy pacer false",
              destination,
              String.valueOf(THREADS),
              String.valueOf(CEILING),
              String.valueOf(leased),
              String.valueOf(HORIZON_MICROS)));
    }
    List<Long> times = new ArrayList<>();
    long statements = 0;
    for (String reply : pool.run(PROCESSES, prepare, millis)) {
      String[] parts = reply.trim().split(" ");
      if (parts.length > 2) {
        for (String t : parts[1].split(",")) {
          times.add(Long.parseLong(t));
        }
        statements += Long.parseLong(parts[2]);
      }
    }
    long[] micros = times.stream().mapToLong(Long::longValue).toArray();
    return new Point(
        leased > 1 ? "leases of up to " + leased + " turns" : "without leases",
        Accuracy.of(PROCESSES, THREADS, CEILING, micros),
        statements);
  }
}
