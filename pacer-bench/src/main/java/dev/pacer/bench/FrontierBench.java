package dev.pacer.bench;

import dev.pacer.cli.LoopbackHosts;
import dev.pacer.cli.run.JvmOptions;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Per-host mode ({@code pacer fetch --per-host}) against many hosts, judged where the requests
 * arrive: {@link Load#hosts()} HTTP servers on loopback addresses (127.0.x.y, {@link
 * LoopbackHosts}), every host at {@link Load#rate()}/s, one {@code pacer fetch --processes 3}
 * (three worker JVMs; {@link Load#processes()}), a Zipf-skewed backlog (the k-th host has {@code
 * heaviest / k^s} items, at least one; the input grouped by host, heaviest first, as a crawl's
 * frontier dumped host by host).
 *
 * <p>Four runs, one after another on the same hosts, each starting on fresh cursor rows (the hosts'
 * rows in {@code pacer_cursor} are deleted before it: the FIFO twin, stopped, leaves turns reserved
 * up to a minute ahead):
 *
 * <ol>
 *   <li><b>capacity</b>: what the workers can carry, every host's ceiling far above it ({@link
 *       #CAPACITY_RATE}/s; {@link #CAPACITY_ITEMS_PER_HOST} items a host): arrivals per second from
 *       the first to the last;
 *   <li><b>turn</b>: the frontier (the default claim order), judged on every criterion below;
 *   <li><b>SIGKILL</b>: the turn run again, one worker killed with SIGKILL a third of the way in
 *       while it holds leased items, which come back when their {@link Load#leaseSeconds()}-s
 *       leases lapse;
 *   <li><b>FIFO</b>: the hidden {@code --claim-order FIFO} twin (input order, each item then
 *       waiting for its host's turn), judged the same way, to show the criteria can fail; stopped
 *       (SIGTERM) {@link #FIFO_CAP} × the finish bound after its first arrival.
 * </ol>
 *
 * <p>The criteria, for each run:
 *
 * <ul>
 *   <li>every host's busiest 1-s window of arrivals ≤ its ceiling + 1 (at 0.5/s: 1);
 *   <li>in every whole 10-s window from the first arrival, the arrivals ≥ 0.95 × min(Σ over hosts
 *       of ceiling × the time in the window during which the host still had items left (until its
 *       last arrival), capacity × 10 s);
 *   <li>claims that came back empty while some host was eligible ÷ all claims, under 0.1% (the
 *       workers' own tally, printed as each ends; a killed worker's is lost with it);
 *   <li>the run's time at the hosts (first arrival to last) ≤ 1.05 × the largest per-host backlog ×
 *       interval + 10 s; the time from the workers' start to the last outcome (the summary's {@code
 *       elapsedSeconds}, the enqueue not in it) is reported beside it;
 *   <li>every item done exactly once (the work state), and every item's URL reached its host.
 * </ul>
 */
final class FrontierBench {

  /** The capacity run's per-host ceiling: far above what the workers reach at any host. */
  static final double CAPACITY_RATE = 1000;

  static final int CAPACITY_ITEMS_PER_HOST = 4;

  /** The FIFO twin is stopped this many times the finish bound after its first arrival. */
  static final double FIFO_CAP = 1.5;

  static final double WINDOW_SECONDS = 10;
  static final double WINDOW_SHARE = 0.95;
  static final double EMPTY_CLAIMS_TARGET = 0.001;

  /**
   * What the bench runs: {@code hosts} hosts at {@code rate}/s, the k-th with {@code heaviest /
   * k^zipfS} items (rounded, at least 1), {@code processes} worker JVMs of {@code threads} each,
   * leases of {@code leaseSeconds}.
   */
  record Load(
      int hosts,
      double rate,
      double zipfS,
      int heaviest,
      int processes,
      int threads,
      int leaseSeconds) {

    /** Items of each host, heaviest first. */
    int[] backlog() {
      int[] items = new int[hosts];
      for (int k = 1; k <= hosts; k++) {
        items[k - 1] = (int) Math.max(1, Math.round(heaviest / Math.pow(k, zipfS)));
      }
      return items;
    }

    int items() {
      int sum = 0;
      for (int n : backlog()) {
        sum += n;
      }
      return sum;
    }

    /** 1.05 × the largest per-host backlog × interval + 10 s. */
    double finishBoundSeconds() {
      return 1.05 * backlog()[0] / rate + 10;
    }
  }

  record Result(
      Load load,
      int items,
      double capacityPerSecond,
      FrontierRun turn,
      FrontierRun fifo,
      FrontierRun killed) {}

  private static final Pattern ELAPSED = Pattern.compile("\"elapsedSeconds\":([0-9.]+)");

  /** A worker's closing tally (ClaimTally), the whole line: claims, empty ones, held ones. */
  private static final Pattern CLAIMS =
      Pattern.compile(
          "Claims: (\\d+) made, \\d+ leased an item, \\d+ found no host due, (\\d+) came back"
              + " empty[^\n"
              + "]*?, (\\d+) found the due hosts held[^\n"
              + "]*");

  private final Database.Target db;
  private final Load load;
  private final Path work;
  private final PrintStream log;
  private final LoopbackHosts hosts;

  private FrontierBench(
      Database.Target db, Load load, Path work, PrintStream log, LoopbackHosts hosts) {
    this.db = db;
    this.load = load;
    this.work = work;
    this.log = log;
    this.hosts = hosts;
  }

  static Result measure(Database.Target db, Load load, Path work, PrintStream log)
      throws IOException, InterruptedException, SQLException {
    try (LoopbackHosts hosts = new LoopbackHosts(load.hosts())) {
      FrontierBench bench = new FrontierBench(db, load, work, log, hosts);
      double capacity = bench.capacity();
      log.printf(
          Locale.ROOT,
          "[frontier] capacity: %,.0f items/s (%d hosts at %.0f/s, %d"
              + " processes x %d threads)%n",
          capacity,
          load.hosts(),
          CAPACITY_RATE,
          load.processes(),
          load.threads());
      FrontierRun turn = bench.run("turn", capacity, false, false);
      FrontierRun killed = bench.run("sigkill", capacity, false, true);
      FrontierRun fifo = bench.run("fifo", capacity, true, false);
      return new Result(load, load.items(), capacity, turn, fifo, killed);
    }
  }

  private double capacity() throws IOException, InterruptedException {
    List<String> urls = new ArrayList<>();
    for (int h = 0; h < load.hosts(); h++) {
      urls.addAll(hosts.urls(h, CAPACITY_ITEMS_PER_HOST));
    }
    long mark = System.nanoTime();
    Process p = start("frontier-capacity", urls, CAPACITY_RATE, false);
    int code = p.waitFor();
    if (code != 0) {
      throw new IllegalStateException(
          "the capacity run exited "
              + code
              + ": "
              + Files.readString(work.resolve("frontier-capacity.err")));
    }
    List<LoopbackHosts.Arrival> a = since(mark);
    return (a.size() - 1) / ((a.get(a.size() - 1).nanos() - a.get(0).nanos()) / 1e9);
  }

  private FrontierRun run(String label, double capacity, boolean fifo, boolean kill)
      throws IOException, InterruptedException, SQLException {
    int[] backlog = load.backlog();
    List<String> urls = new ArrayList<>();
    Map<String, Integer> itemsOf = new HashMap<>();
    for (int h = 0; h < load.hosts(); h++) {
      urls.addAll(hosts.urls(h, backlog[h]));
      itemsOf.put(hosts.hosts().get(h), backlog[h]);
    }
    String job = "frontier-" + label;
    forgetTurns();
    long mark = System.nanoTime();
    Process p = start(job, urls, load.rate(), fifo);
    Watched watched = watch(p, label, job, mark, urls.size(), fifo, kill);
    boolean stopped = watched.stopped();
    long end = System.nanoTime();
    if (!stopped && p.exitValue() != 0) {
      throw new IllegalStateException(
          label
              + " run exited "
              + p.exitValue()
              + ": "
              + Files.readString(work.resolve(job + ".err")));
    }
    String err = Files.readString(work.resolve(job + ".err"), StandardCharsets.UTF_8);
    double elapsed =
        stopped
            ? (end - mark) / 1e9
            : Double.parseDouble(find(ELAPSED, Files.readString(work.resolve(job + ".out"))));
    ClaimTally tally = tally(label, err);
    List<LoopbackHosts.Arrival> arrivals = since(mark);
    if (arrivals.isEmpty()) {
      throw new IllegalStateException("the " + label + " run sent nothing: " + err);
    }
    FrontierRun r =
        FrontierRun.judge(
            label,
            !stopped,
            elapsed,
            arrivals,
            itemsOf,
            load.rate(),
            capacity,
            tally,
            !stopped && doneOnce(job, urls.size(), arrivals),
            watched.killedAt());
    logRun(r, tally.held(), arrivals);
    return r;
  }

  /** How a run's watch ended: stopped (the FIFO twin at its cap), and when a worker was killed. */
  private record Watched(boolean stopped, double killedAt) {}

  /**
   * Waits for the run's workers to end, killing one of them that holds leases with SIGKILL a third
   * of the way in ({@code kill}), or stopping the FIFO twin at its cap ({@code fifo}).
   */
  private Watched watch(
      Process p, String label, String job, long mark, int items, boolean fifo, boolean kill)
      throws InterruptedException, SQLException {
    double killedAt = Double.NaN;
    boolean stopped = false;
    while (p.isAlive()) {
      if (kill && Double.isNaN(killedAt) && since(mark).size() >= items / 3) {
        killedAt = killOneLeasing(p, label, job, mark);
      }
      if (fifo && !stopped) {
        // Counted from the first arrival: the workers' start is seconds of JVMs on a busy machine.
        List<LoopbackHosts.Arrival> so = since(mark);
        if (!so.isEmpty()
            && System.nanoTime() - so.get(0).nanos() > FIFO_CAP * load.finishBoundSeconds() * 1e9) {
          p.destroy();
          stopped = true;
        }
      }
      p.waitFor(50, TimeUnit.MILLISECONDS);
    }
    return new Watched(stopped, killedAt);
  }

  /** Kills the first worker that holds leased items; when, from the run's start (NaN if none). */
  private double killOneLeasing(Process p, String label, String job, long mark)
      throws SQLException {
    for (ProcessHandle worker : p.toHandle().children().toList()) {
      if (leasedBy(job, worker.pid()) > 0) {
        worker.destroyForcibly();
        double killedAt = (System.nanoTime() - mark) / 1e9;
        log.printf(
            Locale.ROOT,
            "[frontier] %s: killed worker pid %d with SIGKILL at %.1f s%n",
            label,
            worker.pid(),
            killedAt);
        return killedAt;
      }
    }
    return Double.NaN;
  }

  /** The workers' closing tallies of their claims, summed over those that told them. */
  record ClaimTally(long claims, long empty, long held, int telling) {}

  private ClaimTally tally(String label, String err) {
    long claims = 0;
    long empty = 0;
    long held = 0;
    int telling = 0;
    Matcher m = CLAIMS.matcher(err);
    while (m.find()) {
      log.printf("[frontier] %s: a worker's %s%n", label, m.group());
      claims += Long.parseLong(m.group(1));
      empty += Long.parseLong(m.group(2));
      held += Long.parseLong(m.group(3));
      telling++;
    }
    return new ClaimTally(claims, empty, held, telling);
  }

  /** The run's figures, its 10-s windows, and the heaviest host's arrivals, to the log. */
  private void logRun(FrontierRun r, long held, List<LoopbackHosts.Arrival> arrivals) {
    String label = r.label();
    log.printf(
        Locale.ROOT,
        "[frontier] %s: %s in %.1f s at the hosts (bound %.1f s), %.1f s"
            + " from the workers' start; worst host window %d"
            + " (%d host(s) over ceiling + 1); lowest 10-s window %.3f of the bound's base over %d"
            + " window(s); claims %d, empty while a host was eligible %d (%.3f%%, %d worker(s)"
            + " told), idle with the due hosts held %d; every item done once: %s%n",
        label,
        r.finished() ? "finished" : "STOPPED",
        r.doorSeconds(),
        load.finishBoundSeconds(),
        r.elapsedSeconds(),
        r.worstHostWindow(),
        r.hostsOver(),
        r.minWindowRatio(),
        r.windows().size(),
        r.claims(),
        r.emptyWhileEligible(),
        100 * r.emptyFraction(),
        r.workersTelling(),
        held,
        r.doneOnce());
    StringBuilder w = new StringBuilder();
    for (FrontierRun.WindowFigure f : r.windows()) {
      w.append(String.format(Locale.ROOT, " %d/%.1f", f.delivered(), f.base()));
    }
    log.printf(Locale.ROOT, "[frontier] %s: 10-s windows, arrivals/base:%s%n", label, w);
    List<LoopbackHosts.Arrival> heaviest =
        arrivals.stream().filter(a -> a.host().equals(hosts.hosts().get(0))).toList();
    log.printf(
        Locale.ROOT,
        "[frontier] %s: the heaviest host's arrivals, s from the first arrival:" + " %s%n",
        label,
        heaviest.stream()
            .map(
                a ->
                    String.format(Locale.ROOT, "%.1f", (a.nanos() - arrivals.get(0).nanos()) / 1e9))
            .toList());
  }

  /** Deletes the loopback hosts' cursor rows (made by the first claim on each, if any). */
  private void forgetTurns() throws SQLException {
    try (Connection c = db.connect();
        PreparedStatement s = c.prepareStatement("DELETE FROM pacer_cursor WHERE name = ANY (?)")) {
      s.setArray(1, c.createArrayOf("text", hosts.hosts().toArray()));
      s.executeUpdate();
    } catch (SQLException e) {
      if (!"42P01".equals(e.getSQLState())) { // no table yet: no rows to forget
        throw e;
      }
    }
  }

  private Process start(String job, List<String> urls, double rate, boolean fifo)
      throws IOException {
    Path list = work.resolve(job + ".txt");
    Files.write(list, urls);
    List<String> command =
        new ArrayList<>(
            List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString()));
    command.addAll(JvmOptions.ofPacer());
    command.addAll(
        List.of(
            "-cp",
            System.getProperty("java.class.path"),
            "dev.pacer.cli.Main",
            "fetch",
            list.toString(),
            "--job",
            job + "-" + System.nanoTime(),
            "--per-host",
            "--rate",
            Double.toString(rate),
            "--processes",
            Integer.toString(load.processes()),
            "--threads",
            Integer.toString(load.threads()),
            "--lease-seconds",
            Integer.toString(load.leaseSeconds()),
            // The bench judges pacing, not the envelope: other work on the machine must not halt
            // it.
            "--max-load",
            "10000",
            "--out",
            work.resolve(job + "-bodies").toString(),
            "--no-progress",
            "--db",
            db.jdbcUrl()));
    if (fifo) {
      command.addAll(List.of("--claim-order", "FIFO"));
    }
    return new ProcessBuilder(command)
        .redirectOutput(work.resolve(job + ".out").toFile())
        .redirectError(work.resolve(job + ".err").toFile())
        .start();
  }

  private List<LoopbackHosts.Arrival> since(long mark) {
    return hosts.arrivals().stream().filter(a -> a.nanos() >= mark).toList();
  }

  /** Items of the job (the run's job name starts with it) leased by the worker with this pid. */
  private long leasedBy(String job, long pid) throws SQLException {
    try (Connection c = db.connect();
        PreparedStatement s =
            c.prepareStatement(
                "SELECT count(*) FROM pacer_item WHERE job LIKE ? AND state = 'leased'"
                    + " AND leased_by LIKE ?")) {
      s.setString(1, job + "-%");
      s.setString(2, "%:" + pid + ":%");
      try (ResultSet r = s.executeQuery()) {
        r.next();
        return r.getLong(1);
      } catch (SQLException e) {
        return 0; // the tables are made by the run's enqueue
      }
    }
  }

  private boolean doneOnce(String job, int items, List<LoopbackHosts.Arrival> arrivals)
      throws SQLException {
    long reached = arrivals.stream().map(a -> a.host() + a.path()).distinct().count();
    try (Connection c = db.connect();
        PreparedStatement s =
            c.prepareStatement(
                "SELECT count(*), count(DISTINCT url) FROM pacer_item WHERE job LIKE ?"
                    + " AND state = 'done'")) {
      s.setString(1, job + "-%");
      try (ResultSet r = s.executeQuery()) {
        r.next();
        return r.getLong(1) == items && r.getLong(2) == items && reached == items;
      }
    }
  }

  private static String find(Pattern p, String text) {
    Matcher m = p.matcher(text);
    if (!m.find()) {
      throw new IllegalStateException("no " + p + " in " + text);
    }
    return m.group(1);
  }

  /**
   * Makes every JDK {@code HttpServer} this JVM starts (the hosts on loopback addresses) answer at
   * once. Without {@code TCP_NODELAY} an answer's body waits for the client's acknowledgement of
   * its headers, which Linux delays by up to 40 ms: the capacity run, the base of the 10-s windows,
   * would measure that wait. The JDK reads the setting once, when the JVM's first server starts, so
   * this must come before any.
   */
  static void serversAnswerAtOnce() {
    System.setProperty("sun.net.httpserver.nodelay", "true");
  }

  /**
   * Standalone: {@code FrontierBench [HOSTS [HEAVIEST [RATE [THREADS]]]]} on an embedded PostgreSQL
   * (default: the full load).
   */
  public static void main(String[] args) throws Exception {
    serversAnswerAtOnce();
    Load full = BenchSettings.full().frontier();
    Load load =
        new Load(
            args.length > 0 ? Integer.parseInt(args[0]) : full.hosts(),
            args.length > 2 ? Double.parseDouble(args[2]) : full.rate(),
            full.zipfS(),
            args.length > 1 ? Integer.parseInt(args[1]) : full.heaviest(),
            full.processes(),
            args.length > 3 ? Integer.parseInt(args[3]) : full.threads(),
            full.leaseSeconds());
    Path work = Files.createTempDirectory("pacer-frontier-bench");
    double[] before = Machine.loadAverage();
    try (Database db = Database.embedded()) {
      Result r = measure(db.target(), load, work, System.out);
      double[] after = Machine.loadAverage();
      System.out.printf(
          Locale.ROOT,
          "%d hosts at %.1f/s, %d items (heaviest %d); load average"
              + " %.2f at start, %.2f at end%n",
          load.hosts(),
          load.rate(),
          r.items(),
          load.heaviest(),
          before[0],
          after[0]);
    } finally {
      FetchThroughput.deleteTree(work);
    }
  }
}
