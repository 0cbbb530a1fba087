package dev.pacer.bench;

import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;

/** What {@code ./bench} runs, parsed from its command line ({@link #USAGE}). */
record BenchOptions(
    BenchSettings settings, String dbUrl, Path out, String pgbench, BenchOptions.Section only) {

  static final String USAGE =
      String.join(
          "\n",
          "usage: ./bench [--db JDBC_URL] [--out DIR] [--tiny] [--pgbench PATH]",
          "               [--processes 1,2,4,8] [--measure-ms N]",
          "               [--only latency|server-cpu|model|leases|hotkey]",
          "",
          "  --db JDBC_URL    measure this server (user and password in the URL); default: an",
          "                   embedded PostgreSQL started for the run. On that server the run",
          "                   drops and creates bench_bucket4j_sfu, bench_bucket4j_advisory,",
          "                   bench_naive_cursor and bench_cache, and writes bench-* rows in",
          "                   pacer_cursor",
          "  --out DIR        where to write bench-results.json, benchmarks.md and the charts",
          "                   (default: docs)",
          "  --tiny           every measurement, briefly (a minute or two): a smoke run",
          "  --pgbench PATH   the pgbench binary (default: PATH, then /usr/lib/postgresql/*/bin)",
          "  --processes LIST worker JVM counts for throughput (and pgbench client counts)",
          "  --measure-ms N   counted window of each throughput point",
          "  --only latency   only the latency from one thread (a minute or so): writes",
          "                   bench-latency.json to the output directory and leaves",
          "                   bench-results.json, benchmarks.md and the charts alone",
          "  --only server-cpu the server's CPU time per statement on an embedded PostgreSQL",
          "                   (ServerCpu: three rounds, a few minutes; Linux; run it pinned,",
          "                   taskset -c 1 ./bench ...), printed, nothing written",
          "  --only model     the scaling model's tables (docs/scaling.md), printed in a",
          "                   second or two, no server started, nothing written",
          "  --only leases    only one key at 100,000/s from 4 processes x 16 threads,",
          "                   with leases of turns and without (a minute or so): prints",
          "                   the figures and writes nothing",
          "  --only hotkey    only P2 at the judged process count (4, or --processes N):",
          "                   pgbench of the one-turn statement, Pacer's hot key one turn a",
          "                   statement, and with combining and leases, in turn, each round",
          "                   of the run's repeats: prints the figures and writes nothing");

  /** A part of the run that {@code --only} runs by itself. */
  enum Section {
    /** {@link Latency}: SELECT 1, the reservation, the bare upsert and the statement's steps. */
    LATENCY,
    /** {@link ServerCpu}: the server's CPU time per statement. */
    SERVER_CPU,
    /** {@link dev.pacer.bench.model.ScalingModel}: the simulation's tables. */
    MODEL,
    /** {@link LeaseBench}: one key at a ceiling beyond one row, with leases and without. */
    LEASES,
    /** P2: the hot key one turn a statement and with leases, beside pgbench. */
    HOT_KEY
  }

  static BenchOptions parse(String[] args) {
    BenchSettings settings = BenchSettings.full();
    String db = null;
    Path out = Path.of("docs");
    String pgbench = null;
    List<Integer> processes = null;
    Long measureMillis = null;
    boolean tiny = false;
    Section only = null;
    for (int i = 0; i < args.length; i++) {
      String a = args[i];
      switch (a) {
        case "--help", "-h" -> {
          return null;
        }
        case "--tiny" -> tiny = true;
        case "--db" -> db = value(args, ++i, a);
        case "--out" -> out = Path.of(value(args, ++i, a));
        case "--pgbench" -> pgbench = value(args, ++i, a);
        case "--only" -> only = onlySection(value(args, ++i, a));
        case "--processes" -> processes = processCounts(value(args, ++i, a));
        case "--measure-ms" -> measureMillis = measureMillis(value(args, ++i, a));
        default -> throw new IllegalArgumentException("unknown argument: " + a);
      }
    }
    if (tiny) {
      settings = BenchSettings.tiny();
    }
    if (processes != null || measureMillis != null) {
      settings = withCounts(settings, processes, measureMillis);
    }
    return new BenchOptions(settings, db, out, pgbench, only);
  }

  private static Section onlySection(String value) {
    return switch (value) {
      case "latency" -> Section.LATENCY;
      case "server-cpu" -> Section.SERVER_CPU;
      case "model" -> Section.MODEL;
      case "leases" -> Section.LEASES;
      case "hotkey" -> Section.HOT_KEY;
      default ->
          throw new IllegalArgumentException(
              "--only: latency, server-cpu, model, leases or hotkey, got " + value);
    };
  }

  private static List<Integer> processCounts(String value) {
    List<Integer> processes;
    try {
      processes = Arrays.stream(value.split(",")).map(String::trim).map(Integer::parseInt).toList();
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("--processes wants a list like 1,2,4,8");
    }
    if (processes.stream().anyMatch(n -> n < 1 || n > 64)) {
      throw new IllegalArgumentException("--processes: each count must be 1..64");
    }
    return processes;
  }

  private static long measureMillis(String value) {
    long measureMillis;
    try {
      measureMillis = Long.parseLong(value);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("--measure-ms wants a number of milliseconds");
    }
    if (measureMillis < 100) {
      throw new IllegalArgumentException("--measure-ms must be at least 100");
    }
    return measureMillis;
  }

  /** {@code settings} with the process counts and the measured window given, where given. */
  private static BenchSettings withCounts(
      BenchSettings settings, List<Integer> processes, Long measureMillis) {
    List<Integer> p = processes != null ? processes : settings.processCounts();
    return new BenchSettings(
        p,
        settings.warmupMillis(),
        measureMillis != null ? measureMillis : settings.measureMillis(),
        settings.repeats(),
        settings.spreadKeys(),
        settings.latencySamples(),
        p,
        settings.pgbenchSeconds(),
        settings.accuracyProcesses(),
        settings.accuracyThreads(),
        settings.accuracyRate(),
        settings.accuracyMillis(),
        settings.overheadRuns(),
        settings.fetchUrls(),
        settings.fetchThreads(),
        settings.fetchRounds(),
        settings.enqueueUrls(),
        settings.enqueueHosts(),
        settings.frontier(),
        settings.claimCost(),
        settings.hostHeap());
  }

  private static String value(String[] args, int i, String flag) {
    if (i >= args.length) {
      throw new IllegalArgumentException(flag + " needs a value");
    }
    return args[i];
  }
}
