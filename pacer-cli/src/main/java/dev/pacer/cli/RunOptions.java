package dev.pacer.cli;

import dev.pacer.BackoffScope;
import dev.pacer.Destination;
import dev.pacer.Printable;
import dev.pacer.cli.model.BadInputException;
import dev.pacer.cli.run.RunSettings;
import dev.pacer.cli.run.WarcOutput;
import dev.pacer.jdkhttp.fetch.DestinationFetcher;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.regex.Pattern;
import picocli.CommandLine.Option;

/** The options of a run, shared by {@code fetch}, {@code demo} and the hidden {@code worker}. */
public final class RunOptions {

  /** How a run is paced. */
  public enum Pacing {
    /** One ceiling for the whole fleet, in PostgreSQL (the point of Pacer). */
    FLEET,
    /** Each process paces alone at the full rate: N processes make N times the ceiling. */
    PER_PROCESS
  }

  @Option(
      names = "--rate",
      paramLabel = "R",
      defaultValue = "1",
      description = "Fleet-wide ceiling in requests per second (default: ${DEFAULT-VALUE}).")
  double rate;

  @Option(
      names = "--concurrency",
      paramLabel = "C",
      defaultValue = "4",
      description = "Requests in flight at once per process (default: ${DEFAULT-VALUE}).")
  int concurrency;

  @Option(
      names = "--fleet-concurrency",
      paramLabel = "N",
      description =
          "Fleet-wide cap on requests in flight to the destination, across every"
              + " process (default: none). Each request holds a slot leased in PostgreSQL; a killed"
              + " process's slots are free within 10 s.")
  Integer fleetConcurrency;

  @Option(
      names = "--threads",
      paramLabel = "T",
      description = "Fetch threads per process (default: the concurrency).")
  Integer threads;

  @Option(
      names = "--max-dispatches",
      paramLabel = "N",
      description =
          "Fleet-wide cap on runners (pooled runs, conveyor workers) fetching the"
              + " destination at once (default: --processes, or 2). The degraded-mode divisor is"
              + " this + 1.")
  Integer maxDispatches;

  @Option(
      names = "--out",
      paramLabel = "DIR",
      defaultValue = "pacer-out",
      description = "Where bodies go: DIR/JOB/<2 hex>/<sha256 of URL> (default: ${DEFAULT-VALUE}).")
  Path out;

  @Option(
      names = "--fsync-each",
      description =
          "Force each body to disk before its item is recorded done (one device flush per"
              + " body). By default bodies are made durable in groups, about once a second, and"
              + " a run after an unclean stop verifies the last group's and fetches again any"
              + " that is missing or damaged.")
  boolean fsyncEach;

  @Option(
      names = "--warc",
      paramLabel = "PREFIX",
      description =
          "Write the bodies as WARC/1.1 (a request and a response record per fetch, gzip per"
              + " record) to segments PREFIX-<time>-<pid>-<serial>.warc.gz, one series per"
              + " process, instead of a file each under --out.")
  Path warc;

  @Option(
      names = "--warc-segment-bytes",
      paramLabel = "B",
      defaultValue = "" + WarcOutput.DEFAULT_SEGMENT_BYTES,
      description =
          "With --warc: a segment is closed, and a new one begun, once it holds B bytes"
              + " (default: 1 GiB).")
  long warcSegmentBytes = WarcOutput.DEFAULT_SEGMENT_BYTES;

  @Option(
      names = "--lease-seconds",
      paramLabel = "S",
      defaultValue = "60",
      description =
          "Lease of a claimed item; a dead worker's items return after it"
              + " (default: ${DEFAULT-VALUE}).")
  double leaseSeconds;

  @Option(
      names = "--outage-buffer",
      paramLabel = "S",
      defaultValue = "" + DEFAULT_OUTAGE_BUFFER_SECONDS,
      description =
          "Each worker keeps leased ahead the items it fetches in S seconds at the divided rate"
              + " (rate / (max-dispatches + 1)), and goes on fetching them while PostgreSQL is"
              + " away; 0 leases none ahead (default: ${DEFAULT-VALUE}).")
  double outageBufferSeconds = DEFAULT_OUTAGE_BUFFER_SECONDS;

  static final int DEFAULT_OUTAGE_BUFFER_SECONDS = 20;

  @Option(
      names = "--max-attempts",
      paramLabel = "N",
      defaultValue = "3",
      description = "Ordinary failures after which an item is failed (default: ${DEFAULT-VALUE}).")
  int maxAttempts;

  @Option(
      names = "--max-throttles",
      paramLabel = "N",
      defaultValue = "20",
      description =
          "Throttled answers after which an item is deferred to the next run"
              + " (default: ${DEFAULT-VALUE}).")
  int maxThrottles;

  @Option(
      names = "--max-load",
      paramLabel = "L",
      description = "HOST_LOAD bar: 1-minute load average ceiling (default: 4 x CPU cores).")
  Double maxLoad;

  @Option(
      names = "--max-rss-mb",
      paramLabel = "MB",
      defaultValue = "2048",
      description = "RSS bar: resident memory ceiling per process (default: ${DEFAULT-VALUE}).")
  long maxRssMb;

  @Option(
      names = "--max-body-bytes",
      paramLabel = "B",
      defaultValue = "" + DestinationFetcher.DEFAULT_MAX_BODY_BYTES,
      description = "Body size cap; a larger body is an ordinary failure (default: 32 MiB).")
  long maxBodyBytes;

  @Option(
      names = "--request-timeout",
      paramLabel = "S",
      defaultValue = "60",
      description =
          "Deadline for a whole response, body included, per request; a slower one"
              + " fails that item (default: ${DEFAULT-VALUE}).")
  double requestTimeoutSeconds = 60;

  @Option(
      names = "--max-redirects",
      paramLabel = "N",
      defaultValue = "5",
      description =
          "Redirect hops followed per item, each taking its own turn; hops to another"
              + " host are never followed (default: ${DEFAULT-VALUE}).")
  int maxRedirects = 5;

  @Option(
      names = "--backoff-scope",
      paramLabel = "SCOPE",
      defaultValue = "PROCESS",
      description =
          "What a 429 or 503 slows: PROCESS, the process that heard it (default), or"
              + " FLEET, every process, through a multiplier kept beside the shared cursor.")
  BackoffScope backoffScope = BackoffScope.PROCESS;

  @Option(
      names = "--max-retry-after",
      paramLabel = "S",
      defaultValue = "600",
      description =
          "The longest pause a Retry-After may impose on the whole fleet, in seconds"
              + " (default: ${DEFAULT-VALUE}).")
  double maxRetryAfterSeconds = 600;

  @Option(
      names = "--per-host",
      description =
          "Each URL's host is its own destination, with its own fleet-wide ceiling:"
              + " --rate per host, and --concurrency items in flight per host across the fleet,"
              + " unless --rates says otherwise. A claim takes the host whose turn comes first.")
  boolean perHost;

  @Option(
      names = "--robots",
      description =
          "With --per-host: obey each host's robots.txt, read once per host per job"
              + " through the host's own ceiling. Disallowed URLs are skipped; a Crawl-delay widens"
              + " the host's interval.")
  boolean robots;

  @Option(
      names = "--max-crawl-delay",
      paramLabel = "S",
      defaultValue = "30",
      description =
          "With --robots: a host whose robots.txt asks for a longer Crawl-delay is"
              + " skipped and reported (default: ${DEFAULT-VALUE}).")
  double maxCrawlDelaySeconds = 30;

  /** How per-host mode claims. */
  public enum ClaimOrder {
    /** The host whose turn comes first (the frontier). */
    TURN,
    /** Input order, then wait for the item's host's turn: head-of-line blocking, to show it. */
    FIFO
  }

  @Option(
      names = "--claim-order",
      hidden = true,
      defaultValue = "TURN",
      description = "With --per-host: TURN (default) or FIFO (input order, for demonstrations).")
  ClaimOrder claimOrder = ClaimOrder.TURN;

  @Option(
      names = "--pacing",
      hidden = true,
      defaultValue = "FLEET",
      description = "FLEET (default) or PER_PROCESS (the N x defect, for demonstrations).")
  Pacing pacing;

  @Option(
      names = "--degrade-divisor",
      paramLabel = "N",
      hidden = true,
      description =
          "The least degrade divisor, the destination's maxFetchingProcesses (default:"
              + " --max-dispatches + 1). For tests only: 1, with a cursor layout that counts no"
              + " processes, runs a fleet whose processes each pace at the full rate while"
              + " PostgreSQL is away, the defect the divisor prevents.")
  Integer degradeDivisor;

  int effectiveMaxDispatches(int processes) {
    if (maxDispatches != null) {
      return maxDispatches;
    }
    return processes > 0 ? processes : 2;
  }

  /** Validates every value; the message of the exception names the bad one. */
  RunSettings settings(String runId, String job, String destinationName, int processes)
      throws BadInputException {
    int dispatches = effectiveMaxDispatches(processes);
    require(dispatches >= 1, "--max-dispatches must be >= 1, got " + dispatches);
    int divisor = degradeDivisor != null ? degradeDivisor : dispatches + 1;
    require(divisor >= 1, "--degrade-divisor must be >= 1, got " + divisor);
    if (processes > 0) {
      require(processes <= 64, "--processes must be 1-64, got " + processes);
    }
    require(concurrency >= 1, "--concurrency must be >= 1, got " + concurrency);
    require(
        fleetConcurrency == null || fleetConcurrency >= 1,
        "--fleet-concurrency must be >= 1, got " + fleetConcurrency);
    int threadCount = threads != null ? threads : concurrency;
    require(threadCount >= 1 && threadCount <= 256, "--threads must be 1-256, got " + threadCount);
    double load = maxLoad != null ? maxLoad : 4.0 * Runtime.getRuntime().availableProcessors();
    checkLimits(load);
    Optional<WarcOutput> warcOutput = warcOutput();
    checkModes(destinationName);
    Destination destination = destination(destinationName, divisor);
    return new RunSettings(
        runId,
        job,
        destination,
        threadCount,
        out.toAbsolutePath().normalize(),
        Math.round(leaseSeconds * 1000),
        maxAttempts,
        maxThrottles,
        load,
        maxRssMb << 20,
        maxBodyBytes,
        Duration.ofMillis(Math.round(requestTimeoutSeconds * 1000)),
        maxRedirects,
        pacing == Pacing.PER_PROCESS,
        dispatches,
        perHost,
        claimOrder == ClaimOrder.FIFO,
        robots,
        Duration.ofMillis(Math.round(maxCrawlDelaySeconds * 1000)),
        fsyncEach,
        warcOutput,
        Duration.ofMillis(Math.round(outageBufferSeconds * 1000)));
  }

  /** The bars and limits of a worker, in the order {@link #settings} checks them. */
  private void checkLimits(double load) throws BadInputException {
    require(
        Double.isFinite(leaseSeconds) && leaseSeconds >= 1 && leaseSeconds <= 86_400,
        "--lease-seconds must be 1-86400, got " + leaseSeconds);
    require(
        Double.isFinite(outageBufferSeconds)
            && outageBufferSeconds >= 0
            && outageBufferSeconds <= 3600,
        "--outage-buffer must be 0-3600 seconds, got " + outageBufferSeconds);
    require(maxAttempts >= 1, "--max-attempts must be >= 1, got " + maxAttempts);
    require(maxThrottles >= 1, "--max-throttles must be >= 1, got " + maxThrottles);
    require(Double.isFinite(load) && load > 0, "--max-load must be > 0, got " + load);
    require(maxRssMb >= 16, "--max-rss-mb must be >= 16, got " + maxRssMb);
    require(maxBodyBytes >= 0, "--max-body-bytes must be >= 0, got " + maxBodyBytes);
    require(
        Double.isFinite(requestTimeoutSeconds)
            && requestTimeoutSeconds >= 0.1
            && requestTimeoutSeconds <= 86_400,
        "--request-timeout must be 0.1-86400 seconds, got " + requestTimeoutSeconds);
    require(
        maxRedirects >= 0 && maxRedirects <= 20,
        "--max-redirects must be 0-20, got " + maxRedirects);
    require(
        Double.isFinite(maxRetryAfterSeconds)
            && maxRetryAfterSeconds >= 1
            && maxRetryAfterSeconds <= 86_400,
        "--max-retry-after must be 1-86400 seconds, got " + maxRetryAfterSeconds);
    require(warcSegmentBytes > 0, "--warc-segment-bytes must be > 0, got " + warcSegmentBytes);
  }

  private Optional<WarcOutput> warcOutput() throws BadInputException {
    Optional<WarcOutput> warcOutput = Optional.empty();
    if (warc != null) {
      Path prefix = warc.toAbsolutePath().normalize();
      require(
          prefix.getFileName() != null
              && !warc.toString().endsWith("/")
              && !Files.isDirectory(prefix),
          "--warc takes a prefix for the segments' names (DIR/NAME), not a directory, got "
              + Printable.quote(warc.toString()));
      warcOutput = Optional.of(new WarcOutput(prefix, warcSegmentBytes));
    }
    return warcOutput;
  }

  /** The options that choose a mode (robots, per host), and those that go with one only. */
  private void checkModes(String destinationName) throws BadInputException {
    require(!robots || perHost, "--robots reads each host's robots.txt; it needs --per-host");
    require(
        !robots || claimOrder == ClaimOrder.TURN,
        "--robots needs the frontier's claims; it"
            + " cannot be combined with --claim-order "
            + claimOrder);
    require(
        Double.isFinite(maxCrawlDelaySeconds)
            && maxCrawlDelaySeconds >= 0
            && maxCrawlDelaySeconds <= 86_400,
        "--max-crawl-delay must be 0-86400 seconds, got " + maxCrawlDelaySeconds);
    if (perHost) {
      require(
          pacing == Pacing.FLEET,
          "--per-host paces every host fleet-wide; it cannot be"
              + " combined with --pacing "
              + pacing);
      require(
          fleetConcurrency == null,
          "--fleet-concurrency caps one destination; with --per-host"
              + " each host's cap on items in flight is --concurrency (or its line in --rates)");
    } else {
      checkDestinationName(destinationName);
    }
  }

  /** The destination, with the library's message naming the command line's options. */
  private Destination destination(String destinationName, int divisor) throws BadInputException {
    try {
      Destination.Builder builder =
          Destination.builder(destinationName)
              .ratePerSecond(rate)
              .maxConcurrency(concurrency)
              .maxFetchingProcesses(divisor)
              .backoffScope(backoffScope)
              .maxRetryAfter(Duration.ofMillis(Math.round(maxRetryAfterSeconds * 1000)));
      if (fleetConcurrency != null) {
        builder.maxConcurrencyFleetWide(fleetConcurrency);
      }
      return builder.build();
    } catch (IllegalArgumentException e) {
      throw new BadInputException(
          e.getMessage()
              .replace("ratePerSecond", "--rate")
              .replace("maxConcurrency", "--concurrency")
              .replace("name must", "destination name must"));
    }
  }

  /** The same options, as arguments for a worker process. */
  static List<String> workerArgs(RunSettings s) {
    List<String> args = new ArrayList<>(everyWorkerArgs(s));
    if (s.fsyncEach()) {
      args.add("--fsync-each");
    }
    s.warc()
        .ifPresent(
            w ->
                args.addAll(
                    List.of(
                        "--warc",
                        w.prefix().toString(),
                        "--warc-segment-bytes",
                        Long.toString(w.segmentBytes()))));
    if (s.perHost()) {
      args.addAll(List.of("--per-host", "--claim-order", s.fifoClaims() ? "FIFO" : "TURN"));
    }
    if (s.robots()) {
      args.addAll(
          List.of(
              "--robots",
              "--max-crawl-delay",
              Double.toString(s.maxCrawlDelay().toMillis() / 1000.0)));
    }
    s.destination()
        .maxConcurrencyFleetWide()
        .ifPresent(n -> args.addAll(List.of("--fleet-concurrency", Integer.toString(n))));
    return args;
  }

  /** The options that every worker is given. */
  private static List<String> everyWorkerArgs(RunSettings s) {
    return List.of(
        "--job",
        s.job(),
        "--destination",
        s.destination().name(),
        "--run-id",
        s.runId(),
        "--rate",
        Double.toString(s.destination().ratePerSecond()),
        "--concurrency",
        Integer.toString(s.destination().maxConcurrency()),
        "--threads",
        Integer.toString(s.threads()),
        "--max-dispatches",
        Integer.toString(s.maxDispatches()),
        "--degrade-divisor",
        Integer.toString(s.destination().maxFetchingProcesses()),
        "--out",
        s.out().toString(),
        "--lease-seconds",
        Double.toString(s.leaseMillis() / 1000.0),
        "--outage-buffer",
        Double.toString(s.outageBuffer().toMillis() / 1000.0),
        "--max-attempts",
        Integer.toString(s.maxAttempts()),
        "--max-throttles",
        Integer.toString(s.maxThrottles()),
        "--max-load",
        Double.toString(s.maxLoad()),
        "--max-rss-mb",
        Long.toString(s.maxRssBytes() >> 20),
        "--max-body-bytes",
        Long.toString(s.maxBodyBytes()),
        "--request-timeout",
        Double.toString(s.requestTimeout().toMillis() / 1000.0),
        "--max-redirects",
        Integer.toString(s.maxRedirects()),
        "--pacing",
        s.perProcessPacing() ? "PER_PROCESS" : "FLEET",
        "--backoff-scope",
        s.destination().backoffScope().name(),
        "--max-retry-after",
        Double.toString(s.destination().maxRetryAfter().toMillis() / 1000.0));
  }

  /**
   * The command line takes destination names from a narrower set than the library (any printable
   * characters): letters, digits and {@code . _ : - [ ]}, which covers host names, host:port and
   * IPv6 literals. A name is typed into shells and shown in logs and status tables, where quotes
   * and the like only cause trouble.
   */
  static void checkDestinationName(String name) throws BadInputException {
    try {
      Destination.validateName(name);
    } catch (IllegalArgumentException e) {
      throw new BadInputException("destination " + e.getMessage());
    }
    require(
        DESTINATION_NAME.matcher(name).matches(),
        "destination name may hold only letters, digits and . _ : - [ ], got "
            + Printable.quote(name));
  }

  private static final Pattern DESTINATION_NAME = Pattern.compile("[A-Za-z0-9._:\\[\\]-]+");

  /**
   * The name of a per-host job's runs, standing for its hosts where a run has one name: the job's
   * row, its workers' rows and its dispatch slots.
   */
  static String perHostName(String job) {
    return "per-host:" + job;
  }

  /** A host's ceiling unless the rates file names it: --rate, and --concurrency in flight. */
  dev.pacer.cli.db.FrontierStore.HostCeiling defaultCeiling() {
    return new dev.pacer.cli.db.FrontierStore.HostCeiling(rate, concurrency);
  }

  static void require(boolean ok, String message) throws BadInputException {
    if (!ok) {
      throw new BadInputException(message);
    }
  }
}
