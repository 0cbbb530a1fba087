package dev.pacer.cli;

import dev.pacer.cli.db.Database;
import dev.pacer.cli.db.ItemStore;
import dev.pacer.cli.db.TripStore;
import dev.pacer.cli.db.WorkState;
import dev.pacer.cli.db.RequestLog;
import dev.pacer.cli.run.Conveyor;
import dev.pacer.cli.run.Envelope;
import dev.pacer.cli.run.HaltReason;
import dev.pacer.cli.run.RunSettings;
import dev.pacer.cli.run.Summary;
import dev.pacer.cli.run.UrlList;
import dev.pacer.cli.run.Worker;
import dev.pacer.cli.ui.Progress;
import dev.pacer.internal.Printable;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintWriter;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.sql.SQLException;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.regex.Pattern;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

/** {@code pacer fetch}: enqueue a URL list as a job and fetch it under the fleet-wide ceiling. */
@Command(name = "fetch", mixinStandardHelpOptions = true,
    description = {
      "Fetch a list of URLs under the destination's fleet-wide ceiling.",
      "INPUT has one URL per line ('-' for stdin). The list becomes a job in PostgreSQL:"
          + " re-running it fetches only what is left. The last line on stdout is a JSON summary.",
      "Exit: 0 finished, 3 halted by the operating envelope (or refused: unacknowledged trip),"
          + " 2 bad usage or input, 1 unexpected error."
    })
public final class FetchCommand implements Callable<Integer> {

  static final Pattern JOB_NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,63}");

  @Spec CommandSpec spec;

  @Parameters(index = "0", paramLabel = "INPUT", description = "File of URLs, or '-' for stdin.")
  String input;

  @Option(names = "--job", paramLabel = "NAME",
      description = "Job name (default: the input file's name without extension; 'stdin').")
  String job;

  @Option(names = "--destination", paramLabel = "NAME",
      description = "Destination name: the key of the ceiling (default: the URLs' host).")
  String destination;

  @Option(names = "--processes", paramLabel = "P", defaultValue = "0",
      description = "Run P worker processes (the conveyor) instead of one pooled process.")
  int processes;

  @Option(names = "--no-progress", description = "No progress bar, even on a terminal.")
  boolean noProgress;

  @Mixin RunOptions run;
  @Mixin DbOptions dbOptions;

  @Override
  public Integer call() throws Exception {
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter err = spec.commandLine().getErr();
    UrlList urls = readInput(err);
    String jobName = jobName();
    String destinationName = destinationName(urls);
    RunOptions.require(processes >= 0, "--processes must be >= 0, got " + processes);
    String runId = UUID.randomUUID().toString();
    RunSettings settings = run.settings(runId, jobName, destinationName, processes, processes > 0);
    try (WorkState store = dbOptions.connect()) {
      return fetch(store, urls, settings, out, err, !noProgress);
    }
  }

  /** The run itself, on a connected store: shared with {@code pacer demo}. */
  int fetch(WorkState store, UrlList urls, RunSettings settings, PrintWriter out, PrintWriter err,
      boolean progress) throws Exception {
    return fetch(store, urls, settings, out, err, progress, null);
  }

  /**
   * The run itself. With a {@code timeLimit} (the demo's; conveyor only), workers still running
   * then are stopped and the items left open stay for a later run.
   */
  int fetch(WorkState store, UrlList urls, RunSettings settings, PrintWriter out, PrintWriter err,
      boolean progress, java.time.Duration timeLimit) throws Exception {
    Database database = store.database();
    String jobName = settings.job();
    Optional<TripStore.Trip> trip = store.trips().openTrip(jobName);
    if (trip.isPresent()) {
      TripStore.Trip t = trip.get();
      err.println("pacer: job " + jobName + " is halted by trip #" + t.id() + " (" + t.bar() + ": "
          + t.figures() + ", " + t.trippedAt() + " on " + t.host() + " pid " + t.pid()
          + "). Acknowledge it first: pacer trips ack " + t.id() + " --note TEXT");
      return Main.EXIT_HALTED;
    }
    Optional<String> existing = store.jobs().jobDestination(jobName);
    if (existing.isPresent() && !existing.get().equals(settings.destination().name())) {
      throw new BadInputException("job " + jobName + " belongs to destination " + existing.get()
          + ", not " + settings.destination().name() + "; use another --job");
    }
    int added = store.jobs().enqueue(jobName, settings.destination().name(),
        settings.destination().ratePerSecond(), urls.urls());
    store.items().reviveDeferred(jobName);
    err.println("pacer: job " + jobName + ": " + urls.urls().size() + " URL(s) in the input, "
        + added + " new; destination " + settings.destination().name() + " at "
        + settings.destination().ratePerSecond()
        + (settings.perProcessPacing() ? "/s PER PROCESS" : "/s fleet-wide") + "; database "
        + database.redactedUrl() + (processes > 0
            ? "; " + processes + " worker process(es) x " + settings.threads() + " thread(s)"
            : "; one process x " + settings.threads() + " thread(s)"));
    long started = System.nanoTime();
    Optional<HaltReason> halted;
    ItemStore.Counts counts = null;
    RequestLog.DoorFigures door = RequestLog.DoorFigures.NONE;
    Optional<TripStore.Trip> tripped = Optional.empty();
    double elapsed;
    try (RequestLog requestLog = new RequestLog(database)) {
      Instant runStart = requestLog.databaseNow();
      Progress bar = Progress.startIfInteractive(store, jobName, settings.runId(), out, progress);
      try {
        halted = processes > 0 ? conveyor(database, settings, timeLimit)
            : pooled(database, settings);
      } finally {
        if (bar != null) {
          bar.close();
        }
      }
      elapsed = (System.nanoTime() - started) / 1e9;
      // The work state is in PostgreSQL: if it is away just now, wait for it (up to 2 minutes)
      // rather than end an hours-long run without its summary.
      for (int attempt = 1; counts == null; attempt++) {
        try {
          counts = store.items().counts(jobName);
          door = requestLog.destinationSince(settings.destination().name(), runStart);
          // A trip open now was recorded during this run (an open trip refuses a run at its
          // start): by this process, one of its workers, or an invocation cooperating on the job.
          tripped = store.trips().openTrip(jobName);
        } catch (SQLException e) {
          counts = null;
          if (attempt == 120) {
            throw e;
          }
          if (attempt == 1) {
            err.println("pacer: waiting for PostgreSQL to report the job's final state: "
                + database.describe(e));
          }
          Thread.sleep(1000);
        }
      }
    }
    if (tripped.isPresent()) {
      halted = Optional.of(tripped.get().bar());
    }
    double ceiling = settings.destination().ratePerSecond();
    err.println("pacer: at destination " + settings.destination().name() + " during this run: "
        + Summary.describe(door, ceiling));
    Summary summary = new Summary(jobName, counts.done(), counts.failed(), counts.deferred(),
        counts.pending(), halted, elapsed, ceiling,
        door);
    out.println(summary.toJson());
    out.flush();
    if (halted.isPresent()) {
      return Main.EXIT_HALTED;
    }
    if (timedOut) {
      err.println("pacer: time limit reached: workers stopped; " + counts.open() + " item(s) of job "
          + jobName + " left open for a later run");
      return Main.EXIT_OK;
    }
    if (counts.open() > 0) {
      err.println("pacer: " + counts.open() + " item(s) of job " + jobName + " are still open"
          + " although every worker has exited; run the same command again to finish them");
      return Main.EXIT_ERROR;
    }
    return Main.EXIT_OK;
  }

  private Optional<HaltReason> pooled(Database database, RunSettings settings) throws InterruptedException {
    Worker worker = new Worker(database, settings,
        Envelope.forThisProcess(settings.maxLoad(), settings.maxRssBytes()));
    return worker.run().halted();
  }

  private Optional<HaltReason> conveyor(Database database, RunSettings settings, java.time.Duration timeLimit)
      throws IOException, InterruptedException, SQLException {
    Conveyor conveyor = new Conveyor(database, RunOptions.workerArgs(settings), processes);
    conveyor.start();
    List<Integer> codes;
    try {
      codes = conveyor.await(timeLimit);
    } catch (InterruptedException e) {
      conveyor.stop();
      throw e;
    }
    timedOut = conveyor.timedOut();
    return codes.contains(Main.EXIT_HALTED) ? Optional.of(HaltReason.HALTED)
        : Optional.empty();
  }

  /** Set when a time limit stopped the run. */
  private boolean timedOut;

  private UrlList readInput(PrintWriter err) throws BadInputException, IOException {
    UrlList urls;
    if (input.equals("-")) {
      urls = UrlList.read(System.in, "standard input");
    } else {
      Path path = Path.of(input);
      if (Files.isDirectory(path)) {
        throw new BadInputException("input " + input + " is a directory, not a file of URLs");
      }
      try (InputStream in = Files.newInputStream(path)) {
        urls = UrlList.read(in, "input " + input);
      } catch (NoSuchFileException e) {
        throw new BadInputException("input file " + input + " does not exist");
      } catch (AccessDeniedException e) {
        throw new BadInputException("input file " + input + " is not readable (permission denied)");
      }
    }
    for (String problem : urls.problems()) {
      err.println("pacer: skipped " + problem);
    }
    return urls;
  }

  private String jobName() throws BadInputException {
    String name = job;
    if (name == null) {
      if (input.equals("-")) {
        name = "stdin";
      } else {
        String file = Path.of(input).getFileName().toString();
        int dot = file.lastIndexOf('.');
        name = (dot > 0 ? file.substring(0, dot) : file).replaceAll("[^A-Za-z0-9._-]", "_");
        if (!name.isEmpty() && !Character.isLetterOrDigit(name.charAt(0))) {
          name = "job" + name;
        }
      }
    }
    if (!JOB_NAME.matcher(name).matches()) {
      throw new BadInputException("job name must be 1-64 characters of letters, digits, '.', '_'"
          + " or '-', starting with a letter or digit, got " + Printable.quote(name));
    }
    return name;
  }

  private String destinationName(UrlList urls) throws BadInputException {
    if (destination != null) {
      return destination;
    }
    if (urls.hosts().size() > 1) {
      throw new BadInputException("the URLs span " + urls.hosts().size() + " hosts ("
          + String.join(", ", urls.hosts().stream().limit(5).toList())
          + (urls.hosts().size() > 5 ? ", ..." : "") + "); a job has one destination: pass"
          + " --destination NAME to put them under one ceiling, or split the input by host");
    }
    return urls.hosts().iterator().next();
  }
}
