package dev.pacer.bench;

import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * {@code ./bench}: every measurement {@code docs/benchmarks.md} reports, in one run against one
 * PostgreSQL, written to {@code bench-results.json}, {@code benchmarks.md} and PNG charts in the
 * output directory.
 */
public final class BenchMain {

  private final BenchOptions options;
  private final PrintStream log;

  BenchMain(BenchOptions options, PrintStream log) {
    this.options = options;
    this.log = log;
  }

  public static void main(String[] args) throws Exception {
    System.setProperty("java.awt.headless", "true");
    FrontierBench.serversAnswerAtOnce();
    if (System.getProperty("org.slf4j.simpleLogger.defaultLogLevel") == null) {
      // The embedded server's start-up chatter is INFO; Pacer's own degradation notices are WARN.
      System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
    }
    BenchOptions options;
    try {
      options = BenchOptions.parse(args);
    } catch (IllegalArgumentException e) {
      System.err.println(e.getMessage());
      System.err.println(BenchOptions.USAGE);
      System.exit(2);
      return;
    }
    if (options == null) {
      System.out.println(BenchOptions.USAGE);
      return;
    }
    if (options.only() == BenchOptions.Section.LEASES) {
      LeaseBench.run(options, System.out);
      return;
    }
    if (options.only() == BenchOptions.Section.HOT_KEY) {
      new BenchMain(options, System.out).runHotKey();
      return;
    }
    if (options.only() == BenchOptions.Section.LATENCY) {
      new BenchMain(options, System.out).runLatency();
      return;
    }
    if (options.only() == BenchOptions.Section.SERVER_CPU) {
      ServerCpu.main(new String[0]);
      return;
    }
    if (options.only() == BenchOptions.Section.MODEL) {
      dev.pacer.bench.model.ScalingModel.print(System.out);
      return;
    }
    Results results = new BenchMain(options, System.out).run();
    int missed = 0;
    for (Results.Target t : results.targets()) {
      missed += t.met() ? 0 : 1;
    }
    System.out.printf(
        Locale.ROOT,
        "%d of %d targets met; wrote %s to %s%n",
        results.targets().size() - missed,
        results.targets().size(),
        Report.outputs(),
        options.out().toAbsolutePath());
  }

  /** Runs every measurement and writes the outputs; returns what it measured. */
  Results run() throws Exception {
    BenchSettings s = options.settings();
    Files.createDirectories(options.out());
    Path pgbenchPath = Pgbench.locate(options.pgbench());
    double[] loadAtStart = Machine.loadAverage();
    Results r = new Results(s, Instant.now().truncatedTo(ChronoUnit.SECONDS).toString());
    log.printf(
        Locale.ROOT,
        "load average at start: %.2f %.2f %.2f%n",
        loadAtStart[0],
        loadAtStart[1],
        loadAtStart[2]);
    try (Database db =
        options.dbUrl() == null ? Database.embedded() : Database.external(options.dbUrl())) {
      Database.Target target = db.target();
      String version = db.serverVersion();
      String serverSync = db.serverSynchronousCommit();
      String fsync = db.serverFsync();
      log.println(
          "server: " + version + "; synchronous_commit default " + serverSync + ", fsync " + fsync);
      db.createTables();
      measureLatency(target, r);
      measureThroughput(db, target, pgbenchPath, r);
      r.leases =
          LeaseBench.measure(
              target,
              options.settings().accuracyMillis(),
              db.isEmbedded() ? ServerCpu.serverMeter(target) : null);
      LeaseBench.log(r.leases, log);
      measureFetching(target, r);
      r.machine =
          new Machine(
              Runtime.getRuntime().availableProcessors(),
              Machine.readMemoryBytes(),
              Machine.readCpuModel(),
              Machine.readOs(),
              Machine.readJvm(),
              version,
              serverSync,
              fsync,
              db.isEmbedded(),
              loadAtStart,
              Machine.loadAverage());
    }
    writeOutputs(r);
    return r;
  }

  /** The latency of one call, and the overhead of pacing a few requests. */
  private void measureLatency(Database.Target target, Results r) throws Exception {
    BenchSettings s = options.settings();
    r.latency = Latency.measure(target, s.latencySamples());
    logLatency(r.latency);

    r.overhead = Overhead.measure(target, s.overheadRuns());
    log.printf(Locale.ROOT, "overhead, 8 at 7/s: %s%n", Arrays.toString(r.overhead.ratios()));
  }

  /** Every contender's and pgbench's throughput at each process count, then the accuracy. */
  private void measureThroughput(Database db, Database.Target target, Path pgbenchPath, Results r)
      throws Exception {
    BenchSettings s = options.settings();
    Path work = Files.createTempDirectory("pacer-bench");
    Pgbench.makeRow(target);
    Pgbench pgbench = Pgbench.prepare(pgbenchPath, work, db.libpqSettings());
    try (WorkerPool pool = new WorkerPool(s.maxProcesses(), target)) {
      // Every worker runs every contender once, unmeasured, so that no point is measured on a
      // JVM that has yet to compile the code it runs.
      for (Contender contender : Contender.values()) {
        throughput(pool, new Results.Series(contender, false, 1), s.maxProcesses());
      }
      LeaseBench.hotKeyPerSecond(pool, s.maxProcesses(), s.warmupMillis());
      log.println("workers warmed up: " + s.maxProcesses() + " JVMs, every contender");
      List<Integer> counts = new ArrayList<>(s.processCounts());
      for (int c : s.pgbenchClients()) {
        if (!counts.contains(c)) {
          counts.add(c);
        }
      }
      for (int n : counts) {
        for (int round = 1; round <= s.repeats(); round++) {
          measureRound(pool, pgbench, n, round, r);
        }
      }
      measureAccuracy(pool, r);
    } finally {
      Files.deleteIfExists(work.resolve("pacer-reserve.pgbench.sql"));
      Files.deleteIfExists(work);
    }
  }

  /** One round at {@code n} processes: pgbench and every series, where {@code n} is theirs. */
  private void measureRound(WorkerPool pool, Pgbench pgbench, int n, int round, Results r)
      throws Exception {
    BenchSettings s = options.settings();
    if (s.pgbenchClients().contains(n)) {
      double tps = pgbench.run(n, s.pgbenchSeconds());
      r.recordPgbench(n, tps);
      log.printf(Locale.ROOT, "[%d, round %d] pgbench, same statement: %,.0f/s%n", n, round, tps);
    }
    if (s.processCounts().contains(n)) {
      double leased = LeaseBench.hotKeyPerSecond(pool, n, s.measureMillis());
      r.recordHotKeyLeased(n, leased);
      log.printf(
          Locale.ROOT,
          "[%d, round %d] Pacer, hot key, %d threads a process, combining and leases: %,.0f"
              + " permits/s%n",
          n,
          round,
          LeaseBench.THREADS,
          leased);
      List<Results.Series> order = seriesAt(n, r);
      // Each round starts at a different contender, so that none is always first.
      Collections.rotate(order, -(round - 1) * order.size() / s.repeats());
      for (Results.Series series : order) {
        Throughput t = throughput(pool, series, n);
        r.recordThroughput(series, n, t.perSecond());
        r.recordClientCpu(series, n, t.clientCpuMicrosPerCall());
        log.printf(
            Locale.ROOT,
            "[%d, round %d] %s, %s, %d key(s): %,.0f/s" + " (client CPU %.1f µs/call)%n",
            n,
            round,
            series.contender().label(),
            series.synchronousCommit() ? "synchronous_commit on" : "off",
            series.keys(),
            t.perSecond(),
            t.clientCpuMicrosPerCall());
      }
    }
  }

  private void measureAccuracy(WorkerPool pool, Results r) {
    r.pacerAccuracy = accuracy(pool, true);
    r.perProcessAccuracy = accuracy(pool, false);
    log.printf(
        Locale.ROOT,
        "accuracy: Pacer delivered %.3f × ceiling, peak window %d,"
            + " lateness p99 %.2f ms max %.2f ms; per-process %.3f × ceiling, peak %d%n",
        r.pacerAccuracy.deliveredRatio(),
        r.pacerAccuracy.peakWindow(),
        r.pacerAccuracy.latenessPercentileMillis(0.99),
        r.pacerAccuracy.latenessPercentileMillis(1.0),
        r.perProcessAccuracy.deliveredRatio(),
        r.perProcessAccuracy.peakWindow());
  }

  /** The fetch path, the enqueue, the frontier, the claim's cost and the per-host state. */
  private void measureFetching(Database.Target target, Results r) throws Exception {
    Path scratch = Files.createTempDirectory("pacer-bench-fetch");
    try {
      measureFetchAndEnqueue(target, scratch, r);
      measureFrontier(target, scratch, r);
    } finally {
      FetchThroughput.deleteTree(scratch);
    }
  }

  private void measureFetchAndEnqueue(Database.Target target, Path scratch, Results r)
      throws Exception {
    BenchSettings s = options.settings();
    r.fetch =
        FetchThroughput.measure(
            target, s.fetchUrls(), s.fetchThreads(), s.fetchRounds(), scratch, log);
    log.printf(
        Locale.ROOT,
        "fetch, no ceiling binding (%d URLs, %d threads): pacer fetch %,.0f/s (%.2f x the"
            + " bare loop), with --warc %,.0f/s (%.2f x), bare java.net.http %,.0f/s,"
            + " forcing each body %,.0f/s%n",
        r.fetch.urls(),
        r.fetch.threads(),
        r.fetch.median(FetchThroughput.Side.PACER_FILES),
        r.fetch.ratio(FetchThroughput.Side.PACER_FILES),
        r.fetch.median(FetchThroughput.Side.PACER_WARC),
        r.fetch.ratio(FetchThroughput.Side.PACER_WARC),
        r.fetch.median(FetchThroughput.Side.BARE),
        r.fetch.median(FetchThroughput.Side.BARE_FORCED));
    r.enqueue = EnqueueScale.measure(target, s.enqueueUrls(), s.enqueueHosts(), scratch);
    log.printf(
        Locale.ROOT,
        "enqueue: %,d URLs over %,d hosts in %.1f s (%,.0f URLs/s), %,d"
            + " new, again %,d new; child %s: peak heap %.1f MiB, peak RSS %.1f MiB%n",
        r.enqueue.urls(),
        r.enqueue.hosts(),
        r.enqueue.seconds(),
        r.enqueue.perSecond(),
        r.enqueue.added(),
        r.enqueue.addedAgain(),
        EnqueueScale.HEAP,
        r.enqueue.peakHeapBytes() / 1048576.0,
        r.enqueue.peakRssBytes() / 1048576.0);
  }

  /** The frontier's runs, the claim's cost by host count, and the per-host state held. */
  private void measureFrontier(Database.Target target, Path scratch, Results r) throws Exception {
    BenchSettings s = options.settings();
    r.frontier = FrontierBench.measure(target, s.frontier(), scratch, log);
    r.claimCost = ClaimCost.measure(target, s.claimCost());
    for (ClaimCost.Point p : r.claimCost) {
      log.printf(
          Locale.ROOT,
          "claim cost, %,d hosts (%,d items): p50 %.2f ms, p99 %.2f ms,"
              + " max %.2f ms over %,d claims, %d without an item%n",
          p.hosts(),
          p.items(),
          p.p50Millis(),
          p.p99Millis(),
          p.maxMillis(),
          p.claims(),
          p.withoutItem());
    }
    r.hostHeap = HostHeap.measure(target, s.hostHeap(), scratch);
    for (HostHeap.Point p : r.hostHeap.points()) {
      log.printf(
          Locale.ROOT,
          "per-host state, %,d hosts claimed (%d new a second): %,d"
              + " fetchers held, %.1f MiB retained%n",
          p.hosts(),
          s.hostHeap().perSecond(),
          p.fetchersHeld(),
          p.heapBytes() / 1048576.0);
    }
  }

  /** Writes bench-results.json, benchmarks.md and the charts, and logs each target. */
  private void writeOutputs(Results r) throws Exception {
    Files.writeString(
        options.out().resolve("bench-results.json"),
        Json.write(ResultsJson.of(r)),
        StandardCharsets.UTF_8);
    Report.write(r, options.out().resolve("benchmarks.md"));
    Charts.writeAll(r, options.out());
    for (Results.Target t : r.targets()) {
      log.printf(
          Locale.ROOT,
          "%-7s %s: %.3f (wanted %s %.3f)%n",
          t.met() ? "met" : "MISSED",
          t.description(),
          t.measured(),
          t.comparator(),
          t.threshold());
    }
  }

  /**
   * {@code --only latency}: the latency measurement alone, on its own server, written to {@code
   * bench-latency.json}.
   */
  Latency.Result runLatency() throws Exception {
    Files.createDirectories(options.out());
    double[] loadAtStart = Machine.loadAverage();
    String generatedAt = Instant.now().truncatedTo(ChronoUnit.SECONDS).toString();
    Latency.Result latency;
    String version;
    try (Database db =
        options.dbUrl() == null ? Database.embedded() : Database.external(options.dbUrl())) {
      version = db.serverVersion();
      db.createTables();
      latency = Latency.measure(db.target(), options.settings().latencySamples());
    }
    logLatency(latency);
    Map<String, Object> json = ResultsJson.latencyJson(generatedAt, latency);
    json.put("server_version", version);
    json.put("load_average_at_start", loadAtStart);
    json.put("load_average_at_end", Machine.loadAverage());
    Files.writeString(
        options.out().resolve("bench-latency.json"), Json.write(json), StandardCharsets.UTF_8);
    return latency;
  }

  /**
   * {@code --only hotkey}: pgbench of the one-turn statement, the hot key one turn a statement, and
   * the hot key with combining and leases, at the judged process count, each round in turn; the
   * ratios of the medians printed.
   */
  void runHotKey() throws Exception {
    BenchSettings s = options.settings();
    Path pgbenchPath = Pgbench.locate(options.pgbench());
    double[] load = Machine.loadAverage();
    log.printf(Locale.ROOT, "load average at start: %.2f %.2f %.2f%n", load[0], load[1], load[2]);
    Results r = new Results(s, Instant.now().truncatedTo(ChronoUnit.SECONDS).toString());
    int n = r.comparisonProcesses();
    Path work = Files.createTempDirectory("pacer-bench");
    try (Database db =
            options.dbUrl() == null ? Database.embedded() : Database.external(options.dbUrl());
        WorkerPool pool = new WorkerPool(n, db.target())) {
      db.createTables();
      Pgbench.makeRow(db.target());
      Pgbench pgbench = Pgbench.prepare(pgbenchPath, work, db.libpqSettings());
      Results.Series oneTurn = new Results.Series(Contender.PACER, false, 1);
      throughput(pool, oneTurn, n);
      LeaseBench.hotKeyPerSecond(pool, n, s.warmupMillis());
      for (int round = 1; round <= s.repeats(); round++) {
        r.recordPgbench(n, pgbench.run(n, s.pgbenchSeconds()));
        r.recordThroughput(oneTurn, n, throughput(pool, oneTurn, n).perSecond());
        r.recordHotKeyLeased(n, LeaseBench.hotKeyPerSecond(pool, n, s.measureMillis()));
      }
    } finally {
      Files.deleteIfExists(work.resolve("pacer-reserve.pgbench.sql"));
      Files.deleteIfExists(work);
    }
    log.printf(
        Locale.ROOT,
        "%d processes, median of %d round(s): pgbench %,.0f/s (rounds %s); hot key one turn a"
            + " statement %,.0f/s (%.3f x pgbench; rounds %s); with combining and leases %,.0f"
            + " permits/s (%.3f x pgbench; rounds %s)%n",
        n,
        s.repeats(),
        r.pgbench.get(n),
        r.pgbenchRounds.get(n),
        r.hotKey().get(n),
        r.ratioAt(r.hotKey(), r.pgbench, n),
        r.throughputRounds.get(new Results.Series(Contender.PACER, false, 1)).get(n),
        r.hotKeyLeased.get(n),
        r.ratioAt(r.hotKeyLeased, r.pgbench, n),
        r.hotKeyLeasedRounds.get(n));
    load = Machine.loadAverage();
    log.printf(Locale.ROOT, "load average at end: %.2f %.2f %.2f%n", load[0], load[1], load[2]);
  }

  private void logLatency(Latency.Result latency) {
    log.printf(
        Locale.ROOT,
        "latency: SELECT 1 p50 %.1f µs p99 %.1f µs; reservation p50 %.1f µs"
            + " p99 %.1f µs; ratio %.2f; bare upsert p50 %.1f µs"
            + " (reservation ÷ bare upsert %.2f)%n",
        latency.select1P50(),
        latency.select1P99(),
        latency.reserveP50(),
        latency.reserveP99(),
        latency.ratio(),
        latency.bareUpsertP50(),
        latency.bareUpsertRatio());
    for (Latency.Step step : latency.steps()) {
      log.printf(
          Locale.ROOT,
          "latency, statement alone: %s: p50 %.1f µs p99 %.1f µs (÷ bare upsert %.2f)%n",
          step.label(),
          step.p50(),
          step.p99(),
          step.p50() / latency.bareUpsertP50());
    }
  }

  /** The throughput series measured at {@code n} processes. */
  private List<Results.Series> seriesAt(int n, Results r) {
    BenchSettings s = options.settings();
    List<Results.Series> list = new ArrayList<>();
    list.add(new Results.Series(Contender.PACER, false, 1));
    list.add(new Results.Series(Contender.PACER, false, s.spreadKeys()));
    if (r.commitModeProcesses().contains(n)) {
      list.add(new Results.Series(Contender.PACER, true, 1));
      list.add(new Results.Series(Contender.PACER_KEY_VALUE, false, 1));
      list.add(new Results.Series(Contender.PACER_KEY_VALUE, true, 1));
    }
    for (Contender peer :
        new Contender[] {
          Contender.BUCKET4J_SELECT_FOR_UPDATE,
          Contender.BUCKET4J_ADVISORY_LOCK,
          Contender.NAIVE_ADVISORY
        }) {
      list.add(new Results.Series(peer, false, 1));
      list.add(new Results.Series(peer, true, 1));
    }
    return list;
  }

  private Throughput throughput(WorkerPool pool, Results.Series series, int n) {
    BenchSettings s = options.settings();
    List<String> prepare = new ArrayList<>();
    for (int p = 0; p < n; p++) {
      String[] keys = new String[series.keys()];
      for (int k = 0; k < keys.length; k++) {
        // Each process starts its rotation at a different key.
        keys[k] = series.keys() == 1 ? "bench-hot" : "bench-spread-" + ((p + k) % series.keys());
      }
      prepare.add(
          "throughput "
              + series.contender().name()
              + " "
              + series.synchronousCommit()
              + " "
              + String.join(",", keys)
              + " "
              + s.warmupMillis());
    }
    long total = 0;
    long cpuNanos = 0;
    for (String reply : pool.run(n, prepare, s.measureMillis())) {
      String[] parts = reply.trim().split(" ");
      total += Long.parseLong(parts[0]);
      cpuNanos += Long.parseLong(parts[1]);
    }
    return new Throughput(
        total / (s.measureMillis() / 1000.0), total == 0 ? Double.NaN : cpuNanos / 1000.0 / total);
  }

  /** One throughput point: calls per second and the clients' CPU per call (all workers, µs). */
  record Throughput(double perSecond, double clientCpuMicrosPerCall) {}

  private Accuracy accuracy(WorkerPool pool, boolean shared) {
    BenchSettings s = options.settings();
    String destination = "bench-accuracy-" + (shared ? "pacer-" : "local-") + System.nanoTime();
    List<String> prepare = new ArrayList<>();
    for (int p = 0; p < s.accuracyProcesses(); p++) {
      prepare.add(
          "accuracy "
              + (shared ? "pacer" : "local")
              + " false "
              + destination
              + " "
              + s.accuracyThreads()
              + " "
              + s.accuracyRate());
    }
    List<Long> times = new ArrayList<>();
    for (String reply : pool.run(s.accuracyProcesses(), prepare, s.accuracyMillis())) {
      String[] parts = reply.trim().split(" ");
      if (parts.length > 1) {
        for (String t : parts[1].split(",")) {
          times.add(Long.parseLong(t));
        }
      }
    }
    long[] micros = times.stream().mapToLong(Long::longValue).toArray();
    return Accuracy.of(s.accuracyProcesses(), s.accuracyThreads(), s.accuracyRate(), micros);
  }
}
