package dev.pacer.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.cli.db.Database;
import dev.pacer.cli.db.WorkState;
import dev.pacer.postgres.PacerTableSql;
import dev.pacer.postgres.RestartablePostgres;
import dev.pacer.testing.FleetBounds;
import dev.pacer.testing.Timeline;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A {@code pacer fetch --per-host} job goes on through a PostgreSQL outage: each worker fetches the
 * items it leased ahead across the hosts ({@code --outage-buffer}), each through its host's
 * limiter, which paces every process at the host's rate divided while PostgreSQL is away, and
 * records their outcomes on its return. Judged where the requests arrive, per host, on a conveyor
 * run of three worker JVMs x four threads over three loopback hosts at 4/s each, with PostgreSQL
 * stopped for 12 s mid-run as {@code pg_ctl stop} stops it.
 */
class PerHostOutageTest {

  private static final long SECOND = 1_000_000_000L;
  private static final int PROCESSES = 3;
  private static final int THREADS = 4;

  /** As the run derives it: the most processes that may fetch at once, plus one. */
  private static final int DIVISOR = PROCESSES + 1;

  /** Every host's ceiling. */
  private static final int RATE = 4;

  private static final int HOSTS = 3;

  /**
   * Enough that every worker's buffer can hold its share of every host ({@code --outage-buffer}'s
   * 20 s x 4/s / 4 = 20 items) at the stop, however late the last worker started.
   */
  private static final int ITEMS_PER_HOST = 120;

  private static final int TWIN_ITEMS_PER_HOST = 100;

  /**
   * The items of every host each worker must hold in its buffer at the stop: more than it can fetch
   * at the divided rate from when it paces locally to the return.
   */
  private static final int BUFFERED_AT_STOP = 10;

  /** Time a stop of the server may take to refuse the last reservation after it is read. */
  private static final long CRASH_NANOS = 200_000_000L;

  /** How long PostgreSQL is away. */
  private static final long OUTAGE_MILLIS = 12_000;

  /**
   * The arrivals awaited before the stop once every worker buffers: 4 s at the hosts' ceilings, the
   * steady part the ceiling is judged on before the outage.
   */
  private static final int STEADY_BEFORE = 48;

  /** The share of the divided rate each host must keep getting through the outage. */
  private static final double KEPT_UP = 0.8;

  /** How much longer than a host's items at its ceiling plus the outage the run may take. */
  private static final double LONGEST_RUN = 1.2;

  @TempDir Path dir;
  private RestartablePostgres postgres;
  private LoopbackHosts hosts;
  private final List<Process> started = new ArrayList<>();

  @BeforeEach
  void start() throws Exception {
    postgres = new RestartablePostgres();
    hosts = new LoopbackHosts(2 * HOSTS);
    // The run and its twin start together on a new database: its tables made once, beforehand.
    try (WorkState state = new WorkState(new Database(postgres.jdbcUrl()))) {
      state.ensureSchema();
    }
    postgres.execute(PacerTableSql.createTable("pacer_cursor"));
  }

  @AfterEach
  void stop() {
    for (Process run : started) {
      run.descendants().forEach(ProcessHandle::destroyForcibly);
      run.destroyForcibly();
    }
    hosts.close();
    postgres.close();
  }

  /**
   * PostgreSQL stopped for 12 s under the run. Every host keeps getting at least 0.8 x its rate
   * divided, times the workers fetching it ({@code 3 x 4/4} per second: each worker paces each host
   * at the divided rate, and the run's three workers all hold items of every host), over the
   * outage, and holds its ceiling from its first request to its last; the run ends within 1.2 x (a
   * host's items at its rate + the outage), and no URL arrives twice.
   *
   * <p>Its twin runs beside it through the same outage, on hosts of its own, with {@code
   * --outage-buffer 0}: nothing leased ahead, so once its threads have fetched the items in hand
   * its hosts get nothing until PostgreSQL is back, and each must break the lower bound the run
   * holds.
   */
  @Test
  void everyHostGoesOnThroughAnOutage() throws Exception {
    Process run = fetch("outage", 0, ITEMS_PER_HOST);
    Process twin = fetch("outage-twin", HOSTS, TWIN_ITEMS_PER_HOST, "--outage-buffer", "0");
    awaitBuffers("outage", run);
    awaitArrivals(hostsOf(HOSTS), 1, twin);
    long everyWorkerBuffering = System.nanoTime();
    awaitArrivals(hostsOf(0), count(hostsOf(0), 0, Long.MAX_VALUE) + STEADY_BEFORE, run);
    awaitBuffers("outage", run);
    assertThat(twin.isAlive()).as("the twin is still fetching at the stop").isTrue();
    long down = System.nanoTime();
    postgres.stopFast();
    Thread.sleep(OUTAGE_MILLIS);
    postgres.start();
    long up = System.nanoTime();
    String err = finish(run, "outage", HOSTS * ITEMS_PER_HOST);
    finish(twin, "outage-twin", HOSTS * TWIN_ITEMS_PER_HOST);
    judgeRun(err, everyWorkerBuffering, down, up);
    judgeTwin(down, up);
  }

  private void judgeRun(String err, long everyWorkerBuffering, long down, long up) {
    GivenUpTurns givenUp = GivenUpTurns.in(err);
    double outage = (up - down) / 1e9;
    List<LoopbackHosts.Arrival> all = arrivals(hostsOf(0));
    Timeline whole = timeline(all);
    double longest = LONGEST_RUN * ((double) ITEMS_PER_HOST / RATE + outage);
    long localFrom = localFrom(down);
    System.out.printf(
        "outage: %s; %.1f s outage, every worker pacing locally from %.1f s into it; the run took"
            + " %.1f s (at most %.1f s); fetched twice: %s%n",
        whole,
        outage,
        (localFrom - down) / 1e9,
        whole.spanSeconds(),
        longest,
        fetchedTwice(all, down));
    for (String host : hostsOf(0)) {
      judgeHost(host, everyWorkerBuffering, down, up, givenUp);
    }
    Cli.LateTurns late = Cli.LateTurns.in(err);
    System.out.println("outage: " + late + "; " + givenUp.size() + " logged one by one");
    late.assertFewOfColdWorkers(
        FleetBounds.at(HOSTS * RATE, "outage, the hosts"), PROCESSES, THREADS, 2, whole);
    assertThat(all)
        .as("no URL fetched twice: %s", fetchedTwice(all, down))
        .hasSize(HOSTS * ITEMS_PER_HOST);
    assertThat(whole.spanSeconds())
        .as("the run's length, from its first request to its last")
        .isLessThanOrEqualTo(longest);
    assertThat(err).contains("PostgreSQL answers again");
  }

  /**
   * One host of the run: its ceiling held from its first request to its last; over the outage at
   * least 0.8 x its rate divided; and once every worker paces locally, each worker fetching its
   * buffer at the divided rate, never above it, and together at least 0.95 x the divided rate each,
   * the turns they gave up as late there counted as delivered (the run's late-turn bound judges
   * those).
   */
  private void judgeHost(
      String host, long everyWorkerBuffering, long down, long up, GivenUpTurns givenUp) {
    double outage = (up - down) / 1e9;
    double keptUp = KEPT_UP * RATE / DIVISOR;
    List<LoopbackHosts.Arrival> mine = arrivals(Set.of(host));
    Timeline run = timeline(mine);
    int during = count(Set.of(host), down, up);
    List<Timeline> local = List.copyOf(byWorker(mine, localFrom(down), up).values());
    System.out.printf(
        "outage, host %s: %s; %d requests during the outage (%.2f/s, at least %.2f/s); %s paced"
            + " locally by each worker; per second from it: %s; the busiest window starts %.2f s"
            + " from it, arrivals (s from it, worker): %s%n",
        host,
        run,
        during,
        during / outage,
        keptUp,
        local,
        perSecond(mine, down),
        (run.busiestWindowStart() - down) / 1e9,
        mine.stream()
            .map(a -> String.format("%.2f:%s", (a.nanos() - down) / 1e9, a.worker()))
            .toList());
    FleetBounds.at(RATE, "outage, host " + host)
        .assertHeld(run, run.between(everyWorkerBuffering + SECOND, down));
    assertThat(during / outage)
        .as("host %s's rate during the outage; per second from it: %s", host, perSecond(mine, down))
        .isGreaterThanOrEqualTo(keptUp);
    FleetBounds paced =
        FleetBounds.at((double) RATE / DIVISOR, "outage, host " + host + ", a worker's buffer")
            .turnsCheckedAt(RATE);
    assertThat(local).as("workers fetching their buffers from host %s", host).hasSize(PROCESSES);
    local.forEach(paced::assertHeld);
    long from = local.stream().mapToLong(Timeline::first).min().orElseThrow();
    long to = local.stream().mapToLong(Timeline::last).max().orElseThrow();
    paced.assertDeliveredByMembers(local, givenUp.of(host, from, to));
  }

  /**
   * The latest a worker paces a host locally after PostgreSQL went away at {@code down}: the stop
   * may take a moment to refuse the last reservation, each thread of the fleet may hold a turn on
   * the host's cursor, and a worker's first local turn waits for the turns the others may still
   * hold queued after it, {@code (divisor - 1) x threads} more (the library's degraded pacing).
   */
  private static long localFrom(long down) {
    double turns = PROCESSES * THREADS + (DIVISOR - 1) * THREADS;
    return down + CRASH_NANOS + (long) (turns / RATE * SECOND);
  }

  private void judgeTwin(long down, long up) {
    double outage = (up - down) / 1e9;
    double keptUp = KEPT_UP * RATE / DIVISOR;
    long localFrom = localFrom(down);
    for (String host : hostsOf(HOSTS)) {
      List<LoopbackHosts.Arrival> mine = arrivals(Set.of(host));
      int during = count(Set.of(host), down, up);
      int local = count(Set.of(host), localFrom, up);
      double localRate = local / ((up - localFrom) / 1e9);
      System.out.printf(
          "outage twin without a buffer, host %s: %s; %d requests during the outage (%.2f/s),"
              + " %d once every worker would pace locally (%.2f/s); per second from it: %s%n",
          host, timeline(mine), during, during / outage, local, localRate, perSecond(mine, down));
      assertThat(during / outage)
          .as("the twin's host %s's rate during the outage breaks the lower bound", host)
          .isLessThan(keptUp);
      assertThat(localRate)
          .as("the twin's host %s's rate once paced locally breaks the lower bound", host)
          .isLessThan(0.95 * PROCESSES * RATE / DIVISOR);
    }
  }

  /** The arrivals of each worker in [{@code from}, {@code to}), by its pid. */
  private static Map<String, Timeline> byWorker(
      List<LoopbackHosts.Arrival> arrivals, long from, long to) {
    Map<String, List<Long>> instants = new TreeMap<>();
    for (LoopbackHosts.Arrival a : arrivals) {
      if (a.nanos() >= from && a.nanos() < to) {
        instants.computeIfAbsent(a.worker(), w -> new ArrayList<>()).add(a.nanos());
      }
    }
    Map<String, Timeline> members = new TreeMap<>();
    instants.forEach((w, t) -> members.put(w, new Timeline(t)));
    return members;
  }

  /** Starts the conveyor run of {@code job} over the hosts from {@code firstHost} on. */
  private Process fetch(String job, int firstHost, int perHost, String... options)
      throws Exception {
    List<String> urls = new ArrayList<>();
    for (int i = 0; i < perHost; i++) {
      for (int h = firstHost; h < firstHost + HOSTS; h++) {
        urls.add(hosts.urls(h, perHost).get(i));
      }
    }
    Path input = Files.write(dir.resolve(job + ".txt"), urls);
    List<String> args =
        new ArrayList<>(
            List.of(
                "fetch",
                input.toString(),
                "--job",
                job,
                "--per-host",
                "--db",
                postgres.jdbcUrl(),
                "--processes",
                Integer.toString(PROCESSES),
                "--threads",
                Integer.toString(THREADS),
                "--rate",
                Integer.toString(RATE),
                "--out",
                dir.resolve("out").toString(),
                "--max-load",
                "1000",
                "--no-progress",
                // A buffered item is fetched while a quarter of its lease is left: the outage as
                // the workers see it (the stop, 12 s, the start and the next 5-s retry boundary)
                // lasts up to 20 s, within three quarters of 30 s.
                "--lease-seconds",
                "30"));
    args.addAll(List.of(options));
    Process run =
        Cli.spawn(
            Map.of(),
            dir.resolve(job + ".out"),
            dir.resolve(job + ".err"),
            args.toArray(String[]::new));
    started.add(run);
    return run;
  }

  /**
   * Waits for the run to end and asserts that it exited 0 with every item done, each recorded done
   * exactly once; answers the run's stderr.
   */
  private String finish(Process run, String job, int items) throws Exception {
    assertThat(run.waitFor(180, TimeUnit.SECONDS)).as("%s finished", job).isTrue();
    String err = Files.readString(dir.resolve(job + ".err"));
    err.lines()
        .filter(l -> l.contains("WARN") || l.contains("ERROR") || l.contains("INFO"))
        .forEach(l -> System.out.println(job + " | " + l));
    assertThat(run.exitValue()).as(err).isZero();
    assertThat(doneRows(job)).as("%s: each item recorded done exactly once", job).isEqualTo(items);
    return err;
  }

  private long doneRows(String job) throws Exception {
    try (Connection c = DriverManager.getConnection(postgres.jdbcUrl());
        PreparedStatement s =
            c.prepareStatement(
                "SELECT count(*) FROM pacer_item WHERE job = ?"
                    + " AND state = 'done' AND finished_at IS NOT NULL")) {
      s.setString(1, job);
      try (ResultSet r = s.executeQuery()) {
        r.next();
        return r.getLong(1);
      }
    }
  }

  /**
   * Waits until each of the run's workers holds at least {@link #BUFFERED_AT_STOP} items of every
   * host in its buffer, the premise of a worker pacing every host through the outage.
   */
  private void awaitBuffers(String job, Process run) throws Exception {
    long deadline = System.nanoTime() + 60 * SECOND;
    while (true) {
      Map<String, Integer> workersBuffering = workersBuffering(job);
      if (workersBuffering.size() == HOSTS
          && workersBuffering.values().stream().allMatch(w -> w >= PROCESSES)) {
        return;
      }
      assertThat(run.isAlive()).as("the run is going: %s", stderr(run)).isTrue();
      assertThat(System.nanoTime())
          .as("every worker buffering every host within 60 s: %s", workersBuffering)
          .isLessThan(deadline);
      Thread.sleep(50);
    }
  }

  /** Per host of {@code job}, the workers holding at least BUFFERED_AT_STOP of its items ahead. */
  private Map<String, Integer> workersBuffering(String job) throws Exception {
    try (Connection c = DriverManager.getConnection(postgres.jdbcUrl());
        PreparedStatement s =
            c.prepareStatement(
                "SELECT host, count(*) FROM (SELECT host FROM pacer_item WHERE job = ? AND state ="
                    + " 'leased' AND ahead GROUP BY 1, leased_by HAVING count(*) >= ?) buffers"
                    + " GROUP BY host")) {
      s.setString(1, job);
      s.setInt(2, BUFFERED_AT_STOP);
      Map<String, Integer> workers = new TreeMap<>();
      try (ResultSet r = s.executeQuery()) {
        while (r.next()) {
          workers.put(r.getString(1), r.getInt(2));
        }
      }
      return workers;
    }
  }

  private void awaitArrivals(Set<String> among, int n, Process run) throws InterruptedException {
    long deadline = System.nanoTime() + 90 * SECOND;
    while (count(among, 0, Long.MAX_VALUE) < n) {
      assertThat(run.isAlive()).as("the run is going: %s", stderr(run)).isTrue();
      assertThat(System.nanoTime()).as("%d arrivals within 90 s", n).isLessThan(deadline);
      Thread.sleep(20);
    }
  }

  /** What {@code run} said on stderr so far. */
  private String stderr(Process run) {
    int i = started.indexOf(run);
    try {
      return Files.readString(dir.resolve(i == 0 ? "outage.err" : "outage-twin.err"));
    } catch (java.io.IOException e) {
      return e.toString();
    }
  }

  /** The names of the run's hosts, from the {@code first}-th on. */
  private Set<String> hostsOf(int first) {
    return new HashSet<>(hosts.hosts().subList(first, first + HOSTS));
  }

  private List<LoopbackHosts.Arrival> arrivals(Set<String> among) {
    return hosts.arrivals().stream().filter(a -> among.contains(a.host())).toList();
  }

  private int count(Set<String> among, long from, long to) {
    return (int) arrivals(among).stream().filter(a -> a.nanos() >= from && a.nanos() < to).count();
  }

  private static Timeline timeline(List<LoopbackHosts.Arrival> arrivals) {
    return new Timeline(arrivals.stream().map(LoopbackHosts.Arrival::nanos).toList());
  }

  /** Arrivals per second from {@code from} on. */
  private static List<Integer> perSecond(List<LoopbackHosts.Arrival> arrivals, long from) {
    List<Integer> out = new ArrayList<>();
    for (LoopbackHosts.Arrival a : arrivals) {
      if (a.nanos() >= from) {
        int s = (int) ((a.nanos() - from) / SECOND);
        while (out.size() <= s) {
          out.add(0);
        }
        out.set(s, out.get(s) + 1);
      }
    }
    return out;
  }

  /** The URLs that arrived more than once, each with its instants from {@code down} and workers. */
  private static Map<String, List<String>> fetchedTwice(
      List<LoopbackHosts.Arrival> arrivals, long down) {
    Map<String, List<String>> by = new TreeMap<>();
    arrivals.forEach(
        a ->
            by.computeIfAbsent(a.host() + a.path(), p -> new ArrayList<>())
                .add(String.format("%.2f s by %s", (a.nanos() - down) / 1e9, a.worker())));
    by.values().removeIf(l -> l.size() < 2);
    return by;
  }
}
