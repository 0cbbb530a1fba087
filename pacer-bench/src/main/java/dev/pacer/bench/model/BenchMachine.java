package dev.pacer.bench.model;

import java.util.ArrayList;
import java.util.List;
import java.util.function.UnaryOperator;

/**
 * {@link RowSimulation}'s inputs for the machine {@code ./bench} ran on (2 cores shared by the
 * server and its clients, loopback), and the throughput {@code ./bench} measured there, so that the
 * simulation can be held to what was measured before it is asked about machines nobody measured.
 *
 * <p>Where each input comes from ({@code docs/scaling.md} gives the runs):
 *
 * <ul>
 *   <li>{@link #SERVER_MICROS}: measured, {@code ServerCpu} (the server's processes' CPU time over
 *       a fixed number of reservations), pinned to one core, where client and server share the core
 *       and hand work to each other without waking another: the middle of its figures for a key per
 *       connection at 2 to 8 connections;
 *   <li>the client's CPU time per statement at each process count: {@code ./bench}'s own {@code
 *       client_cpu_us_per_call} (the worker JVMs' CPU time ÷ their calls) in {@code
 *       docs/bench-results.json}; pgbench's, assumed ({@link #PGBENCH_CLIENT_MICROS});
 *   <li>{@link #IDLE_WAKE_MICROS}: from the same run's latency, one connection alone on the
 *       machine: reservation p50 = client + server + hand-over + two wake-ups;
 *   <li>{@link #SWITCH_MICROS}, {@link #LOCKED_SHARE} and {@link #RECHECK_MICROS}: fitted, the
 *       three together, to the eight throughput points and to pgbench of the same statement on one
 *       key at 2, 4 and 8 clients (a grid of 2.5 µs, 0.1 and 5 µs steps, the least worst error).
 *       The hand-over is what two cores cost that one does not: the one-core measurement has none.
 * </ul>
 */
public final class BenchMachine {

  /** The bench machine's cores. */
  public static final int CORES = 2;

  /** The rows the spread-key measurement cycles over ({@code spread_keys}). */
  public static final int SPREAD_ROWS = 16;

  /** Process counts with a throughput measured at each. */
  public static final int[] PROCESSES = {1, 2, 4, 8};

  /** PostgreSQL's CPU time per reservation, all its processes, µs. */
  public static final double SERVER_MICROS = 30;

  /** The share of {@link #SERVER_MICROS} run with the row held. */
  public static final double LOCKED_SHARE = 0.7;

  /** CPU time a reservation that waited for the row spends re-reading it, µs. */
  public static final double RECHECK_MICROS = 0;

  /** CPU time per hand-over of work to a waiting backend on the bench machine, µs. */
  public static final double SWITCH_MICROS = 22.5;

  /** The reservation's p50 from one connection alone ({@code reserve_p50_us}), µs. */
  static final double RESERVE_P50_MICROS = 104.274;

  /** Client CPU per call, one key ({@code client_cpu_us_per_call}, pacer, 1 key). */
  static final double[] CLIENT_MICROS_HOT = {30.0619, 10.7955, 19.9353, 26.3777};

  /** Client CPU per call, 16 keys ({@code client_cpu_us_per_call}, pacer, 16 keys). */
  static final double[] CLIENT_MICROS_SPREAD = {32.4536, 11.6157, 16.3759, 21.4062};

  /** Reservations/s on one key ({@code hotkey_per_s}, median of three rounds). */
  static final double[] MEASURED_HOT = {8483, 21142, 18560, 17629};

  /** Reservations/s over 16 keys ({@code spread_per_s}, median of three rounds). */
  static final double[] MEASURED_SPREAD = {8537, 31423, 27174, 24059};

  /** Client counts with a pgbench figure checked: at one, its client's cost is not known. */
  static final int[] PGBENCH_CLIENTS = {2, 4, 8};

  /** pgbench of the reservation's statement, one key ({@code pgbench_same_statement_per_s}). */
  static final double[] MEASURED_PGBENCH = {20092, 25728, 23797};

  /** pgbench's CPU per statement, µs: assumed (a C client, prepared statements; not measured). */
  static final double PGBENCH_CLIENT_MICROS = 5;

  /**
   * A machine with every core idle wakes once for the server and once for the client in each
   * statement of one connection alone: what the latency's p50 has beyond the CPU work.
   */
  public static final double IDLE_WAKE_MICROS =
      (RESERVE_P50_MICROS - CLIENT_MICROS_HOT[0] - SERVER_MICROS - SWITCH_MICROS) / 2;

  /** Measured over simulated, one point: {@code what} ran, on {@code rows} rows. */
  public record Point(String what, int processes, int rows, double measured, double simulated) {

    /** simulated ÷ measured − 1. */
    public double error() {
      return simulated / measured - 1;
    }
  }

  private BenchMachine() {}

  /** The inputs of {@code processes} worker JVMs of one thread each, on one row or 16. */
  public static RowSimulation.Inputs inputs(int processes, boolean hot) {
    int i = indexOf(processes);
    return new RowSimulation.Inputs(
        processes,
        1,
        hot ? 1 : SPREAD_ROWS,
        CORES,
        true,
        hot ? CLIENT_MICROS_HOT[i] : CLIENT_MICROS_SPREAD[i],
        SERVER_MICROS,
        LOCKED_SHARE,
        RECHECK_MICROS,
        IDLE_WAKE_MICROS,
        SWITCH_MICROS,
        0,
        1,
        0,
        0);
  }

  /**
   * Every measured point beside the simulation's answer for it, the inputs changed by {@code f}.
   */
  public static List<Point> compare(UnaryOperator<RowSimulation.Inputs> f) {
    List<Point> points = new ArrayList<>();
    for (boolean hot : new boolean[] {true, false}) {
      for (int i = 0; i < PROCESSES.length; i++) {
        double measured = hot ? MEASURED_HOT[i] : MEASURED_SPREAD[i];
        points.add(point("pacer", f.apply(inputs(PROCESSES[i], hot)), measured));
      }
    }
    for (int i = 0; i < PGBENCH_CLIENTS.length; i++) {
      RowSimulation.Inputs in =
          inputs(PGBENCH_CLIENTS[i], true).withClientMicros(PGBENCH_CLIENT_MICROS);
      points.add(point("pgbench", f.apply(in), MEASURED_PGBENCH[i]));
    }
    return points;
  }

  private static Point point(String what, RowSimulation.Inputs in, double measured) {
    double simulated = RowSimulation.run(in, 20_000, 1_000_000).permitsPerSecond();
    return new Point(what, in.processes(), in.rows(), measured, simulated);
  }

  /** The largest |simulated ÷ measured − 1| over every point, the inputs changed by {@code f}. */
  public static double worstError(UnaryOperator<RowSimulation.Inputs> f) {
    return compare(f).stream().mapToDouble(p -> Math.abs(p.error())).max().orElseThrow();
  }

  private static int indexOf(int processes) {
    for (int i = 0; i < PROCESSES.length; i++) {
      if (PROCESSES[i] == processes) {
        return i;
      }
    }
    throw new IllegalArgumentException("no measured point at " + processes + " processes");
  }
}
