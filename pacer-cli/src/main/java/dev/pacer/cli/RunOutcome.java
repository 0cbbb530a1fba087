package dev.pacer.cli;

import dev.pacer.cli.db.FrontierStore;
import dev.pacer.cli.db.HostStatus;
import dev.pacer.cli.db.ItemStore;
import dev.pacer.cli.db.RequestLog;
import dev.pacer.cli.db.RobotsStore;
import dev.pacer.cli.db.TripStore;
import dev.pacer.cli.db.WorkState;
import dev.pacer.cli.db.WorkerStore;
import dev.pacer.cli.model.HaltReason;
import dev.pacer.cli.model.LimiterFigures;
import dev.pacer.cli.run.RunSettings;
import dev.pacer.cli.run.Summary;
import java.io.PrintWriter;
import java.sql.SQLException;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * What a run of a job left, read from the work state once its workers are done, and what {@link
 * JobRun} says of it: the destination's (per host: the hosts') figures, what the limiters did, the
 * hosts locked out, passed over or kept back by robots.txt, and the process's exit code.
 */
final class RunOutcome {

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

  private final Outcome outcome;
  private final PrintWriter err;

  private RunOutcome(Outcome outcome, PrintWriter err) {
    this.outcome = outcome;
    this.err = err;
  }

  ItemStore.Counts counts() {
    return outcome.counts();
  }

  LimiterFigures limiter() {
    return outcome.limiter();
  }

  RequestLog.DoorFigures door() {
    return outcome.door();
  }

  /** A trip recorded during the run, if one is open. */
  Optional<TripStore.Trip> tripped() {
    return outcome.tripped();
  }

  /**
   * What the run left. The work state is in PostgreSQL: if it is away just now, waits for it (up to
   * 2 minutes) rather than end an hours-long run without its summary.
   */
  static RunOutcome read(WorkState state, RunSettings settings, Instant runStart, PrintWriter err)
      throws SQLException, InterruptedException {
    for (int attempt = 1; ; attempt++) {
      try {
        return new RunOutcome(readOutcome(state, settings, runStart), err);
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

  private static Outcome readOutcome(WorkState state, RunSettings settings, Instant runStart)
      throws SQLException {
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
  double report(RunSettings settings, Map<String, FrontierStore.HostCeiling> hostCeilings) {
    double ceiling = settings.destination().ratePerSecond();
    if (settings.perHost()) {
      ceiling = hostCeilings.values().stream().mapToDouble(FrontierStore.HostCeiling::rate).sum();
      err.println(
          "pacer: at the job's "
              + hostCeilings.size()
              + " host(s) during this run: "
              + Summary.describe(outcome.door(), ceiling));
      reportHosts(settings.job());
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
  private void reportHosts(String jobName) {
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
  int exitCode(String jobName, Optional<HaltReason> halted, boolean timedOut) {
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
}
