package dev.pacer.cli;

import dev.pacer.cli.db.CursorPlace;
import dev.pacer.cli.db.EmbeddedDatabase;
import dev.pacer.cli.db.WorkState;
import dev.pacer.cli.demo.DemoServer;
import dev.pacer.cli.demo.TimelinePlot;
import dev.pacer.cli.model.UrlList;
import dev.pacer.cli.run.RunSettings;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.sql.SQLException;
import java.time.Duration;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code pacer demo}: a local destination that enforces its own ceiling (429 above it), 3 worker
 * processes x 6 threads fetching from it at a 7/s fleet ceiling for about 30 s, then the aggregate
 * rate, the 429 count and a PNG timeline. With {@code --per-process} each process paces alone, and
 * the N x defect shows. With {@code --hosts N}, N local hosts are paced per host: see {@link
 * ManyHostDemo}.
 */
@Command(
    name = "demo",
    mixinStandardHelpOptions = true,
    description = {
      "Show the fleet-wide ceiling at work, in about 30 s.",
      "Runs 3 worker processes x 6 threads against a local destination that answers 429 above"
          + " its 7/s ceiling; prints the aggregate rate and the 429 count, and writes a PNG"
          + " timeline. --per-process paces each process alone, to show the N x defect;"
          + " --hosts N paces N local hosts, each at its own ceiling."
    })
public final class DemoCommand implements Callable<Integer> {

  @Spec CommandSpec spec;

  @Option(
      names = "--per-process",
      description = "Pace each process alone (in memory), as a per-process limiter would.")
  boolean perProcess;

  @Option(
      names = "--seconds",
      defaultValue = "30",
      paramLabel = "S",
      description = "About how long the run lasts (default: ${DEFAULT-VALUE}).")
  int seconds;

  @Option(
      names = "--rate",
      defaultValue = "7",
      paramLabel = "R",
      description =
          "The ceiling, for the fleet and at the destination" + " (default: ${DEFAULT-VALUE}).")
  double rate;

  @Option(
      names = "--processes",
      defaultValue = "3",
      paramLabel = "P",
      description = "Worker processes (default: ${DEFAULT-VALUE}).")
  int processes;

  @Option(
      names = "--threads",
      defaultValue = "6",
      paramLabel = "T",
      description = "Fetch threads per worker (default: ${DEFAULT-VALUE}).")
  int threads;

  @Option(
      names = "--hosts",
      paramLabel = "N",
      description =
          "Many-host mode: N local hosts (127.0.0.2 and on), each a destination with a"
              + " ceiling of its own (--rate, half of it, a quarter of it, in turn, rounded) that"
              + " answers 429 above it, paced per host for the whole fleet; the PNG has a lane per"
              + " host.")
  Integer hosts;

  @Option(names = "--no-progress", description = "No progress bar, even on a terminal.")
  boolean noProgress;

  @Option(
      names = "--max-load",
      paramLabel = "L",
      description = "HOST_LOAD bar: 1-minute load average ceiling (default: 4 x CPU cores).")
  Double maxLoad;

  @Mixin DbOptions dbOptions;
  @Mixin CursorOptions cursorOptions;

  @Override
  public Integer call() throws Exception {
    System.setProperty("java.awt.headless", "true");
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter err = spec.commandLine().getErr();
    RunOptions.require(seconds >= 1 && seconds <= 3600, "--seconds must be 1-3600, got " + seconds);
    RunOptions.require(
        processes >= 1 && processes <= 16, "--processes must be 1-16, got " + processes);
    Path home = dbOptions.dataDir != null ? dbOptions.dataDir : EmbeddedDatabase.defaultDirectory();
    String job =
        "demo-"
            + LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss"))
            + (perProcess ? "-per-process" : "")
            + (hosts != null ? "-hosts" : "");
    RunOptions options = runOptions(home);
    CursorPlace cursorPlace = cursorOptions.place();
    Path png = home.resolve("demo").resolve(job + ".png").toAbsolutePath();
    if (hosts != null) {
      return runManyHosts(options, cursorPlace, job, png, out, err);
    }
    RunSettings settings =
        options.settings(UUID.randomUUID().toString(), job, "pacer-demo", processes);
    return runOneDestination(settings, cursorPlace, job, png, out, err);
  }

  /** The options of a {@code pacer run} that the demo's settings are made from. */
  private RunOptions runOptions(Path home) {
    RunOptions options = new RunOptions();
    options.rate = rate;
    options.concurrency = threads;
    options.threads = threads;
    options.maxDispatches = processes;
    options.out = home.resolve("demo");
    options.leaseSeconds = 60;
    options.maxAttempts = 3;
    options.maxThrottles = 50;
    options.maxRssMb = 2048;
    options.maxLoad = maxLoad;
    options.maxBodyBytes = 1 << 20;
    options.pacing = perProcess ? RunOptions.Pacing.PER_PROCESS : RunOptions.Pacing.FLEET;
    return options;
  }

  private int runManyHosts(
      RunOptions options,
      CursorPlace cursorPlace,
      String job,
      Path png,
      PrintWriter out,
      PrintWriter err)
      throws Exception {
    RunOptions.require(
        !perProcess,
        "--hosts paces each host for the whole fleet; it cannot be"
            + " combined with --per-process");
    RunOptions.require(
        cursorPlace.layout() == CursorPlace.Layout.PACER,
        "--hosts keeps its"
            + " hosts' cursors in Pacer's table; it cannot use --cursor-layout "
            + cursorPlace.layout().option());
    RunOptions.require(
        hosts >= 2 && hosts <= ManyHostDemo.MAX_HOSTS,
        "--hosts must be 2-" + ManyHostDemo.MAX_HOSTS + ", got " + hosts);
    ManyHostDemo demo = new ManyHostDemo(hosts, seconds, rate);
    options.perHost = true;
    RunSettings settings =
        options.settings(UUID.randomUUID().toString(), job, RunOptions.perHostName(job), processes);
    try (WorkState store = dbOptions.connect(cursorPlace)) {
      return demo.run(store, settings, processes, !noProgress, png, out, err);
    }
  }

  private int runOneDestination(
      RunSettings settings,
      CursorPlace cursorPlace,
      String job,
      Path png,
      PrintWriter out,
      PrintWriter err)
      throws Exception {
    // A strict destination: a token bucket holding 2 tokens, the ceiling plus one request of
    // slack, which is the bound Pacer's tests hold the fleet to at the door.
    try (WorkState store = dbOptions.connect(cursorPlace);
        DemoServer server = new DemoServer(rate, 2)) {
      List<String> urls = new ArrayList<>();
      int items = (int) Math.round(seconds * rate);
      for (int i = 1; i <= items; i++) {
        urls.add(server.baseUrl() + "/item/" + i);
      }
      err.printf(
          Locale.ROOT,
          "pacer demo: %d items, %d worker processes x %d threads, ceiling"
              + " %.1f/s %s; the destination (%s) answers 429 above %.1f/s%n",
          items,
          processes,
          threads,
          rate,
          perProcess ? "PER PROCESS (each process paces alone)" : "for the whole fleet",
          server.baseUrl(),
          rate);
      // Per-process pacing draws 429s, and the backoff that follows (x16 per process) would
      // drag the run on for minutes: the demo stops it 15 s after its nominal length.
      Duration limit = Duration.ofSeconds(seconds + 15L);
      int code =
          new JobRun(store, out, err, !noProgress)
              .run(UrlList.of(urls), settings, processes, Optional.of(limit));

      List<DemoServer.Arrival> arrivals = server.arrivals();
      if (arrivals.size() < 2) {
        err.println(
            "pacer demo: the destination saw "
                + arrivals.size()
                + " request(s); nothing"
                + " to report");
        return code == Main.EXIT_OK ? Main.EXIT_ERROR : code;
      }
      report(store, server, arrivals, job, items, png, out);
      return code;
    }
  }

  /** Writes the timeline and the arrivals, and prints what the destination saw. */
  private void report(
      WorkState store,
      DemoServer server,
      List<DemoServer.Arrival> arrivals,
      String job,
      int items,
      Path png,
      PrintWriter out)
      throws IOException, SQLException {
    double span = (arrivals.get(arrivals.size() - 1).nanos() - arrivals.get(0).nanos()) / 1e9;
    long refused = arrivals.stream().filter(a -> a.status() == 429).count();
    Map<String, Integer> perWorker = new TreeMap<>();
    arrivals.forEach(a -> perWorker.merge(a.worker(), 1, Integer::sum));
    TimelinePlot.write(
        arrivals,
        rate,
        String.format(
            Locale.ROOT,
            "pacer demo%s: %d processes x %d threads, ceiling %.1f/s, %d x 429",
            perProcess ? " --per-process" : "",
            processes,
            threads,
            rate,
            refused),
        png);
    int peak = printRates(arrivals, span, out);
    StringBuilder split = new StringBuilder();
    perWorker.forEach(
        (w, n) ->
            split
                .append(split.length() == 0 ? "" : ", ")
                .append("pid ")
                .append(w)
                .append(": ")
                .append(n));
    out.println("Requests per worker process: " + split);
    out.println("429 answers from the destination: " + refused);
    out.println("Timeline (PNG): " + png);
    Path csv = png.resolveSibling(job + ".csv");
    DemoServer.writeCsv(List.of(server), csv);
    out.println("Arrivals (CSV): " + csv);
    printVerdict(span, peak, refused, items, store.items().counts(job).done(), out);
  }

  /** Prints the pacing, the aggregate rate and the busiest second; returns the busiest second. */
  private int printRates(List<DemoServer.Arrival> arrivals, double span, PrintWriter out) {
    out.printf(
        Locale.ROOT,
        "Pacing: %s%n",
        perProcess
            ? "per process (each of the " + processes + " processes paces alone at " + rate + "/s)"
            : "fleet-wide (one cursor in PostgreSQL for all " + processes + " processes)");
    int peak = DemoServer.busiestOneSecond(arrivals);
    out.printf(
        Locale.ROOT,
        "Aggregate rate at the destination: %.2f requests/s over %.1f s"
            + " (%d requests; ceiling %.1f/s)%n",
        (arrivals.size() - 1) / span,
        span,
        arrivals.size(),
        rate);
    out.printf(
        Locale.ROOT, "Busiest 1-s window: %d requests (%.1f x the ceiling)%n", peak, peak / rate);
    return peak;
  }

  private void printVerdict(
      double span, int peak, long refused, int items, long done, PrintWriter out) {
    out.printf(
        Locale.ROOT,
        perProcess
            ? "Each process kept %.1f/s by its own count; together they sent %d requests in their"
                + " busiest second (%.1f x the ceiling), the destination refused %d, and the"
                + " backoff that followed (up to x16 per process) slowed the run to a crawl:"
                + " %8$d of %7$d items done in %5$.0f s. Compare with ./pacer demo.%n"
            : "One cursor for all %6$d processes: %2$d requests in the busiest second (%3$.1f x"
                + " the ceiling), %4$d refused, %8$d of %7$d items done in %5$.0f s.%n",
        rate,
        peak,
        peak / rate,
        refused,
        span,
        processes,
        items,
        done);
  }
}
