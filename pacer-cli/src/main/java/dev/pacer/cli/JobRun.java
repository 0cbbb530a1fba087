package dev.pacer.cli;

import dev.pacer.cli.db.Database;
import dev.pacer.cli.db.FrontierStore;
import dev.pacer.cli.db.ItemStore;
import dev.pacer.cli.db.TripStore;
import dev.pacer.cli.db.WorkState;
import dev.pacer.cli.model.BadInputException;
import dev.pacer.cli.model.HaltReason;
import dev.pacer.cli.model.UrlList;
import dev.pacer.cli.run.BodyVerification;
import dev.pacer.cli.run.Conveyor;
import dev.pacer.cli.run.Envelope;
import dev.pacer.cli.run.RunSettings;
import dev.pacer.cli.run.StartLine;
import dev.pacer.cli.run.Summary;
import dev.pacer.cli.run.Worker;
import dev.pacer.cli.ui.Progress;
import dev.pacer.postgres.DestinationHolds;
import dev.pacer.postgres.PostgresCursor;
import java.io.IOException;
import java.io.PrintWriter;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;

/**
 * One run of a job, whichever command asked for it ({@code pacer fetch}, {@code pacer demo}):
 * refuse it while the job has an open trip, enqueue the URL list, work the job (in this process, or
 * by a conveyor of worker processes), then report what the destination saw and end with the
 * one-line JSON summary on {@code out}. Returns the process's exit code.
 */
final class JobRun {

  /** How the workers ended: halted (and why), or stopped at the time limit. */
  private record Ended(Optional<HaltReason> halted, boolean timedOut) {}

  private final WorkState state;
  private final PrintWriter out;
  private final PrintWriter err;
  private final boolean progress;

  /**
   * @param progress draw the progress bar when {@code out} is a terminal
   */
  JobRun(WorkState state, PrintWriter out, PrintWriter err, boolean progress) {
    this.state = state;
    this.out = out;
    this.err = err;
    this.progress = progress;
  }

  /**
   * Runs the job. {@code processes} worker processes (the conveyor), or one pooled process if 0.
   * With a {@code timeLimit} (conveyor only), workers still running then are stopped and the items
   * left open stay for a later run.
   */
  int run(UrlList urls, RunSettings settings, int processes, Optional<Duration> timeLimit)
      throws Exception {
    return run(urls, settings, Map.of(), processes, timeLimit);
  }

  /**
   * As {@link #run(UrlList, RunSettings, int, Optional)}; in per-host mode {@code hostCeilings}
   * holds each host's ceiling (every host of {@code urls}).
   */
  int run(
      UrlList urls,
      RunSettings settings,
      Map<String, FrontierStore.HostCeiling> hostCeilings,
      int processes,
      Optional<Duration> timeLimit)
      throws Exception {
    OptionalInt refused = refusal(settings);
    if (refused.isPresent()) {
      return refused.getAsInt();
    }
    enqueue(urls, settings, hostCeilings, processes);
    long started = System.nanoTime();
    Instant runStart = state.requestLog().databaseNow();
    Progress bar =
        Progress.startIfInteractive(state, settings.job(), settings.runId(), out, progress);
    Ended ended;
    try {
      ended =
          processes > 0
              ? conveyor(state.database(), settings, processes, timeLimit)
              : pooled(state.database(), settings);
    } finally {
      if (bar != null) {
        bar.close();
      }
    }
    double elapsed = (System.nanoTime() - started) / 1e9;
    RunOutcome outcome = RunOutcome.read(state, settings, runStart, err);
    Optional<HaltReason> halted =
        outcome.tripped().isPresent() ? Optional.of(outcome.tripped().get().bar()) : ended.halted();
    double ceiling = outcome.report(settings, hostCeilings);
    ItemStore.Counts counts = outcome.counts();
    Summary summary =
        new Summary(
            settings.job(),
            counts.done(),
            counts.failed(),
            counts.deferred(),
            counts.skipped(),
            counts.pending(),
            halted,
            elapsed,
            ceiling,
            outcome.door(),
            outcome.limiter());
    out.println(summary.toJson());
    out.flush();
    return outcome.exitCode(settings.job(), halted, ended.timedOut());
  }

  /**
   * The exit code of a run refused before it starts: the job has an open trip, or (one shared
   * destination) the destination is locked out; empty if the run may start. In per-host mode a
   * host's lockout stops that host's claims, not the run.
   */
  private OptionalInt refusal(RunSettings settings) throws SQLException {
    String jobName = settings.job();
    Optional<TripStore.Trip> trip = state.trips().openTrip(jobName);
    if (trip.isPresent()) {
      TripStore.Trip t = trip.get();
      err.println(
          "pacer: job "
              + jobName
              + " is halted by trip #"
              + t.id()
              + " ("
              + t.bar()
              + ": "
              + t.figures()
              + ", "
              + t.trippedAt()
              + " on "
              + t.host()
              + " pid "
              + t.pid()
              + "). Acknowledge it first: pacer trips ack "
              + t.id()
              + " --note TEXT");
      return OptionalInt.of(Main.EXIT_HALTED);
    }
    if (settings.perProcessPacing() || settings.perHost()) {
      return OptionalInt.empty();
    }
    String name = settings.destination().name();
    DestinationHolds holds;
    try (PostgresCursor cursor = state.database().cursor()) {
      holds = cursor.holdsInForce(name);
    }
    if (!holds.isLockedOut()) {
      return OptionalInt.empty();
    }
    List<Long> trips = state.trips().openTripsOfDestination(name, HaltReason.DESTINATION_LOCKOUT);
    err.println(
        "pacer: destination "
            + name
            + " is locked out ("
            + holds.lockoutReason().get()
            + "): no run for it starts until the lockout is acknowledged: "
            + (trips.isEmpty()
                ? "pacer trips ack --destination " + name + " --note TEXT"
                : "pacer trips ack " + trips.get(0) + " --note TEXT"));
    return OptionalInt.of(Main.EXIT_HALTED);
  }

  /** Enqueues the URL list (per host, also plans the frontier), and says what the run will do. */
  private void enqueue(
      UrlList urls,
      RunSettings settings,
      Map<String, FrontierStore.HostCeiling> hostCeilings,
      int processes)
      throws SQLException, BadInputException, IOException {
    String jobName = settings.job();
    checkJobDestination(settings);
    long enqueueStarted = System.nanoTime();
    int added =
        state
            .jobs()
            .enqueue(
                settings.runId(),
                jobName,
                settings.destination().name(),
                settings.destination().ratePerSecond(),
                urls.urls());
    double enqueueSeconds = (System.nanoTime() - enqueueStarted) / 1e9;
    // Before the frontier's plan, which makes the hosts of items returned to the job claimable.
    verifyBodies(settings);
    state.items().reviveDeferred(jobName);
    if (settings.perHost()) {
      state.frontier().plan(jobName, hostCeilings);
      if (settings.robots()) {
        state.robots().plan(jobName);
      }
    }
    announce(urls, settings, hostCeilings, processes, added, enqueueSeconds);
  }

  /** A job keeps the destination it was enqueued for. */
  private void checkJobDestination(RunSettings settings) throws SQLException, BadInputException {
    String jobName = settings.job();
    Optional<String> existing = state.jobs().jobDestination(jobName);
    if (existing.isPresent() && !existing.get().equals(settings.destination().name())) {
      throw new BadInputException(
          "job "
              + jobName
              + " belongs to destination "
              + existing.get()
              + ", not "
              + settings.destination().name()
              + "; use another --job");
    }
  }

  /** Checks the bodies of the items done but not yet durable when a run stopped uncleanly. */
  private void verifyBodies(RunSettings settings) throws SQLException, IOException {
    String jobName = settings.job();
    BodyVerification.Verified verified =
        BodyVerification.run(state.items(), jobName, settings.leaseMillis());
    if (verified.any()) {
      err.println(
          "pacer: job "
              + jobName
              + ": "
              + (verified.whole() + verified.fetchedAgain())
              + " item(s) done but not yet durable when a run stopped uncleanly: "
              + verified.whole()
              + " body(ies) whole, kept; "
              + verified.fetchedAgain()
              + " missing or damaged, to be fetched again");
    }
  }

  private void announce(
      UrlList urls,
      RunSettings settings,
      Map<String, FrontierStore.HostCeiling> hostCeilings,
      int processes,
      int added,
      double enqueueSeconds) {
    String jobName = settings.job();
    err.println(
        "pacer: job "
            + jobName
            + ": "
            + urls.count()
            + " URL(s) in the input, "
            + added
            + " new, enqueued in "
            + String.format(Locale.ROOT, "%.1f", enqueueSeconds)
            + " s ("
            + String.format(Locale.ROOT, "%.0f", urls.count() / Math.max(enqueueSeconds, 1e-3))
            + " URLs/s); "
            + (settings.perHost()
                ? hostCeilings.size()
                    + " host(s), each its own destination, at "
                    + settings.destination().ratePerSecond()
                    + "/s fleet-wide unless --rates says"
                    + " otherwise"
                : "destination "
                    + settings.destination().name()
                    + " at "
                    + settings.destination().ratePerSecond()
                    + (settings.perProcessPacing() ? "/s PER PROCESS" : "/s fleet-wide"))
            + "; database "
            + state.database().redactedUrl()
            + (processes > 0
                ? "; " + processes + " worker process(es) x " + settings.threads() + " thread(s)"
                : "; one process x " + settings.threads() + " thread(s)"));
  }

  private static Ended pooled(Database database, RunSettings settings) throws InterruptedException {
    Worker worker =
        new Worker(
            database,
            settings,
            Envelope.forThisProcess(settings.maxLoad(), settings.maxRssBytes()),
            StartLine.NONE);
    return new Ended(worker.run().halted(), false);
  }

  private static Ended conveyor(
      Database database, RunSettings settings, int processes, Optional<Duration> timeLimit)
      throws IOException, InterruptedException, SQLException {
    List<String> workerArgs = new java.util.ArrayList<>(RunOptions.workerArgs(settings));
    workerArgs.addAll(database.cursorPlace().args());
    Conveyor conveyor = new Conveyor(database, workerArgs, processes);
    conveyor.start();
    List<Integer> codes;
    try {
      codes = conveyor.await(timeLimit);
    } catch (InterruptedException e) {
      conveyor.stop();
      throw e;
    }
    return new Ended(
        codes.contains(Main.EXIT_HALTED) ? Optional.of(HaltReason.HALTED) : Optional.empty(),
        conveyor.timedOut());
  }
}
