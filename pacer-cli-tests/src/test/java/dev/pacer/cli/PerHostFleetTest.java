package dev.pacer.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.cli.db.Database;
import dev.pacer.cli.db.WorkState;
import dev.pacer.postgres.PacerTableSql;
import dev.pacer.postgres.TestDatabase;
import dev.pacer.testing.FleetBounds;
import dev.pacer.testing.Timeline;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code pacer fetch --per-host} with three worker JVMs x 4 threads against many hosts on loopback
 * addresses, judged where the requests arrive ({@link FleetBounds}, per host): every host's busiest
 * 1-s window holds its ceiling + 1, and every host with a steady part (its arrivals after its first
 * second) its aggregate; a skewed backlog does not hold the other hosts back, the heavy host
 * delivering its ceiling, and claiming in input order (the FIFO twin) does; a Zipf-skewed backlog
 * over 48 hosts keeps every ceiling, every item done once and its finish time through a SIGKILL of
 * one worker; a Retry-After pauses its host alone while the others keep and deliver their pace,
 * which judged against a ceiling of 4/s (the twin: 1.25 x per host, which the window of 5 at 4/s
 * may admit) breaks the aggregate. In every run the workers give up few turns as late, as they say
 * at their end ({@link Cli.LateTurns}), the hosts' ceilings together being the fleet's for that
 * bound. The full-size runs (500 hosts) are pacer-bench's {@code FrontierBench}.
 */
class PerHostFleetTest {

  private static final long SECOND = 1_000_000_000L;

  /** A request sent just before the pause was recorded reaches its host within this. */
  private static final long ON_THE_WIRE_MICROS = 100_000;

  private static final int PROCESSES = 3;
  private static final int THREADS = 4;

  /** Every host's ceiling. */
  private static final int RATE = 4;

  private static final int HOSTS = 16;
  private static final int HEAVY_ITEMS = 40;
  private static final int LIGHT_ITEMS = 2;

  /**
   * A light host needs one interval of turns ({@value #LIGHT_ITEMS} at {@value #RATE}/s); it must
   * be done within this of the run's first arrival. In input order its items are claimed only once
   * the heavy host's 40 are, about 7 s in ((40 - 12 threads) turns of 250 ms).
   */
  private static final long LIGHT_DONE_WITHIN = 3 * SECOND;

  /** The SIGKILL run: this many hosts at {@value #KILL_RATE}/s, a Zipf backlog (s = 1). */
  private static final int KILL_HOSTS = 48;

  private static final int KILL_RATE = 2;

  /** The heaviest host's backlog: {@value} items, 8 s of its turns. */
  private static final int KILL_HEAVIEST = 16;

  @TempDir Path dir;
  private LoopbackHosts hosts;

  @BeforeEach
  void start() throws Exception {
    hosts = new LoopbackHosts(KILL_HOSTS);
    // The hosts' cursor rows are shared by name with every earlier test of this JVM.
    try (WorkState state = new WorkState(new Database(TestDatabase.jdbcUrl()))) {
      state.ensureSchema();
    }
    TestDatabase.execute(PacerTableSql.createTable("pacer_cursor"));
    TestDatabase.execute(
        "DELETE FROM pacer_cursor WHERE name LIKE '127.0.%';"
            + " DELETE FROM pacer_cursor_lockout WHERE name LIKE '127.0.%'");
  }

  @AfterEach
  void stop() {
    hosts.close();
  }

  private Cli.Result fetch(String job, List<String> urls, String... extra) throws Exception {
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
                TestDatabase.jdbcUrl(),
                "--out",
                dir.resolve("out").toString(),
                "--max-load",
                "1000",
                "--no-progress",
                "--processes",
                Integer.toString(PROCESSES),
                "--threads",
                Integer.toString(THREADS)));
    List<String> more = List.of(extra);
    if (!more.contains("--rate")) {
      args.addAll(List.of("--rate", Integer.toString(RATE)));
    }
    args.addAll(more);
    Cli.Result run = Cli.runAlone(dir, job, args.toArray(String[]::new));
    run.err()
        .lines()
        .filter(l -> l.contains("WARN") || l.contains("ERROR") || l.startsWith("pacer:"))
        .forEach(l -> System.out.println(job + " | " + l));
    return run;
  }

  /**
   * Asserts that the workers of {@code run} gave up few turns as late, {@code workers} of them
   * saying so, over hosts whose ceilings add up to {@code ceilings}: a stall of the whole machine
   * wakes every host's takers late at once, and each worker starts cold on new hosts.
   */
  private void assertFewLateTurns(Cli.Result run, String what, double ceilings, int workers) {
    Cli.LateTurns late = run.lateTurns();
    System.out.println(what + ": " + late);
    late.assertFewOfColdWorkers(
        FleetBounds.at(ceilings, what), workers, THREADS, timeline(hosts.arrivals()));
  }

  /** When the job's requests to {@code host} were handed to the client, from the request log. */
  private static String sent(String job, String host) throws Exception {
    StringBuilder out = new StringBuilder();
    try (Connection c = TestDatabase.connect();
        Statement s = c.createStatement();
        ResultSet r =
            s.executeQuery(
                "SELECT (extract(epoch FROM sent_at - min(sent_at) OVER ())"
                    + " * 1000)::bigint, lateness_us / 1000 FROM pacer_request WHERE job = '"
                    + job
                    + "' AND destination = '"
                    + host
                    + "' ORDER BY sent_at")) {
      while (r.next()) {
        out.append(r.getLong(1)).append(" (").append(r.getLong(2)).append(") ");
      }
    }
    return out.toString();
  }

  /** The instants of a host's {@code arrivals}. */
  private static Timeline timeline(List<LoopbackHosts.Arrival> arrivals) {
    return new Timeline(arrivals.stream().map(LoopbackHosts.Arrival::nanos).toList());
  }

  /**
   * The turns of {@code host} that {@code run}'s workers gave up as late within {@code arrivals}'
   * span: the busy host's, counted as delivered ({@link GivenUpTurns}).
   */
  private static long givenUp(Cli.Result run, String host, Timeline arrivals) {
    return GivenUpTurns.in(run.err()).of(host, arrivals.first(), arrivals.last());
  }

  /** A host's steady part: after its first second, which holds the cold first requests. */
  private static Timeline steady(List<LoopbackHosts.Arrival> arrivals) {
    return timeline(arrivals).after(1);
  }

  /** The rate a host's {@code arrivals} span if every turn was taken ({@link DeliverableRate}). */
  private static double deliverable(double ceiling, List<LoopbackHosts.Arrival> arrivals) {
    return DeliverableRate.of(
        ceiling, arrivals, LoopbackHosts.Arrival::nanos, LoopbackHosts.Arrival::worker);
  }

  /** The heavy host's items first, in input order, then every light host's. */
  private List<String> skewedBacklog() {
    List<String> urls = new ArrayList<>(hosts.urls(0, HEAVY_ITEMS));
    for (int i = 1; i < HOSTS; i++) {
      urls.addAll(hosts.urls(i, LIGHT_ITEMS));
    }
    return urls;
  }

  /** When the last light host got its last request, from the run's first arrival. */
  private long lightHostsDone(List<LoopbackHosts.Arrival> all) {
    long first = all.get(0).nanos();
    return hosts.byHost().entrySet().stream()
        .filter(e -> !e.getKey().equals(hosts.hosts().get(0)))
        .mapToLong(e -> e.getValue().get(e.getValue().size() - 1).nanos() - first)
        .max()
        .orElseThrow();
  }

  @Test
  void everyHostKeepsItsCeilingAndASkewedBacklogHoldsNoOtherHostBack() throws Exception {
    String job = "per-host-skew-" + ProcessHandle.current().pid();
    Cli.Result run = fetch(job, skewedBacklog());
    assertThat(run.code()).as(run.err()).isZero();
    int items = HEAVY_ITEMS + (HOSTS - 1) * LIGHT_ITEMS;
    assertThat(run.number("done")).isEqualTo(items);
    assertFewLateTurns(run, "per host, the fleet", HOSTS * RATE, PROCESSES);

    List<LoopbackHosts.Arrival> all = hosts.arrivals();
    assertThat(all).hasSize(items);
    Map<String, List<LoopbackHosts.Arrival>> byHost = hosts.byHost();
    assertThat(byHost).hasSize(HOSTS);
    int busiest = 0;
    for (Map.Entry<String, List<LoopbackHosts.Arrival>> e : byHost.entrySet()) {
      int b = LoopbackHosts.busiestSecond(e.getValue());
      busiest = Math.max(busiest, b);
      assertThat(b)
          .as(
              "busiest 1-s window at %s, arrivals at ms %s; sent (ms, lateness ms) %s",
              e.getKey(), LoopbackHosts.offsets(e.getValue()), sent(job, e.getKey()))
          .isLessThanOrEqualTo(RATE + 1);
    }
    List<LoopbackHosts.Arrival> heavy = byHost.get(hosts.hosts().get(0));
    long lightDone = lightHostsDone(all);
    // The light hosts come first (never claimed, they sort first) and are soon done; the heavy
    // host's turns are taken all along, beside theirs and then alone: it gets its ceiling, not
    // less and not more.
    long lightDoneAt = all.get(0).nanos() + lightDone;
    long alone = heavy.stream().filter(x -> x.nanos() > lightDoneAt).count();
    System.out.printf(
        Locale.ROOT,
        "per host, %d hosts at %d/s, 3 processes x 4 threads: busiest"
            + " host window %d; light hosts done %.2f s after the first arrival, then %d requests"
            + " to the heavy host alone; the heavy host's arrivals at ms: %s%n",
        HOSTS,
        RATE,
        busiest,
        lightDone / 1e9,
        alone,
        LoopbackHosts.offsets(heavy));
    assertThat(lightDone)
        .as("nanos until every light host was done")
        .isLessThanOrEqualTo(LIGHT_DONE_WITHIN);
    assertThat(alone)
        .as("the heavy host's requests after the light hosts were done")
        .isGreaterThanOrEqualTo(HEAVY_ITEMS / 2);
    FleetBounds bounds = FleetBounds.at(RATE, "per host, the heavy host");
    Timeline heavyRun = timeline(heavy);
    bounds.assertHeld(heavyRun, steady(heavy));
    bounds.assertDeliveredBesideGivenUp(
        heavyRun, deliverable(RATE, heavy), givenUp(run, hosts.hosts().get(0), heavyRun));
  }

  /**
   * The same backlog claimed in input order, each item then waiting for its host's turn: the
   * threads sit on the heavy host's items while every light host waits, so the bound {@link
   * #everyHostKeepsItsCeilingAndASkewedBacklogHoldsNoOtherHostBack} asserts can fail.
   */
  @Test
  void claimingInInputOrderHoldsTheLightHostsBehindTheHeavyOne() throws Exception {
    String job = "per-host-fifo-" + ProcessHandle.current().pid();
    Cli.Result run = fetch(job, skewedBacklog(), "--claim-order", "FIFO");
    assertThat(run.code()).as(run.err()).isZero();
    assertFewLateTurns(run, "per host in input order, the fleet", HOSTS * RATE, PROCESSES);
    long lightDone = lightHostsDone(hosts.arrivals());
    System.out.printf(
        Locale.ROOT,
        "per host, claimed in input order: light hosts done %.2f s" + " after the first arrival%n",
        lightDone / 1e9);
    assertThat(lightDone).isGreaterThan(LIGHT_DONE_WITHIN);
  }

  /**
   * {@value #KILL_HOSTS} hosts at {@value #KILL_RATE}/s with a Zipf-skewed backlog (the k-th host
   * has {@value #KILL_HEAVIEST}/k items, at least one: 85 in all, the input grouped by host,
   * heaviest first), three worker JVMs, one of them killed with SIGKILL a third of the way in while
   * it holds leased items. At the door every host keeps its ceiling + 1 and, over its steady part,
   * its aggregate (no delivered bound: the turns the victim held are lost); the victim's items come
   * back when their 3-s leases lapse, and every item is done exactly once; the run takes at most
   * 1.05 x the heaviest host's backlog x interval + 10 s from its first arrival to its last, as if
   * no worker had died (the workers' start, seconds of JVMs on a loaded machine, is not the
   * frontier's doing and is printed beside it). Takes 25 s at a load average of 19 on two cores.
   */
  @Test
  void aSkewedBacklogKeepsEveryCeilingAndItsFinishTimeThroughASigkill() throws Exception {
    String job = "per-host-kill-" + ProcessHandle.current().pid();
    List<String> urls = new ArrayList<>();
    int heaviestMicros = 0;
    for (int k = 1; k <= KILL_HOSTS; k++) {
      int items = Math.max(1, Math.round((float) KILL_HEAVIEST / k));
      urls.addAll(hosts.urls(k - 1, items));
      heaviestMicros = Math.max(heaviestMicros, items * 1_000_000 / KILL_RATE);
    }
    CompletableFuture<Cli.Result> running =
        CompletableFuture.supplyAsync(
            () -> {
              try {
                return fetch(
                    job, urls, "--rate", Integer.toString(KILL_RATE), "--lease-seconds", "3");
              } catch (Exception e) {
                throw new IllegalStateException(e);
              }
            });
    long deadline = System.nanoTime() + 60 * SECOND;
    Optional<ProcessHandle> victim = Optional.empty();
    while (victim.isEmpty() && !running.isDone() && System.nanoTime() < deadline) {
      if (hosts.arrivals().size() >= urls.size() / 3) {
        for (ProcessHandle child : ProcessHandle.current().descendants().toList()) {
          if (leasedBy(job, child.pid()) > 0) {
            child.destroyForcibly();
            victim = Optional.of(child);
            break;
          }
        }
      }
      Thread.sleep(20);
    }
    assertThat(victim).as("a worker holding leased items was killed").isPresent();
    Cli.Result run = running.get(120, TimeUnit.SECONDS);
    assertThat(run.code()).as(run.err()).isZero();
    assertThat(run.number("done")).isEqualTo(urls.size());
    // The victim's late turns died with it: the two that finished say theirs.
    assertFewLateTurns(
        run, "per host through a SIGKILL, the fleet", KILL_HOSTS * KILL_RATE, PROCESSES - 1);
    try (Connection c = TestDatabase.connect();
        PreparedStatement s =
            c.prepareStatement(
                "SELECT count(*), count(DISTINCT url) FROM pacer_item WHERE job = ? AND state ="
                    + " 'done'")) {
      s.setString(1, job);
      try (ResultSet r = s.executeQuery()) {
        r.next();
        assertThat(r.getLong(1)).as("items done").isEqualTo(urls.size());
        assertThat(r.getLong(2)).as("distinct URLs done").isEqualTo(urls.size());
      }
    }
    List<LoopbackHosts.Arrival> all = hosts.arrivals();
    assertThat(all.stream().map(a -> a.host() + a.path()).distinct().count())
        .as("items that reached their host")
        .isEqualTo(urls.size());
    int busiest = 0;
    for (Map.Entry<String, List<LoopbackHosts.Arrival>> e : hosts.byHost().entrySet()) {
      int b = LoopbackHosts.busiestSecond(e.getValue());
      busiest = Math.max(busiest, b);
      assertThat(b)
          .as(
              "busiest 1-s window at %s, arrivals at ms %s; sent (ms, lateness ms) %s",
              e.getKey(), LoopbackHosts.offsets(e.getValue()), sent(job, e.getKey()))
          .isLessThanOrEqualTo(KILL_RATE + 1);
    }
    // The victim's turns are lost with it, so no delivered bound: the upper bounds, per host with
    // a steady part to judge.
    int judged = 0;
    for (Map.Entry<String, List<LoopbackHosts.Arrival>> e : hosts.byHost().entrySet()) {
      Timeline steady = steady(e.getValue());
      if (steady.size() >= 3) {
        FleetBounds.at(KILL_RATE, "per host through a SIGKILL, " + e.getKey())
            .assertHeld(timeline(e.getValue()), steady);
        judged++;
      }
    }
    assertThat(judged)
        .as("hosts with a steady part of 3 arrivals or more")
        .isGreaterThanOrEqualTo(2);
    double elapsed =
        Double.parseDouble(run.summary().replaceAll(".*\"elapsedSeconds\":([0-9.]+).*", "$1"));
    double span = (all.get(all.size() - 1).nanos() - all.get(0).nanos()) / 1e9;
    List<LoopbackHosts.Arrival> heaviest = hosts.byHost().get(hosts.hosts().get(0));
    double bound = 1.05 * heaviestMicros / 1e6 + 10;
    System.out.printf(
        Locale.ROOT,
        "per host, %d hosts at %d/s, Zipf backlog of %d items, a worker"
            + " killed with SIGKILL: busiest host window %d; %d arrivals for %d items; %.1f s from"
            + " the first arrival to the last (bound %.1f s), %.1f s from the workers' start; the"
            + " heaviest host's arrivals at ms %s%n",
        KILL_HOSTS,
        KILL_RATE,
        urls.size(),
        busiest,
        all.size(),
        urls.size(),
        span,
        bound,
        elapsed,
        LoopbackHosts.offsets(heaviest));
    assertThat(span).as("seconds from the first arrival to the last").isLessThanOrEqualTo(bound);
  }

  /** Items of the job leased by the worker with this pid (its id is host:pid:suffix). */
  private static long leasedBy(String job, long pid) throws Exception {
    try (Connection c = TestDatabase.connect();
        PreparedStatement s =
            c.prepareStatement(
                "SELECT count(*) FROM pacer_item WHERE job = ? AND state = 'leased' AND leased_by"
                    + " LIKE ?")) {
      s.setString(1, job);
      s.setString(2, "%:" + pid + ":%");
      try (ResultSet r = s.executeQuery()) {
        r.next();
        return r.getLong(1);
      }
    }
  }

  /**
   * Three hosts at 5/s; the first answers its tenth request with 429 and {@code Retry-After: 2}:
   * about 2 s in, after every process's first request to every host, which takes two turns ({@code
   * DestinationFetcher}), so that the pause does not fall in the run's first second. From the
   * moment the pause is recorded on that host's cursor row (read back from the row: its {@code
   * paused_until} less 2 s, on the database's clock, the machine's wall clock here) the host gets
   * nothing for 2 s from any process, then resumes; the other two keep their pace meanwhile. Turns
   * granted between the answer and the record are not recalled: that lag is printed. The other two
   * hold 5/s over their steady parts and deliver it, and break the aggregate of 4/s: the twin of a
   * fleet that paces each host at 1.25 x its ceiling.
   */
  @Test
  void aRetryAfterPausesItsHostAloneWhileTheOthersKeepPace() throws Exception {
    String job = "per-host-pause-" + ProcessHandle.current().pid();
    String paused = hosts.hosts().get(0);
    hosts.answering((host, attempt) -> host.equals(paused) && attempt == 10 ? 429 : 200, "2");
    List<String> urls = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      urls.addAll(hosts.urls(i, 30));
    }
    Cli.Result run = fetch(job, urls, "--rate", "5");
    assertThat(run.code()).as(run.err()).isZero();
    assertThat(run.number("done")).isEqualTo(90);
    assertFewLateTurns(run, "per host beside a pause, the fleet", 3 * 5, PROCESSES);

    long pausedUntil;
    try (Connection c = TestDatabase.connect();
        Statement s = c.createStatement();
        ResultSet r =
            s.executeQuery(
                "SELECT (extract(epoch FROM paused_until) * 1000000)::bigint"
                    + " FROM pacer_cursor WHERE name = '"
                    + paused
                    + "'")) {
      assertThat(r.next()).isTrue();
      pausedUntil = r.getLong(1);
    }
    long recorded = pausedUntil - 2_000_000;
    Map<String, List<LoopbackHosts.Arrival>> byHost = hosts.byHost();
    List<LoopbackHosts.Arrival> a = byHost.get(paused);
    long answered =
        a.stream().filter(x -> x.status() == 429).findFirst().orElseThrow().epochMicros();
    long during =
        a.stream()
            .filter(
                x ->
                    x.epochMicros() > recorded + ON_THE_WIRE_MICROS
                        && x.epochMicros() < pausedUntil - 50_000)
            .count();
    long resumed =
        a.stream()
            .mapToLong(LoopbackHosts.Arrival::epochMicros)
            .filter(t -> t > recorded)
            .max()
            .orElseThrow();
    List<Long> othersDuring = new ArrayList<>();
    for (int i = 1; i < 3; i++) {
      othersDuring.add(
          byHost.get(hosts.hosts().get(i)).stream()
              .filter(x -> x.epochMicros() >= recorded && x.epochMicros() < pausedUntil)
              .count());
      List<LoopbackHosts.Arrival> other = byHost.get(hosts.hosts().get(i));
      assertThat(LoopbackHosts.busiestSecond(other))
          .as(
              "busiest 1-s window at %s, arrivals at" + " ms %s; sent (ms, lateness ms) %s",
              hosts.hosts().get(i), LoopbackHosts.offsets(other), sent(job, hosts.hosts().get(i)))
          .isLessThanOrEqualTo(6);
      FleetBounds bounds = FleetBounds.at(5, "per host beside a pause, " + hosts.hosts().get(i));
      Timeline otherRun = timeline(other);
      bounds.assertHeld(otherRun, steady(other));
      bounds.assertDeliveredBesideGivenUp(
          otherRun, deliverable(5, other), givenUp(run, hosts.hosts().get(i), otherRun));
      // The twin: the same host's arrivals against a ceiling of 4/s are a fleet that paces its
      // host at 1.25 x the ceiling. A window of 5 may hold them, as it may hold 4/s plus a stray
      // request; the aggregate may not.
      FleetBounds.at(4, "per host at 1.25 x a ceiling of 4/s, " + hosts.hosts().get(i))
          .assertAggregateBroke(steady(other));
    }
    FleetBounds.at(5, "per host, the paused host " + paused).assertHeld(timeline(a), steady(a));
    System.out.printf(
        Locale.ROOT,
        "per host, Retry-After 2 s at one of 3 hosts (5/s each): the"
            + " pause was recorded %.0f ms after the 429 arrived; the host got %d request(s) in"
            + " the pause; the others got %s in those 2 s%n",
        (recorded - answered) / 1e3,
        during,
        othersDuring);
    assertThat(during).as("requests to the paused host during its pause").isZero();
    assertThat(resumed)
        .as("the paused host got requests after its pause")
        .isGreaterThan(pausedUntil - 50_000);
    // 10 turns each in 2 s at 5/s; at least 8.
    assertThat(othersDuring).allSatisfy(n -> assertThat(n).isGreaterThanOrEqualTo(8));
  }
}
