package dev.pacer.bench;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

/** Everything one run measured, and the targets judged from it ({@link ResultsJson}: its JSON). */
final class Results {

  /** One throughput series: a contender, its commit mode, and how many keys it spreads over. */
  record Series(Contender contender, boolean synchronousCommit, int keys) {

    /** Its name in the JSON, e.g. {@code pacer/synchronous_commit_off/1_key}. */
    String id() {
      return contender.name().toLowerCase(Locale.ROOT)
          + (synchronousCommit ? "/synchronous_commit_on" : "/synchronous_commit_off")
          + "/"
          + keys
          + (keys == 1 ? "_key" : "_keys");
    }
  }

  /** A target the benchmark holds Pacer to (benchmarks.md's "Targets"), judged on this run. */
  record Target(
      String name,
      String description,
      double measured,
      String comparator,
      double threshold,
      boolean met) {

    static Target atMost(String name, String description, double measured, double threshold) {
      return new Target(name, description, measured, "<=", threshold, measured <= threshold);
    }

    static Target atLeast(String name, String description, double measured, double threshold) {
      return new Target(name, description, measured, ">=", threshold, measured >= threshold);
    }
  }

  static final double OVERHEAD_INTERVAL_MICROS = 1e6 / Overhead.RATE;

  final BenchSettings settings;
  final String generatedAt;
  Machine machine;
  Latency.Result latency;
  Overhead.Result overhead;
  LeaseBench.Result leases;

  /** P2: the hot key with combining and leases ({@link LeaseBench#hotKeyPerSecond}). */
  final Map<Integer, Double> hotKeyLeased = new TreeMap<>();

  final Map<Integer, List<Double>> hotKeyLeasedRounds = new TreeMap<>();

  /** pgbench: clients → median of the rounds. */
  final Map<Integer, Double> pgbench = new TreeMap<>();

  /** Every series: processes → median of the rounds. */
  final Map<Series, Map<Integer, Double>> throughput = new LinkedHashMap<>();

  /** Every series: processes → the client JVMs' CPU per call, µs (median of the rounds). */
  final Map<Series, Map<Integer, Double>> clientCpu = new LinkedHashMap<>();

  final Map<Series, Map<Integer, List<Double>>> clientCpuRounds = new LinkedHashMap<>();
  final Map<Integer, List<Double>> pgbenchRounds = new TreeMap<>();
  final Map<Series, Map<Integer, List<Double>>> throughputRounds = new LinkedHashMap<>();
  Accuracy pacerAccuracy;
  Accuracy perProcessAccuracy;
  FetchThroughput.Result fetch;
  EnqueueScale.Result enqueue;
  FrontierBench.Result frontier;
  List<ClaimCost.Point> claimCost;
  HostHeap.Result hostHeap;

  Results(BenchSettings settings, String generatedAt) {
    this.settings = settings;
    this.generatedAt = generatedAt;
  }

  void recordThroughput(Series series, int processes, double perSecond) {
    List<Double> rounds =
        throughputRounds
            .computeIfAbsent(series, s -> new TreeMap<>())
            .computeIfAbsent(processes, n -> new ArrayList<>());
    rounds.add(perSecond);
    throughput.computeIfAbsent(series, s -> new TreeMap<>()).put(processes, median(rounds));
  }

  void recordClientCpu(Series series, int processes, double micros) {
    List<Double> rounds =
        clientCpuRounds
            .computeIfAbsent(series, s -> new TreeMap<>())
            .computeIfAbsent(processes, n -> new ArrayList<>());
    rounds.add(micros);
    clientCpu.computeIfAbsent(series, s -> new TreeMap<>()).put(processes, median(rounds));
  }

  void recordPgbench(int clients, double perSecond) {
    List<Double> rounds = pgbenchRounds.computeIfAbsent(clients, n -> new ArrayList<>());
    rounds.add(perSecond);
    pgbench.put(clients, median(rounds));
  }

  void recordHotKeyLeased(int processes, double perSecond) {
    List<Double> rounds = hotKeyLeasedRounds.computeIfAbsent(processes, n -> new ArrayList<>());
    rounds.add(perSecond);
    hotKeyLeased.put(processes, median(rounds));
  }

  static double median(List<Double> values) {
    List<Double> sorted = new ArrayList<>(values);
    Collections.sort(sorted);
    int n = sorted.size();
    return n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
  }

  Map<Integer, Double> series(Contender contender, boolean synchronousCommit, int keys) {
    return throughput.getOrDefault(new Series(contender, synchronousCommit, keys), Map.of());
  }

  /**
   * Pacer on one hot key, in its default commit mode, one thread and one connection a process: one
   * turn a statement.
   */
  Map<Integer, Double> hotKey() {
    return series(Contender.PACER, false, 1);
  }

  /** The process count at which the ratios are judged: 4, or the largest measured below it. */
  int comparisonProcesses() {
    int best = settings.processCounts().get(0);
    for (int n : settings.processCounts()) {
      if (n <= 4 && settings.pgbenchClients().contains(n)) {
        best = Math.max(best, n);
      }
    }
    return best;
  }

  /**
   * The process counts of the commit-mode comparison: one process, where every commit's flush is on
   * the critical path, and the count the ratios are judged at, where group commit shares it.
   */
  List<Integer> commitModeProcesses() {
    int first = settings.processCounts().get(0);
    int judged = comparisonProcesses();
    return first == judged ? List.of(judged) : List.of(first, judged);
  }

  double ratioAt(Map<Integer, Double> numerator, Map<Integer, Double> denominator, int n) {
    Double a = numerator.get(n);
    Double b = denominator.get(n);
    return a == null || b == null || b == 0 ? Double.NaN : a / b;
  }

  List<Target> targets() {
    List<Target> targets = new ArrayList<>();
    addCallTargets(targets);
    addPacingTargets(targets);
    addFrontierTargets(targets);
    HostHeap.Load heap = hostHeap.load();
    targets.add(
        Target.atMost(
            "host_heap_flat",
            String.format(
                Locale.ROOT,
                "per host, %d new hosts"
                    + " a second: a worker's retained heap after %,d hosts ÷ after %,d",
                heap.perSecond(),
                heap.hosts(),
                hostHeap.points().get(1).hosts()),
            hostHeap.ratio(),
            HostHeap.FLAT));
    FrontierRun fifo = frontier.fifo();
    targets.add(
        Target.atMost(
            "frontier_fifo_fails",
            "non-vacuity: the FIFO twin's lowest 10-s"
                + " window (must fall below "
                + FrontierBench.WINDOW_SHARE
                + ")",
            fifo.minWindowRatio(),
            FrontierBench.WINDOW_SHARE));
    return targets;
  }

  /** A call's latency against a bare upsert, and the hot key's throughput against its peers. */
  private void addCallTargets(List<Target> targets) {
    int n = comparisonProcesses();
    targets.add(
        Target.atMost(
            "reserve_p50_vs_bare_upsert_p50",
            "reservation p50 ÷ bare one-row upsert p50 (same connection, same run)",
            latency.bareUpsertRatio(),
            1.2));
    targets.add(
        Target.atLeast(
            "hotkey_leased_vs_pgbench",
            "hot key at "
                + n
                + " processes x "
                + LeaseBench.THREADS
                + " threads, combining and leases of up to "
                + LeaseBench.MAX_LEASED
                + " turns, permits ÷ pgbench of the one-turn statement at "
                + n
                + " clients",
            ratioAt(hotKeyLeased, pgbench, n),
            1.0));
    targets.add(
        Target.atLeast(
            "hotkey_vs_pgbench",
            "hot key at "
                + n
                + " processes, one thread and one turn a statement each, ÷ pgbench of the same"
                + " statement at "
                + n
                + " clients",
            ratioAt(hotKey(), pgbench, n),
            0.9));
    targets.add(
        Target.atLeast(
            "hotkey_vs_bucket4j_select_for_update",
            "hot key ÷ Bucket4j select-for-update at " + n + " processes (same commit mode)",
            ratioAt(hotKey(), series(Contender.BUCKET4J_SELECT_FOR_UPDATE, false, 1), n),
            4));
    targets.add(
        Target.atLeast(
            "hotkey_vs_bucket4j_advisory_lock",
            "hot key ÷ Bucket4j advisory-lock at " + n + " processes (same commit mode)",
            ratioAt(hotKey(), series(Contender.BUCKET4J_ADVISORY_LOCK, false, 1), n),
            4));
  }

  /** The delivered rate and the busiest window, the overhead, and the fetch path's cost. */
  private void addPacingTargets(List<Target> targets) {
    addLeaseTargets(targets);
    targets.add(
        Target.atLeast(
            "accuracy_delivered",
            "delivered rate ÷ ceiling",
            pacerAccuracy.deliveredRatio(),
            0.98));
    targets.add(
        Target.atMost(
            "accuracy_peak_window",
            "most acquisitions in any 1-s window (ceiling + 1 allowed)",
            pacerAccuracy.peakWindow(),
            pacerAccuracy.ceiling() + 1));
    targets.add(
        Target.atMost(
            "overhead_8_at_7",
            "8 acquisitions at 7/s ÷ 1.000 s (median of runs)",
            overhead.median(),
            1.005));
    targets.add(
        Target.atLeast(
            "fetch_vs_bare_http",
            "pacer fetch, a file per body, ÷ a bare java.net.http loop writing each body unforced, "
                + fetch.threads()
                + " threads each, no ceiling binding (medians, same run)",
            fetch.ratio(FetchThroughput.Side.PACER_FILES),
            0.8));
    targets.add(
        Target.atLeast(
            "fetch_warc_vs_bare_http",
            "pacer fetch --warc ÷ the same bare loop (medians, same run)",
            fetch.ratio(FetchThroughput.Side.PACER_WARC),
            0.8));
  }

  /** P4: one key at 100,000/s from 4 processes x 16 threads, with leases of turns. */
  private void addLeaseTargets(List<Target> targets) {
    String at =
        "one key at "
            + (long) LeaseBench.CEILING
            + "/s from "
            + LeaseBench.PROCESSES
            + " processes x "
            + LeaseBench.THREADS
            + " threads with leases of up to "
            + LeaseBench.MAX_LEASED
            + " turns";
    targets.add(
        Target.atLeast(
            "leases_delivered",
            at + ": delivered rate ÷ ceiling",
            leases.leased().accuracy().deliveredRatio(),
            0.95));
    targets.add(
        Target.atMost(
            "leases_busiest_10ms_window",
            at + ": most permits in any 10-ms window (its share + 1 allowed)",
            leases.leased().busiestWindow(),
            LeaseBench.Result.windowBound()));
    targets.add(
        Target.atMost(
            "leases_statements_per_permit",
            at + ": reservation statements per permit",
            leases.leased().statementsPerPermit(),
            0.02));
  }

  /** Per host: each host's busiest window, every item done once, the lowest window, the finish. */
  private void addFrontierTargets(List<Target> targets) {
    FrontierBench.Load load = frontier.load();
    String at = load.hosts() + " hosts at " + load.rate() + "/s";
    for (FrontierRun run : List.of(frontier.turn(), frontier.killed())) {
      String which = run == frontier.turn() ? "frontier" : "frontier_sigkill";
      String how = run == frontier.turn() ? "" : ", a worker killed with SIGKILL";
      targets.add(
          Target.atMost(
              which + "_busiest_host_window",
              "per host, "
                  + at
                  + how
                  + ": most arrivals at any host in a 1-s window (ceiling + 1 allowed)",
              run.worstHostWindow(),
              Math.floor(load.rate()) + 1));
      targets.add(
          Target.atLeast(
              which + "_done_once",
              "per host" + how + ": every item done" + " exactly once, every URL arrived (1 = yes)",
              run.doneOnce() ? 1 : 0,
              1));
    }
    FrontierRun turn = frontier.turn();
    targets.add(
        Target.atLeast(
            "frontier_lowest_window",
            "per host, "
                + at
                + ", Zipf backlog: lowest 10-s window's arrivals ÷ min(Σ ceilings of hosts with"
                + " items left, capacity)",
            turn.minWindowRatio(),
            FrontierBench.WINDOW_SHARE));
    targets.add(
        Target.atMost(
            "frontier_empty_claims",
            "per host: claims empty while a host was" + " due ÷ claims",
            turn.emptyFraction(),
            FrontierBench.EMPTY_CLAIMS_TARGET));
    targets.add(
        Target.atMost(
            "frontier_finish",
            "per host: seconds from the first arrival to the"
                + " last (bound: 1.05 x heaviest backlog x interval + 10 s)",
            turn.doorSeconds(),
            load.finishBoundSeconds()));
  }
}
