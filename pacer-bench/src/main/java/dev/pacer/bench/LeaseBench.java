package dev.pacer.bench;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.function.LongSupplier;

/**
 * One key at a ceiling beyond what one row carries a statement per turn: {@value #PROCESSES} worker
 * JVMs × {@value #THREADS} threads, each acquiring without pause from one destination at {@value
 * #CEILING}/s on the shared PostgreSQL cursor, once with leases of turns ({@code maxLeasedTurns}
 * {@value #MAX_LEASED}, a horizon of {@value #HORIZON_MICROS} µs) and once without. For each:
 * delivered against the ceiling, the busiest 10-ms window against its share + 1, the cursor's
 * reservation statements per permit, the PostgreSQL server's CPU time per permit (on an embedded
 * server, read from Linux's scheduler figures as {@link ServerCpu} reads them), and the turns given
 * up: leased and unused, and woken for too late. Each configuration runs once unmeasured first, so
 * that the measured run finds the workers' code compiled. The full run measures it beside the other
 * throughput figures ({@code leases_*} in the results, P4 of the targets); {@code --only leases}
 * runs it alone.
 *
 * <p>It also measures P2's hot key with combining and leases ({@link #hotKeyPerSecond}): the same
 * workers at a ceiling that does not bind, so that what is counted is what one key hands out.
 */
final class LeaseBench {

  static final int PROCESSES = 4;
  static final int THREADS = 16;
  static final double CEILING = 100_000;
  static final int MAX_LEASED = 64;
  static final long HORIZON_MICROS = 2_000;
  private static final long WINDOW_MICROS = 10_000;
  private static final long MEASURE_MILLIS = 5_000;

  /**
   * The hot key's ceiling for P2: the largest a destination takes, so that it never binds and what
   * is measured is what one key hands out.
   */
  static final double HOT_KEY_CEILING = 1_000_000;

  private LeaseBench() {}

  /**
   * P2: permits a second on one key from {@code processes} worker JVMs × {@value #THREADS} threads,
   * each acquiring without pause, as a process that wants throughput is configured: its threads'
   * asks combined into one statement ({@code maxConcurrency} {@value #THREADS}) and leases of up to
   * {@value #MAX_LEASED} turns, at a ceiling of {@value #HOT_KEY_CEILING}/s that does not bind.
   * Permits counted over the window, as {@code throughput} counts calls.
   */
  static double hotKeyPerSecond(WorkerPool pool, int processes, long millis) {
    String destination = "bench-hot-leased-" + System.nanoTime();
    List<String> prepare = new ArrayList<>();
    for (int p = 0; p < processes; p++) {
      prepare.add(accuracyCommand(destination, HOT_KEY_CEILING, MAX_LEASED));
    }
    long permits = 0;
    for (String reply : pool.run(processes, prepare, millis)) {
      permits += Long.parseLong(reply.trim().split(" ")[0]);
    }
    return permits / (millis / 1000.0);
  }

  private static String accuracyCommand(String destination, double ceiling, int leased) {
    return String.join(
        " ",
        "accuracy pacer false",
        destination,
        String.valueOf(THREADS),
        String.valueOf(ceiling),
        String.valueOf(leased),
        String.valueOf(HORIZON_MICROS));
  }

  /**
   * What one configuration delivered.
   *
   * @param statements the cursor's reservation statements over the window, every process
   * @param unused leased turns given up unused, every process
   * @param late turns given up as woken too late, every process
   * @param serverNanos the PostgreSQL server's CPU time over the window (every process of it), or
   *     -1 where it cannot be read
   */
  record Point(
      String label, Accuracy accuracy, long statements, long unused, long late, long serverNanos) {

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

    /** The server's CPU time per permit, µs, or NaN where it was not read. */
    double serverMicrosPerPermit() {
      return serverNanos < 0 ? Double.NaN : serverNanos / 1e3 / accuracy.count();
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
  static Result measure(Database.Target target, long measureMillis, LongSupplier serverCpu)
      throws Exception {
    long warmMillis = measureMillis * 2 / 5;
    try (WorkerPool pool = new WorkerPool(PROCESSES, target)) {
      List<Point> points = new ArrayList<>();
      for (int leased : new int[] {MAX_LEASED, 1}) {
        measure(pool, leased, warmMillis, serverCpu);
        points.add(measure(pool, leased, measureMillis, serverCpu));
      }
      return new Result(points.get(0), points.get(1));
    }
  }

  static void log(Result result, PrintStream log) {
    for (Point p : List.of(result.leased(), result.unleased())) {
      log.printf(
          Locale.ROOT,
          "%s: %,d permits in %.2f s, delivered %.3f x the ceiling (%,.0f/s); busiest 10-ms"
              + " window %d against its share + 1, %.0f; %,d statements, %.4f a permit;"
              + " server CPU %.2f µs a permit; %,d leased turns unused, %,d late%n",
          p.label(),
          p.accuracy().count(),
          p.accuracy().spanSeconds(),
          p.accuracy().deliveredRatio(),
          p.accuracy().deliveredRatio() * CEILING,
          p.busiestWindow(),
          Result.windowBound(),
          p.statements(),
          p.statementsPerPermit(),
          p.serverMicrosPerPermit(),
          p.unused(),
          p.late());
    }
  }

  static void run(BenchOptions options, PrintStream log) throws Exception {
    double[] load = Machine.loadAverage();
    log.printf(Locale.ROOT, "load average at start: %.2f %.2f %.2f%n", load[0], load[1], load[2]);
    try (Database db =
        options.dbUrl() == null ? Database.embedded() : Database.external(options.dbUrl())) {
      db.createTables();
      LongSupplier serverCpu = db.isEmbedded() ? ServerCpu.serverMeter(db.target()) : null;
      log(measure(db.target(), MEASURE_MILLIS, serverCpu), log);
    }
    load = Machine.loadAverage();
    log.printf(Locale.ROOT, "load average at end: %.2f %.2f %.2f%n", load[0], load[1], load[2]);
  }

  private static Point measure(WorkerPool pool, int leased, long millis, LongSupplier serverCpu) {
    String destination = "bench-leases-" + leased + "-" + System.nanoTime();
    List<String> prepare = new ArrayList<>();
    for (int p = 0; p < PROCESSES; p++) {
      prepare.add(accuracyCommand(destination, CEILING, leased));
    }
    WorkerPool.Metered run =
        pool.run(PROCESSES, prepare, millis, serverCpu == null ? () -> -1 : serverCpu);
    List<Long> times = new ArrayList<>();
    long[] counts = new long[3];
    for (String reply : run.replies()) {
      String[] parts = reply.trim().split(" ");
      if (parts.length > 4) {
        for (String t : parts[1].split(",")) {
          times.add(Long.parseLong(t));
        }
        for (int i = 0; i < counts.length; i++) {
          counts[i] += Long.parseLong(parts[2 + i]);
        }
      }
    }
    long[] micros = times.stream().mapToLong(Long::longValue).toArray();
    return new Point(
        leased > 1 ? "leases of up to " + leased + " turns" : "without leases",
        Accuracy.of(PROCESSES, THREADS, CEILING, micros),
        counts[0],
        counts[1],
        counts[2],
        serverCpu == null ? -1 : run.atEnd() - run.atStart());
  }
}
