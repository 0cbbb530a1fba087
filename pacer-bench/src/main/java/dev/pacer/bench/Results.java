package dev.pacer.bench;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

/** Everything one run measured, the targets judged from it, and its JSON form. */
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

  /** pgbench: clients → median of the rounds. */
  final Map<Integer, Double> pgbench = new TreeMap<>();

  /** Every series: processes → median of the rounds. */
  final Map<Series, Map<Integer, Double>> throughput = new LinkedHashMap<>();

  /** Every series: processes → the client JVMs' CPU per call, µs (median of the rounds). */
  final Map<Series, Map<Integer, Double>> clientCpu = new LinkedHashMap<>();

  private final Map<Series, Map<Integer, List<Double>>> clientCpuRounds = new LinkedHashMap<>();
  private final Map<Integer, List<Double>> pgbenchRounds = new TreeMap<>();
  private final Map<Series, Map<Integer, List<Double>>> throughputRounds = new LinkedHashMap<>();
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

  static double median(List<Double> values) {
    List<Double> sorted = new ArrayList<>(values);
    Collections.sort(sorted);
    int n = sorted.size();
    return n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
  }

  Map<Integer, Double> series(Contender contender, boolean synchronousCommit, int keys) {
    return throughput.getOrDefault(new Series(contender, synchronousCommit, keys), Map.of());
  }

  /** Pacer on one hot key, in its default commit mode. */
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
    int n = comparisonProcesses();
    List<Target> targets = new ArrayList<>();
    targets.add(
        Target.atMost(
            "reserve_p50_vs_bare_upsert_p50",
            "reservation p50 ÷ bare one-row upsert p50 (same connection, same run)",
            latency.bareUpsertRatio(),
            1.2));
    targets.add(
        Target.atLeast(
            "hotkey_vs_pgbench",
            "hot key at " + n + " processes ÷ pgbench of the same statement at " + n + " clients",
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
            "pacer fetch ÷ a bare java.net.http loop, "
                + fetch.threads()
                + " threads each, no ceiling"
                + " binding (medians, same run)",
            fetch.ratio(),
            0.8));
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

  /** Each of {@link StatementSteps}' statements timed raw: label, p50, p99, p50 ÷ bare upsert. */
  static List<Map<String, Object>> latencySteps(Latency.Result latency) {
    List<Map<String, Object>> steps = new ArrayList<>();
    for (Latency.Step step : latency.steps()) {
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("statement", step.label());
      m.put("p50_us", step.p50());
      m.put("p99_us", step.p99());
      m.put("to_bare_upsert_ratio", step.p50() / latency.bareUpsertP50());
      steps.add(m);
    }
    return steps;
  }

  /** The latency measurement alone, as {@code ./bench --only latency} writes it. */
  static Map<String, Object> latencyJson(String generatedAt, Latency.Result latency) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("generated_at", generatedAt);
    m.put("select1_p50_us", latency.select1P50());
    m.put("select1_p99_us", latency.select1P99());
    m.put("reserve_p50_us", latency.reserveP50());
    m.put("reserve_p99_us", latency.reserveP99());
    m.put("bare_upsert_p50_us", latency.bareUpsertP50());
    m.put("bare_upsert_p99_us", latency.bareUpsertP99());
    m.put("reserve_to_bare_upsert_ratio", latency.bareUpsertRatio());
    m.put("reserve_steps", latencySteps(latency));
    m.put("samples_each", latency.samplesEach());
    return m;
  }

  Map<String, Object> toJson() {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("generated_at", generatedAt);
    m.put("select1_p50_us", latency.select1P50());
    m.put("select1_p99_us", latency.select1P99());
    m.put("reserve_p50_us", latency.reserveP50());
    m.put("reserve_p99_us", latency.reserveP99());
    m.put("reserve_to_select1_ratio", latency.ratio());
    m.put("bare_upsert_p50_us", latency.bareUpsertP50());
    m.put("bare_upsert_p99_us", latency.bareUpsertP99());
    m.put("bare_upsert_to_select1_ratio", latency.bareUpsertP50() / latency.select1P50());
    m.put("reserve_to_bare_upsert_ratio", latency.bareUpsertRatio());
    m.put("reserve_steps", latencySteps(latency));
    m.put("hotkey_per_s", keyed(hotKey()));
    m.put("spread_keys", settings.spreadKeys());
    m.put("spread_per_s", keyed(series(Contender.PACER, false, settings.spreadKeys())));
    m.put("pgbench_same_statement_per_s", keyed(pgbench));
    m.put(
        "bucket4j_select_for_update_per_s",
        keyed(series(Contender.BUCKET4J_SELECT_FOR_UPDATE, false, 1)));
    m.put(
        "bucket4j_advisory_lock_per_s", keyed(series(Contender.BUCKET4J_ADVISORY_LOCK, false, 1)));
    m.put("naive_advisory_per_s", keyed(series(Contender.NAIVE_ADVISORY, false, 1)));
    m.put(
        "peers_commit_mode",
        "synchronous_commit=off, as Pacer's session;"
            + " the *_default_commit_per_s fields are the same peers at the server default (on)");
    m.put(
        "bucket4j_select_for_update_default_commit_per_s",
        keyed(series(Contender.BUCKET4J_SELECT_FOR_UPDATE, true, 1)));
    m.put(
        "bucket4j_advisory_lock_default_commit_per_s",
        keyed(series(Contender.BUCKET4J_ADVISORY_LOCK, true, 1)));
    m.put("naive_advisory_default_commit_per_s", keyed(series(Contender.NAIVE_ADVISORY, true, 1)));
    Map<String, Object> commit = new LinkedHashMap<>();
    for (int c : commitModeProcesses()) {
      Map<String, Object> at = new LinkedHashMap<>();
      at.put("pacer_table_off_per_s", rounded(series(Contender.PACER, false, 1).get(c)));
      at.put("pacer_table_on_per_s", rounded(series(Contender.PACER, true, 1).get(c)));
      at.put(
          "key_value_table_off_per_s", rounded(series(Contender.PACER_KEY_VALUE, false, 1).get(c)));
      at.put(
          "key_value_table_on_per_s", rounded(series(Contender.PACER_KEY_VALUE, true, 1).get(c)));
      commit.put(Integer.toString(c), at);
    }
    m.put("commit_mode_by_processes", commit);
    m.put("accuracy_delivered_ratio", pacerAccuracy.deliveredRatio());
    m.put("accuracy_peak_window", pacerAccuracy.peakWindow());
    m.put("accuracy_ceiling_per_s", pacerAccuracy.ceiling());
    m.put("accuracy_acquisitions", pacerAccuracy.count());
    m.put("accuracy_lateness_p50_ms", pacerAccuracy.latenessPercentileMillis(0.50));
    m.put("accuracy_lateness_p99_ms", pacerAccuracy.latenessPercentileMillis(0.99));
    m.put("accuracy_lateness_max_ms", pacerAccuracy.latenessPercentileMillis(1.0));
    m.put("perprocess_delivered_ratio", perProcessAccuracy.deliveredRatio());
    m.put("perprocess_peak_window", perProcessAccuracy.peakWindow());
    m.put("overhead_8_at_7_ratio", overhead.median());
    m.put("overhead_8_at_7_runs", overhead.ratios());
    m.put("reserve_share_of_7_per_s_interval", latency.reserveP50() / OVERHEAD_INTERVAL_MICROS);
    m.put("fetch_urls", fetch.urls());
    m.put("fetch_threads", fetch.threads());
    m.put("fetch_pacer_per_s", fetch.pacerPerSecond());
    m.put("fetch_bare_http_per_s", fetch.barePerSecond());
    m.put("fetch_to_bare_http_ratio", fetch.ratio());
    m.put("fetch_pacer_rounds_per_s", fetch.pacerRounds());
    m.put("fetch_bare_http_rounds_per_s", fetch.bareRounds());
    m.put("enqueue_urls", enqueue.urls());
    m.put("enqueue_hosts", enqueue.hosts());
    m.put("enqueue_seconds", enqueue.seconds());
    m.put("enqueue_urls_per_s", enqueue.perSecond());
    m.put("enqueue_added", enqueue.added());
    m.put("enqueue_added_again", enqueue.addedAgain());
    m.put("enqueue_child_heap_limit", EnqueueScale.HEAP);
    m.put("enqueue_peak_heap_bytes", enqueue.peakHeapBytes());
    m.put("enqueue_peak_rss_bytes", enqueue.peakRssBytes());
    m.put("enqueue_input_bytes", enqueue.inputBytes());
    List<Map<String, Object>> claims = new ArrayList<>();
    for (ClaimCost.Point p : claimCost) {
      Map<String, Object> c = new LinkedHashMap<>();
      c.put("hosts", p.hosts());
      c.put("items", p.items());
      c.put("claims", p.claims());
      c.put("p50_ms", p.p50Millis());
      c.put("p99_ms", p.p99Millis());
      c.put("max_ms", p.maxMillis());
      c.put("without_item", p.withoutItem());
      claims.add(c);
    }
    m.put("claim_cost", claims);
    List<Map<String, Object>> heap = new ArrayList<>();
    for (HostHeap.Point p : hostHeap.points()) {
      Map<String, Object> h = new LinkedHashMap<>();
      h.put("hosts", p.hosts());
      h.put("fetchers_held", p.fetchersHeld());
      h.put("heap_bytes", p.heapBytes());
      heap.add(h);
    }
    m.put("host_heap", heap);
    m.put("host_heap_new_hosts_per_s", hostHeap.load().perSecond());
    m.put("host_heap_jvm", String.join(" ", HostHeap.JVM));
    m.put("host_heap_ratio", hostHeap.ratio());
    m.put("host_heap_bytes_per_held_fetcher", hostHeap.bytesPerHeldFetcher());
    FrontierBench.Load load = frontier.load();
    m.put("frontier_hosts", load.hosts());
    m.put("frontier_rate_per_host", load.rate());
    m.put("frontier_zipf_s", load.zipfS());
    m.put("frontier_heaviest_backlog", load.heaviest());
    m.put("frontier_items", frontier.items());
    m.put("frontier_processes", load.processes());
    m.put("frontier_threads_per_process", load.threads());
    m.put("frontier_capacity_per_s", frontier.capacityPerSecond());
    m.put("frontier_finish_bound_s", load.finishBoundSeconds());
    for (FrontierRun run : List.of(frontier.turn(), frontier.fifo(), frontier.killed())) {
      Map<String, Object> f = new LinkedHashMap<>();
      f.put("finished", run.finished());
      f.put("elapsed_s", run.elapsedSeconds());
      f.put("first_to_last_arrival_s", run.doorSeconds());
      f.put("arrivals", run.arrivals());
      f.put("busiest_host_window", run.worstHostWindow());
      f.put("hosts_over_ceiling_plus_one", run.hostsOver());
      f.put("lowest_window_ratio", run.minWindowRatio());
      f.put("windows", run.windows().size());
      f.put(
          "window_arrivals",
          run.windows().stream().map(FrontierRun.WindowFigure::delivered).toList());
      f.put(
          "window_bases",
          run.windows().stream().map(w -> Math.round(w.base() * 10) / 10.0).toList());
      f.put("claims", run.claims());
      f.put("claims_empty_while_eligible", run.emptyWhileEligible());
      f.put("workers_telling_claims", run.workersTelling());
      f.put("done_once", run.doneOnce());
      f.put("killed_at_s", run.killedAtSeconds());
      m.put("frontier_" + run.label(), f);
    }
    Map<String, Object> judged = new LinkedHashMap<>();
    for (Target t : targets()) {
      Map<String, Object> j = new LinkedHashMap<>();
      j.put("description", t.description());
      j.put("measured", t.measured());
      j.put("target", t.comparator() + " " + t.threshold());
      j.put("met", t.met());
      judged.put(t.name(), j);
    }
    m.put("targets", judged);
    m.put("machine", machine.toJson());
    Map<String, Object> rounds = new LinkedHashMap<>();
    rounds.put("pgbench", roundsJson(pgbenchRounds));
    throughputRounds.forEach((series, byCount) -> rounds.put(series.id(), roundsJson(byCount)));
    m.put("throughput_rounds_per_s", rounds);
    Map<String, Object> cpu = new LinkedHashMap<>();
    clientCpu.forEach(
        (series, byCount) -> {
          Map<String, Object> values = new LinkedHashMap<>();
          byCount.forEach((n, v) -> values.put(Integer.toString(n), v));
          cpu.put(series.id(), values);
        });
    m.put("client_cpu_us_per_call", cpu);
    m.put("settings", settingsJson());
    return m;
  }

  private Map<String, Object> settingsJson() {
    Map<String, Object> s = new LinkedHashMap<>();
    s.put("process_counts", settings.processCounts());
    s.put("warmup_ms", settings.warmupMillis());
    s.put("measure_ms", settings.measureMillis());
    s.put("rounds", settings.repeats());
    s.put("latency_samples_each", settings.latencySamples());
    s.put("pgbench_clients", settings.pgbenchClients());
    s.put("pgbench_seconds", settings.pgbenchSeconds());
    s.put("accuracy_processes", settings.accuracyProcesses());
    s.put("accuracy_threads_per_process", settings.accuracyThreads());
    s.put("accuracy_ceiling_per_s", settings.accuracyRate());
    s.put("accuracy_ms", settings.accuracyMillis());
    s.put("overhead_runs", settings.overheadRuns());
    return s;
  }

  private static Map<String, Object> roundsJson(Map<Integer, List<Double>> byCount) {
    Map<String, Object> out = new LinkedHashMap<>();
    byCount.forEach(
        (n, values) ->
            out.put(
                Integer.toString(n),
                values.stream().map(v -> (Object) (double) Math.round(v)).toList()));
    return out;
  }

  private static Double rounded(Double v) {
    return v == null ? null : (double) Math.round(v);
  }

  private static Map<String, Object> keyed(Map<Integer, Double> values) {
    Map<String, Object> out = new LinkedHashMap<>();
    values.forEach((k, v) -> out.put(Integer.toString(k), (double) Math.round(v)));
    return out;
  }
}
