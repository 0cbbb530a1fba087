package dev.pacer.bench.model;

import java.io.PrintStream;
import java.util.List;
import java.util.Locale;

/**
 * The simulation's answers in {@code docs/scaling.md}: the bench machine beside what was measured
 * on it, then fleets nobody measured, on a server of {@link #SERVER_CORES} cores that serves
 * clients on machines of their own, {@link #ROUND_TRIP_MICROS} away.
 *
 * <p>The server's figures are the bench machine's ({@link BenchMachine}): its CPU per reservation
 * measured, its hand-over and locked share fitted there. A per-host claim's CPU ({@link
 * #CLAIM_MICROS}) is measured the same way ({@code ServerCpu}, 10,000 hosts). The round trip and
 * the cores are assumptions of a fleet in one data centre, not measurements.
 */
public final class ScalingModel {

  /** The server's cores in the projections (an assumption). */
  static final int SERVER_CORES = 16;

  /** The network's round trip between a client and the server (an assumption), µs. */
  static final double ROUND_TRIP_MICROS = 200;

  /** A client's CPU per statement on a machine of its own (the bench's workers at 2 processes). */
  static final double CLIENT_MICROS = 11;

  /** The server's CPU per per-host claim at 10,000 hosts, µs: the middle of {@code ServerCpu}'s. */
  static final double CLAIM_MICROS = 520;

  /** The most turns a lease takes, as the lease rule bounds it. */
  static final int LEASE_BOUND = 64;

  /** One question: a fleet, its demand and its lease. */
  record Scenario(String name, RowSimulation.Inputs inputs) {}

  private ScalingModel() {}

  /** A server as above; {@code processes × callers}, each caller's request {@code thinkMicros}. */
  static RowSimulation.Inputs fleet(int processes, int callers, double thinkMicros) {
    return new RowSimulation.Inputs(
        processes,
        callers,
        1,
        SERVER_CORES,
        false,
        CLIENT_MICROS,
        BenchMachine.SERVER_MICROS,
        BenchMachine.LOCKED_SHARE,
        BenchMachine.RECHECK_MICROS,
        BenchMachine.IDLE_WAKE_MICROS,
        BenchMachine.SWITCH_MICROS,
        ROUND_TRIP_MICROS,
        1,
        thinkMicros,
        0);
  }

  /**
   * The lease rule's k for a process asking {@code perProcessRate} turns a second: about one round
   * trip's worth of its own demand, at least 1, at most {@link #LEASE_BOUND}.
   */
  static int leaseTurns(double perProcessRate, double roundTripMicros) {
    long k = Math.round(perProcessRate * roundTripMicros / 1e6);
    return (int) Math.max(1, Math.min(LEASE_BOUND, k));
  }

  /** The questions of {@code docs/scaling.md}, in its order. */
  static List<Scenario> scenarios() {
    double gap20k = 1e6 / 20_000;
    double gap40k = 1e6 / 40_000;
    double gap10k = 1e6 / 10_000;
    RowSimulation.Inputs thousand = fleet(1_000, 4, 50_000);
    int rule10k = leaseTurns(10_000 / 1_000.0, ROUND_TRIP_MICROS);
    RowSimulation.Inputs four = fleet(4, 16, 0).withGap(1e6 / 100_000);
    int rule100k = leaseTurns(100_000 / 4.0, ROUND_TRIP_MICROS);
    return List.of(
        new Scenario("1,000 processes always asking, no ceiling", fleet(1_000, 1, 0)),
        new Scenario(
            "1,000 × 4 callers, 50-ms requests, ceiling 10,000/s", thousand.withGap(gap10k)),
        new Scenario(
            "the same, lease rule (k = " + rule10k + ")",
            thousand.withGap(gap10k).withLease(rule10k)),
        new Scenario("the same, lease of k = 8", thousand.withGap(gap10k).withLease(8)),
        new Scenario("1,000 × 4 callers, ceiling 20,000/s", thousand.withGap(gap20k)),
        new Scenario("1,000 × 4 callers, ceiling 40,000/s", thousand.withGap(gap40k)),
        new Scenario("the same, 4 rows of 10,000/s each", thousand.withRows(4).withGap(4 * gap40k)),
        new Scenario("4 × 16 callers always asking, ceiling 100,000/s", four),
        new Scenario("the same, lease rule (k = " + rule100k + ")", four.withLease(rule100k)),
        new Scenario("the same, lease of k = 64", four.withLease(64)),
        new Scenario(
            "frontier: 1,000 × 8 threads, 10,000 hosts, 10,000 claims/s",
            claims(1_000 * 8, 10_000, 10_000)),
        new Scenario(
            "frontier: the same, 5,000 claims/s (0.5/s a host)", claims(1_000 * 8, 10_000, 5_000)));
  }

  /**
   * Per-host claims: a statement a claim, each fetch thread on a connection of its own (a per-host
   * worker's store connections), over {@code hosts} rows, about {@code rate} claims a second.
   */
  static RowSimulation.Inputs claims(int threads, int hosts, double rate) {
    double think = threads / rate * 1e6;
    return fleet(threads, 1, think)
        .withRows(hosts)
        .withServer(CLAIM_MICROS, BenchMachine.LOCKED_SHARE, BenchMachine.RECHECK_MICROS);
  }

  /** Prints the bench machine's check and every scenario's answer, as Markdown tables. */
  public static void print(PrintStream out) {
    out.println("| what | processes | rows | measured/s | simulated/s | simulated ÷ measured |");
    out.println("|---|---|---|---|---|---|");
    for (BenchMachine.Point p : BenchMachine.compare(in -> in)) {
      out.printf(
          Locale.ROOT,
          "| %s | %d | %d | %,.0f | %,.0f | %.2f |%n",
          p.what(),
          p.processes(),
          p.rows(),
          p.measured(),
          p.simulated(),
          p.simulated() / p.measured());
    }
    out.println();
    out.println(
        "| fleet | permits/s | statements/s | statements per permit | server CPU | busiest row"
            + " | ask to turn, mean | lease turns given up/s | statements in the server |");
    out.println("|---|---|---|---|---|---|---|---|---|");
    for (Scenario s : scenarios()) {
      double warmup = 300_000 + 2 * s.inputs().thinkMicros();
      RowSimulation.Result r = RowSimulation.run(s.inputs(), warmup, 3_000_000);
      out.printf(
          Locale.ROOT,
          "| %s | %,.0f | %,.0f | %.3f | %.0f%% | %.0f%% | %s | %,.0f | %.1f |%n",
          s.name(),
          r.permitsPerSecond(),
          r.statementsPerSecond(),
          r.statementsPerPermit(),
          100 * r.serverCpuShare(),
          100 * r.busiestRowShare(),
          micros(r.meanWaitMicros()),
          r.givenUpPerSecond(),
          r.meanInServer());
    }
  }

  private static String micros(double micros) {
    return micros >= 1_000
        ? String.format(Locale.ROOT, "%.1f ms", micros / 1e3)
        : String.format(Locale.ROOT, "%.0f µs", micros);
  }

  /** Standalone: prints the tables. */
  public static void main(String[] args) {
    print(System.out);
  }
}
