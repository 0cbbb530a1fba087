package dev.pacer.bench;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** A run's {@link Results} as the JSON {@code ./bench} writes beside its report. */
final class ResultsJson {

  private ResultsJson() {}

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

  static Map<String, Object> of(Results r) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("generated_at", r.generatedAt);
    putLatency(r, m);
    putThroughput(r, m);
    putAccuracyAndOverhead(r, m);
    putLeases(r, m);
    putFetchAndEnqueue(r, m);
    putClaimCostAndHostHeap(r, m);
    putFrontier(r, m);
    putTargetsAndRounds(r, m);
    m.put("settings", settingsJson(r));
    return m;
  }

  private static void putLatency(Results r, Map<String, Object> m) {
    m.put("select1_p50_us", r.latency.select1P50());
    m.put("select1_p99_us", r.latency.select1P99());
    m.put("reserve_p50_us", r.latency.reserveP50());
    m.put("reserve_p99_us", r.latency.reserveP99());
    m.put("reserve_to_select1_ratio", r.latency.ratio());
    m.put("bare_upsert_p50_us", r.latency.bareUpsertP50());
    m.put("bare_upsert_p99_us", r.latency.bareUpsertP99());
    m.put("bare_upsert_to_select1_ratio", r.latency.bareUpsertP50() / r.latency.select1P50());
    m.put("reserve_to_bare_upsert_ratio", r.latency.bareUpsertRatio());
    m.put("reserve_steps", latencySteps(r.latency));
  }

  private static void putThroughput(Results r, Map<String, Object> m) {
    m.put("hotkey_per_s", keyed(r.hotKey()));
    m.put("hotkey_leased_per_s", keyed(r.hotKeyLeased));
    m.put("hotkey_leased_threads", LeaseBench.THREADS);
    m.put("hotkey_leased_max_leased_turns", LeaseBench.MAX_LEASED);
    m.put("hotkey_leased_ceiling_per_s", LeaseBench.HOT_KEY_CEILING);
    m.put("spread_keys", r.settings.spreadKeys());
    m.put("spread_per_s", keyed(r.series(Contender.PACER, false, r.settings.spreadKeys())));
    m.put("pgbench_same_statement_per_s", keyed(r.pgbench));
    m.put(
        "bucket4j_select_for_update_per_s",
        keyed(r.series(Contender.BUCKET4J_SELECT_FOR_UPDATE, false, 1)));
    m.put(
        "bucket4j_advisory_lock_per_s",
        keyed(r.series(Contender.BUCKET4J_ADVISORY_LOCK, false, 1)));
    m.put("naive_advisory_per_s", keyed(r.series(Contender.NAIVE_ADVISORY, false, 1)));
    m.put(
        "peers_commit_mode",
        "synchronous_commit=off, as Pacer's session;"
            + " the *_default_commit_per_s fields are the same peers at the server default (on)");
    m.put(
        "bucket4j_select_for_update_default_commit_per_s",
        keyed(r.series(Contender.BUCKET4J_SELECT_FOR_UPDATE, true, 1)));
    m.put(
        "bucket4j_advisory_lock_default_commit_per_s",
        keyed(r.series(Contender.BUCKET4J_ADVISORY_LOCK, true, 1)));
    m.put(
        "naive_advisory_default_commit_per_s", keyed(r.series(Contender.NAIVE_ADVISORY, true, 1)));
    Map<String, Object> commit = new LinkedHashMap<>();
    for (int c : r.commitModeProcesses()) {
      Map<String, Object> at = new LinkedHashMap<>();
      at.put("pacer_table_off_per_s", rounded(r.series(Contender.PACER, false, 1).get(c)));
      at.put("pacer_table_on_per_s", rounded(r.series(Contender.PACER, true, 1).get(c)));
      at.put(
          "key_value_table_off_per_s",
          rounded(r.series(Contender.PACER_KEY_VALUE, false, 1).get(c)));
      at.put(
          "key_value_table_on_per_s", rounded(r.series(Contender.PACER_KEY_VALUE, true, 1).get(c)));
      commit.put(Integer.toString(c), at);
    }
    m.put("commit_mode_by_processes", commit);
  }

  private static void putAccuracyAndOverhead(Results r, Map<String, Object> m) {
    m.put("accuracy_delivered_ratio", r.pacerAccuracy.deliveredRatio());
    m.put("accuracy_peak_window", r.pacerAccuracy.peakWindow());
    m.put("accuracy_ceiling_per_s", r.pacerAccuracy.ceiling());
    m.put("accuracy_acquisitions", r.pacerAccuracy.count());
    m.put("accuracy_lateness_p50_ms", r.pacerAccuracy.latenessPercentileMillis(0.50));
    m.put("accuracy_lateness_p99_ms", r.pacerAccuracy.latenessPercentileMillis(0.99));
    m.put("accuracy_lateness_max_ms", r.pacerAccuracy.latenessPercentileMillis(1.0));
    m.put("perprocess_delivered_ratio", r.perProcessAccuracy.deliveredRatio());
    m.put("perprocess_peak_window", r.perProcessAccuracy.peakWindow());
    m.put("overhead_8_at_7_ratio", r.overhead.median());
    m.put("overhead_8_at_7_runs", r.overhead.ratios());
    m.put(
        "reserve_share_of_7_per_s_interval",
        r.latency.reserveP50() / Results.OVERHEAD_INTERVAL_MICROS);
  }

  private static void putLeases(Results r, Map<String, Object> m) {
    for (LeaseBench.Point p : List.of(r.leases.leased(), r.leases.unleased())) {
      String key = p == r.leases.leased() ? "leases" : "leases_off";
      m.put(key + "_permits", p.accuracy().count());
      m.put(key + "_delivered_ratio", p.accuracy().deliveredRatio());
      m.put(key + "_busiest_10ms_window", p.busiestWindow());
      m.put(key + "_statements", p.statements());
      m.put(key + "_statements_per_permit", p.statementsPerPermit());
      m.put(key + "_server_cpu_us_per_permit", p.serverMicrosPerPermit());
      m.put(key + "_unused_turns", p.unused());
      m.put(key + "_late_turns", p.late());
    }
  }

  private static void putFetchAndEnqueue(Results r, Map<String, Object> m) {
    m.put("fetch_urls", r.fetch.urls());
    m.put("fetch_threads", r.fetch.threads());
    m.put("fetch_pacer_per_s", r.fetch.median(FetchThroughput.Side.PACER_FILES));
    m.put("fetch_pacer_warc_per_s", r.fetch.median(FetchThroughput.Side.PACER_WARC));
    m.put("fetch_bare_http_per_s", r.fetch.median(FetchThroughput.Side.BARE));
    m.put("fetch_bare_http_forced_per_s", r.fetch.median(FetchThroughput.Side.BARE_FORCED));
    m.put("fetch_to_bare_http_ratio", r.fetch.ratio(FetchThroughput.Side.PACER_FILES));
    m.put("fetch_warc_to_bare_http_ratio", r.fetch.ratio(FetchThroughput.Side.PACER_WARC));
    m.put("fetch_pacer_rounds_per_s", r.fetch.rounds().get(FetchThroughput.Side.PACER_FILES));
    m.put("fetch_pacer_warc_rounds_per_s", r.fetch.rounds().get(FetchThroughput.Side.PACER_WARC));
    m.put("fetch_bare_http_rounds_per_s", r.fetch.rounds().get(FetchThroughput.Side.BARE));
    m.put(
        "fetch_bare_http_forced_rounds_per_s",
        r.fetch.rounds().get(FetchThroughput.Side.BARE_FORCED));
    m.put("enqueue_urls", r.enqueue.urls());
    m.put("enqueue_hosts", r.enqueue.hosts());
    m.put("enqueue_seconds", r.enqueue.seconds());
    m.put("enqueue_urls_per_s", r.enqueue.perSecond());
    m.put("enqueue_added", r.enqueue.added());
    m.put("enqueue_added_again", r.enqueue.addedAgain());
    m.put("enqueue_child_heap_limit", EnqueueScale.HEAP);
    m.put("enqueue_peak_heap_bytes", r.enqueue.peakHeapBytes());
    m.put("enqueue_peak_rss_bytes", r.enqueue.peakRssBytes());
    m.put("enqueue_input_bytes", r.enqueue.inputBytes());
  }

  private static void putClaimCostAndHostHeap(Results r, Map<String, Object> m) {
    List<Map<String, Object>> claims = new ArrayList<>();
    for (ClaimCost.Point p : r.claimCost) {
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
    for (HostHeap.Point p : r.hostHeap.points()) {
      Map<String, Object> h = new LinkedHashMap<>();
      h.put("hosts", p.hosts());
      h.put("fetchers_held", p.fetchersHeld());
      h.put("heap_bytes", p.heapBytes());
      heap.add(h);
    }
    m.put("host_heap", heap);
    m.put("host_heap_new_hosts_per_s", r.hostHeap.load().perSecond());
    m.put("host_heap_jvm", String.join(" ", HostHeap.JVM));
    m.put("host_heap_ratio", r.hostHeap.ratio());
    m.put("host_heap_bytes_per_held_fetcher", r.hostHeap.bytesPerHeldFetcher());
  }

  private static void putFrontier(Results r, Map<String, Object> m) {
    FrontierBench.Load load = r.frontier.load();
    m.put("frontier_hosts", load.hosts());
    m.put("frontier_rate_per_host", load.rate());
    m.put("frontier_zipf_s", load.zipfS());
    m.put("frontier_heaviest_backlog", load.heaviest());
    m.put("frontier_items", r.frontier.items());
    m.put("frontier_processes", load.processes());
    m.put("frontier_threads_per_process", load.threads());
    m.put("frontier_capacity_per_s", r.frontier.capacityPerSecond());
    m.put("frontier_finish_bound_s", load.finishBoundSeconds());
    for (FrontierRun run : List.of(r.frontier.turn(), r.frontier.fifo(), r.frontier.killed())) {
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
  }

  private static void putTargetsAndRounds(Results r, Map<String, Object> m) {
    Map<String, Object> judged = new LinkedHashMap<>();
    for (Results.Target t : r.targets()) {
      Map<String, Object> j = new LinkedHashMap<>();
      j.put("description", t.description());
      j.put("measured", t.measured());
      j.put("target", t.comparator() + " " + t.threshold());
      j.put("met", t.met());
      judged.put(t.name(), j);
    }
    m.put("targets", judged);
    m.put("machine", r.machine.toJson());
    Map<String, Object> rounds = new LinkedHashMap<>();
    rounds.put("pgbench", roundsJson(r.pgbenchRounds));
    rounds.put("pacer_leased/1_key", roundsJson(r.hotKeyLeasedRounds));
    r.throughputRounds.forEach((series, byCount) -> rounds.put(series.id(), roundsJson(byCount)));
    m.put("throughput_rounds_per_s", rounds);
    Map<String, Object> cpu = new LinkedHashMap<>();
    r.clientCpu.forEach(
        (series, byCount) -> {
          Map<String, Object> values = new LinkedHashMap<>();
          byCount.forEach((n, v) -> values.put(Integer.toString(n), v));
          cpu.put(series.id(), values);
        });
    m.put("client_cpu_us_per_call", cpu);
  }

  private static Map<String, Object> settingsJson(Results r) {
    Map<String, Object> s = new LinkedHashMap<>();
    s.put("process_counts", r.settings.processCounts());
    s.put("warmup_ms", r.settings.warmupMillis());
    s.put("measure_ms", r.settings.measureMillis());
    s.put("rounds", r.settings.repeats());
    s.put("latency_samples_each", r.settings.latencySamples());
    s.put("pgbench_clients", r.settings.pgbenchClients());
    s.put("pgbench_seconds", r.settings.pgbenchSeconds());
    s.put("accuracy_processes", r.settings.accuracyProcesses());
    s.put("accuracy_threads_per_process", r.settings.accuracyThreads());
    s.put("accuracy_ceiling_per_s", r.settings.accuracyRate());
    s.put("accuracy_ms", r.settings.accuracyMillis());
    s.put("overhead_runs", r.settings.overheadRuns());
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
