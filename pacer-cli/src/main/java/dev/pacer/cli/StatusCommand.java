package dev.pacer.cli;

import dev.pacer.cli.db.CursorPlace;
import dev.pacer.cli.db.CursorStatus;
import dev.pacer.cli.db.HostStatus;
import dev.pacer.cli.db.ItemStore;
import dev.pacer.cli.db.JobStore;
import dev.pacer.cli.db.RequestLog;
import dev.pacer.cli.db.TripStore;
import dev.pacer.cli.db.WorkState;
import dev.pacer.cli.db.WorkerStore;
import dev.pacer.cli.model.BadInputException;
import dev.pacer.cli.run.Summary;
import dev.pacer.postgres.PostgresFleetSlots;
import java.io.PrintWriter;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.stream.Collectors;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code pacer status}: jobs (with what their destination saw while they sent: rate, busiest 1-s
 * window, lateness; for a per-host job, its hosts: see {@link HostReport}), destinations (cursor,
 * degraded), live workers, open trips.
 */
@Command(
    name = "status",
    mixinStandardHelpOptions = true,
    description = "Progress per job, cursor and degraded state per destination, open trips.")
public final class StatusCommand implements Callable<Integer> {

  /** Workers heard from within this many seconds count as live. */
  static final double LIVE_SECONDS = 15;

  @Spec CommandSpec spec;

  @Option(names = "--job", paramLabel = "NAME", description = "Only this job.")
  String job;

  @Option(
      names = "--hosts",
      paramLabel = "N",
      defaultValue = "10",
      description =
          "Per-host jobs: how many hosts each list shows; the rest are counted"
              + " (default: ${DEFAULT-VALUE}).")
  int hosts;

  @Option(
      names = "--last",
      paramLabel = "SECONDS",
      defaultValue = "60",
      description =
          "Per-host jobs: the busiest hosts are judged on the requests of the last"
              + " SECONDS (default: ${DEFAULT-VALUE}).")
  double lastSeconds;

  @Mixin DbOptions dbOptions;
  @Mixin CursorOptions cursorOptions;

  @Override
  public Integer call() throws Exception {
    PrintWriter out = spec.commandLine().getOut();
    RunOptions.require(hosts >= 1 && hosts <= 10_000, "--hosts must be 1-10000, got " + hosts);
    RunOptions.require(
        lastSeconds > 0 && lastSeconds <= 86_400,
        "--last must be more than 0 and at most 86400 seconds, got "
            + HostReport.number(lastSeconds));
    CursorPlace cursorPlace = cursorOptions.place();
    try (WorkState store = dbOptions.connect(cursorPlace)) {
      out.println("Database: " + store.database().redactedUrl());
      out.println();
      List<JobStore.JobRow> jobs = store.jobs().jobs(job);
      if (job != null && jobs.isEmpty()) {
        throw new BadInputException("no job named '" + job + "'");
      }
      boolean perHostShown = printJobs(out, store, jobs);
      List<WorkerStore.WorkerRow> live = liveWorkers(store);
      out.println();
      out.println("Destinations (fleet-wide cursor in " + cursorPlace + ")");
      printDestinations(out, store, jobs, live, perHostShown);
      out.println();
      printWorkers(out, live);
      out.println();
      out.println("Open trips");
      List<TripStore.Trip> trips = store.trips().trips(job, true);
      if (trips.isEmpty()) {
        out.println("  (none)");
      }
      for (TripStore.Trip t : trips) {
        out.println("  " + TripsCommand.describe(t));
      }
    }
    return Main.EXIT_OK;
  }

  /**
   * The jobs, each with its items and what its destination saw while it sent (per host: its hosts,
   * see {@link HostReport}). Answers whether a per-host job was shown.
   */
  private boolean printJobs(PrintWriter out, WorkState store, List<JobStore.JobRow> jobs)
      throws SQLException {
    RequestLog requestLog = store.requestLog();
    out.println("Jobs");
    if (jobs.isEmpty()) {
      out.println("  (none)");
    }
    HostReport hostReport = new HostReport(store, requestLog, hosts, lastSeconds);
    boolean perHostShown = false;
    for (JobStore.JobRow j : jobs) {
      ItemStore.Counts c = j.counts();
      HostStatus.Frontier frontier = store.hosts().frontier(j.name());
      out.printf(
          Locale.ROOT,
          "  %-24s %-32s %d/%d done  failed %d  deferred %d" + "%s  pending %d  leased %d%n",
          j.name(),
          frontier.perHost()
              ? "per host: " + frontier.hosts() + " host(s)"
              : "destination " + j.destination(),
          c.done(),
          c.total(),
          c.failed(),
          c.deferred(),
          c.skipped() > 0 ? "  skipped (robots.txt) " + c.skipped() : "",
          c.pending(),
          c.leased());
      if (frontier.perHost()) {
        hostReport.print(out, j.name());
        perHostShown = true;
        continue;
      }
      RequestLog.DoorFigures door = requestLog.duringJob(j.name(), j.destination());
      out.println(
          "    at the door while it sent: "
              + (j.ceiling().isPresent()
                  ? Summary.describe(door, j.ceiling().getAsDouble())
                  : door.requests() + " request(s); no ceiling recorded"));
    }
    return perHostShown;
  }

  /** The workers heard from lately that are running or stopping (of {@link #job}, if given). */
  private List<WorkerStore.WorkerRow> liveWorkers(WorkState store) throws SQLException {
    List<WorkerStore.WorkerRow> live = new ArrayList<>();
    for (WorkerStore.WorkerRow w : store.workers().workers(null, LIVE_SECONDS)) {
      boolean active = w.state().equals("running") || w.state().equals("stopping");
      if (active && (job == null || job.equals(w.job()))) {
        live.add(w);
      }
    }
    return live;
  }

  /**
   * The shared destinations' cursors (of the jobs shown, if {@link #job} is given); the hosts of
   * per-host jobs only counted, since their jobs showed them.
   */
  private void printDestinations(
      PrintWriter out,
      WorkState store,
      List<JobStore.JobRow> jobs,
      List<WorkerStore.WorkerRow> live,
      boolean perHostShown)
      throws SQLException {
    Map<String, CursorStatus.CursorRow> cursors = new LinkedHashMap<>();
    Set<String> shown = jobs.stream().map(JobStore.JobRow::destination).collect(Collectors.toSet());
    int hostsOfPerHostJobs = 0;
    for (CursorStatus.CursorRow c : store.cursors().all()) {
      if (c.perHostJobsHost()) {
        hostsOfPerHostJobs++;
      } else if (job == null || shown.contains(c.name())) {
        cursors.put(c.name(), c);
      }
    }
    if (hostsOfPerHostJobs > 0 && (job == null || perHostShown)) {
      out.println(
          "  ("
              + hostsOfPerHostJobs
              + " host(s) of per-host jobs: shown under "
              + (job == null ? "their jobs" : "the job")
              + " above)");
    } else if (cursors.isEmpty()) {
      out.println("  (no reservation made yet)");
    }
    Map<String, PostgresFleetSlots.Holding> slots = new LinkedHashMap<>();
    for (PostgresFleetSlots.Holding h : store.cursors().fleetSlots()) {
      slots.put(h.destination(), h);
    }
    for (CursorStatus.CursorRow c : cursors.values()) {
      printCursor(out, c, live, slots.get(c.name()));
    }
  }

  /** One destination's cursor: its next turn, workers, backoff, pause, lockout and slots held. */
  private static void printCursor(
      PrintWriter out,
      CursorStatus.CursorRow c,
      List<WorkerStore.WorkerRow> live,
      PostgresFleetSlots.Holding held) {
    long workers = live.stream().filter(w -> w.destination().equals(c.name())).count();
    long degraded =
        live.stream().filter(w -> w.destination().equals(c.name()) && w.degraded()).count();
    out.printf(
        Locale.ROOT,
        "  %-24s next turn %s  last reservation %.1f s ago  live workers %d" + "  degraded %s%n",
        c.name(),
        c.aheadSeconds() > 0 ? String.format(Locale.ROOT, "in %.3f s", c.aheadSeconds()) : "now",
        c.idleSeconds(),
        workers,
        degraded == 0 ? "no" : "YES (" + degraded + " of " + workers + " pacing locally)");
    if (c.fleetBackoff() > 1) {
      out.printf(
          Locale.ROOT,
          "  %-24s fleet backoff x%d (every process's turns are spaced" + " %d times wider)%n",
          "",
          c.fleetBackoff(),
          c.fleetBackoff());
    }
    if (c.pauseSeconds() > 0) {
      out.printf(
          Locale.ROOT,
          "  %-24s PAUSED for %.1f s more (the destination's" + " Retry-After)%n",
          "",
          c.pauseSeconds());
    }
    c.lockout()
        .ifPresent(
            reason ->
                out.printf(
                    Locale.ROOT,
                    "  %-24s LOCKED OUT: %s; no run" + " starts until: pacer trips ack%n",
                    "",
                    reason));
    if (held != null) {
      out.printf(
          Locale.ROOT,
          "    fleet slots held %d, by %d process(es)%n",
          held.slotsHeld(),
          held.holders());
    }
  }

  private static void printWorkers(PrintWriter out, List<WorkerStore.WorkerRow> live) {
    out.println("Live workers (heard from in the last " + (int) LIVE_SECONDS + " s)");
    if (live.isEmpty()) {
      out.println("  (none)");
    }
    for (WorkerStore.WorkerRow w : live) {
      out.printf(
          Locale.ROOT,
          "  %s pid %d  job %s  %s  requests %d  throttled %d  backoff x%d" + "  %.2f/s%s%n",
          w.host(),
          w.pid(),
          w.job(),
          w.state(),
          w.requests(),
          w.throttled(),
          w.backoff(),
          w.rate(),
          w.degraded() ? "  DEGRADED" : "");
    }
  }
}
