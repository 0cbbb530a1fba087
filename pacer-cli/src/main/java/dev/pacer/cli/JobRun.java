package dev.pacer.cli;

import dev.pacer.cli.db.Database;
import dev.pacer.cli.db.FrontierStore;
import dev.pacer.cli.db.HostStatus;
import dev.pacer.cli.db.ItemStore;
import dev.pacer.cli.db.RequestLog;
import dev.pacer.cli.db.RobotsStore;
import dev.pacer.cli.db.TripStore;
import dev.pacer.cli.db.WorkState;
import dev.pacer.cli.db.WorkerStore;
import dev.pacer.cli.model.BadInputException;
import dev.pacer.cli.model.HaltReason;
import dev.pacer.cli.model.LimiterFigures;
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
    Outcome outcome = outcome(settings, runStart);
    Optional<HaltReason> halted =
        outcome.tripped().isPresent() ? Optional.of(outcome.tripped().get().bar()) : ended.halted();
    double ceiling = report(settings, hostCeilings, outcome);
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
    return exitCode(settings.job(), halted, outcome, ended.timedOut());
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

  /**
   * What the run left, read once the workers are done: the job's items, what the limiters did, what
   * the destination (per host: each host) saw, and any trip recorded during the run. {@code
   * passedOver}, {@code robots} and {@code robotsCounts} are read per host only.
   */
  private record Outcome(
      ItemStore.Counts counts,
      LimiterFigures limiter,
      RequestLog.DoorFigures door,
      Optional<RequestLog.HostWindow> busiestHost,
      Map<String, Long> lockedOut,
      HostStatus.PassedOver passedOver,
      List<RobotsStore.HostReport> robots,
      RobotsStore.Counts robotsCounts,
      Optional<TripStore.Trip> tripped) {}

  /**
   * The run's {@link Outcome}. The work state is in PostgreSQL: if it is away just now, waits for
   * it (up to 2 minutes) rather than end an hours-long run without its summary.
   */
  private Outcome outcome(RunSettings settings, Instant runStart)
      throws SQLException, InterruptedException {
    for (int attempt = 1; ; attempt++) {
      try {
        return readOutcome(settings, runStart);
      } catch (SQLException e) {
        if (attempt == 120) {
          throw e;
        }
        if (attempt == 1) {
          err.println(
              "pacer: waiting for PostgreSQL to report the job's final state: "
                  + state.database().describe(e));
        }
        Thread.sleep(1000);
      }
    }
  }

  private Outcome readOutcome(RunSettings settings, Instant runStart) throws SQLException {
    String jobName = settings.job();
    RequestLog requestLog = state.requestLog();
    if (settings.perHost()) {
      // An item in flight when its host was passed over came back pending, out of reach.
      state.frontier().deferPassedOver(jobName);
    }
    ItemStore.Counts counts = state.items().counts(jobName);
    LimiterFigures limiter =
        state.workers().workers(settings.runId(), 0).stream()
            .map(WorkerStore.WorkerRow::limiter)
            .reduce(LimiterFigures.NONE, LimiterFigures::plus);
    RequestLog.DoorFigures door;
    Optional<RequestLog.HostWindow> busiestHost = Optional.empty();
    Map<String, Long> lockedOut = Map.of();
    HostStatus.PassedOver passedOver = null;
    List<RobotsStore.HostReport> robots = List.of();
    RobotsStore.Counts robotsCounts = null;
    if (settings.perHost()) {
      door = requestLog.jobSince(jobName, runStart);
      busiestHost = requestLog.busiestHost(jobName, runStart);
      lockedOut = state.frontier().lockedOutHosts(jobName);
      passedOver = state.hosts().passedOver(jobName, PASSED_OVER_HOSTS_SHOWN);
      if (settings.robots()) {
        robots = state.robots().report(jobName, ROBOTS_HOSTS_SHOWN + 1);
        robotsCounts = state.robots().counts(jobName);
      }
    } else {
      door = requestLog.destinationSince(settings.destination().name(), runStart);
    }
    // A trip open now was recorded during this run (an open trip refuses a run at its
    // start): by this process, one of its workers, or an invocation cooperating on the job.
    Optional<TripStore.Trip> tripped = state.trips().openTrip(jobName);
    return new Outcome(
        counts, limiter, door, busiestHost, lockedOut, passedOver, robots, robotsCounts, tripped);
  }

  /**
   * Reports what the destination (per host: the job's hosts) saw during the run, and what the
   * limiters did. Answers the summary's ceiling: per host, the sum of the hosts' ceilings, what the
   * job could reach at most.
   */
  private double report(
      RunSettings settings, Map<String, FrontierStore.HostCeiling> hostCeilings, Outcome outcome) {
    double ceiling = settings.destination().ratePerSecond();
    if (settings.perHost()) {
      ceiling = hostCeilings.values().stream().mapToDouble(FrontierStore.HostCeiling::rate).sum();
      err.println(
          "pacer: at the job's "
              + hostCeilings.size()
              + " host(s) during this run: "
              + Summary.describe(outcome.door(), ceiling));
      reportHosts(settings.job(), outcome);
    } else {
      err.println(
          "pacer: at destination "
              + settings.destination().name()
              + " during this run: "
              + Summary.describe(outcome.door(), ceiling));
    }
    err.println("pacer: limiter during this run: " + outcome.limiter().describe());
    return ceiling;
  }

  /** Per host: the busiest host, robots.txt, and the hosts locked out or passed over. */
  private void reportHosts(String jobName, Outcome outcome) {
    outcome
        .busiestHost()
        .ifPresent(
            h ->
                err.println(
                    "pacer: busiest host: "
                        + h.host()
                        + ", "
                        + h.busiestOneSecondWindow()
                        + " request(s) in its busiest 1-s window (ceiling "
                        + h.ceiling()
                        + "/s: "
                        + (h.busiestOneSecondWindow() <= h.ceiling() + 1 ? "kept" : "EXCEEDED")
                        + ")"));
    if (outcome.robotsCounts() != null) {
      reportRobots(outcome.robots(), outcome.robotsCounts(), outcome.counts().skipped());
    }
    outcome
        .lockedOut()
        .forEach(
            (host, open) ->
                err.println(
                    "pacer: host "
                        + host
                        + " is locked"
                        + " out; its "
                        + open
                        + " open item(s) were passed over. Acknowledge: pacer trips ack"
                        + " --destination "
                        + host
                        + " --note TEXT"));
    HostStatus.PassedOver passedOver = outcome.passedOver();
    passedOver
        .top()
        .forEach(
            p ->
                err.println(
                    "pacer: host "
                        + p.host()
                        + " was passed over: "
                        + p.reason()
                        + "; its open items are deferred to the next run of the job"));
    if (passedOver.hosts() > passedOver.top().size()) {
      err.println(
          "pacer: "
              + (passedOver.hosts() - passedOver.top().size())
              + " more host(s)"
              + " were passed over (pacer status --job "
              + jobName
              + " --hosts N lists them)");
    }
  }

  /** The process's exit code for a run that ended so, saying why when the job is left open. */
  private int exitCode(
      String jobName, Optional<HaltReason> halted, Outcome outcome, boolean timedOut) {
    ItemStore.Counts counts = outcome.counts();
    if (halted.isPresent()) {
      return Main.EXIT_HALTED;
    }
    if (!outcome.lockedOut().isEmpty()) {
      return Main.EXIT_HALTED;
    }
    if (timedOut) {
      err.println(
          "pacer: time limit reached: workers stopped; "
              + counts.open()
              + " item(s) of job "
              + jobName
              + " left open for a later run");
      return Main.EXIT_OK;
    }
    if (counts.open() > 0) {
      err.println(
          "pacer: "
              + counts.open()
              + " item(s) of job "
              + jobName
              + " are still open"
              + " although every worker has exited; run the same command again to finish them");
      return Main.EXIT_ERROR;
    }
    return Main.EXIT_OK;
  }

  /** Hosts passed over named one by one in the report; the rest are counted. */
  private static final int PASSED_OVER_HOSTS_SHOWN = 10;

  /** Hosts named one by one in the robots.txt report; the rest are counted. */
  private static final int ROBOTS_HOSTS_SHOWN = 10;

  /**
   * The robots.txt report: how many hosts' robots.txt was read, the items skipped, and the hosts
   * that kept items back (skipped wholesale, rules, or robots.txt unavailable), busiest first.
   */
  private void reportRobots(
      List<RobotsStore.HostReport> hosts, RobotsStore.Counts counts, long skipped) {
    err.println(
        "pacer: robots.txt: read for "
            + counts.applied()
            + " host(s), unavailable for "
            + counts.unavailable()
            + "; "
            + skipped
            + " item(s) skipped");
    hosts.stream()
        .limit(ROBOTS_HOSTS_SHOWN)
        .forEach(
            h ->
                err.println(
                    "pacer: robots.txt of "
                        + h.host()
                        + ": "
                        + h.verdict()
                        + (h.skipped() > 0 ? "; " + h.skipped() + " item(s) skipped" : "")));
    if (hosts.size() > ROBOTS_HOSTS_SHOWN) {
      err.println("pacer: robots.txt: more hosts kept items back (not shown)");
    }
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
