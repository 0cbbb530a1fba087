package dev.pacer.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.postgres.TestDatabase;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.LongSummaryStatistics;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The conveyor: {@code pacer fetch --processes P} with real worker JVMs. */
class ConveyorTest {

  private static final int RATE = 20;

  @TempDir Path dir;
  private TestDestination destination;

  @BeforeEach
  void start() throws IOException {
    destination = new TestDestination();
  }

  @AfterEach
  void stop() {
    destination.close();
  }

  private String[] fetchArgs(String name, Path input, String... extra) {
    List<String> args =
        new java.util.ArrayList<>(
            List.of(
                "fetch",
                input.toString(),
                "--job",
                name,
                "--destination",
                name,
                "--db",
                TestDatabase.jdbcUrl(),
                "--out",
                dir.resolve("out").toString(),
                "--max-load",
                "1000"));
    args.addAll(List.of(extra));
    return args.toArray(String[]::new);
  }

  @Test
  void threeWorkerProcessesHoldOneCeilingBetweenThem() throws Exception {
    String name = "conveyor-" + ProcessHandle.current().pid();
    List<TestDestination.Arrival> arrivals = threeWorkers(name, "FLEET");

    TestDestination.assertHeldCeiling(
        arrivals, RATE, RequestLogTrace.of(TestDatabase.jdbcUrl(), name, arrivals, RATE));
    assertOverlapped(arrivals);
  }

  /**
   * The same run with each worker pacing alone: three overlapping workers at the full rate each
   * break the ceiling that {@link #threeWorkerProcessesHoldOneCeilingBetweenThem} asserts.
   */
  @Test
  void perProcessPacingBreaksTheCeilingTheFleetHolds() throws Exception {
    String name = "conveyor-per-process-" + ProcessHandle.current().pid();
    List<TestDestination.Arrival> arrivals = threeWorkers(name, "PER_PROCESS");

    TestDestination.assertBrokeCeiling(arrivals, RATE);
  }

  /**
   * 120 items at the library's fleet rate of 20/s, 3 workers x 3 threads: 6 s paced fleet-wide,
   * long enough that the workers, which start up to a second apart, overlap for most of it.
   */
  private List<TestDestination.Arrival> threeWorkers(String name, String pacing) throws Exception {
    Path input = Files.write(dir.resolve("urls.txt"), destination.items(120));
    Cli.Result run =
        Cli.run(
            fetchArgs(
                name,
                input,
                "--processes",
                "3",
                "--threads",
                "3",
                "--rate",
                Integer.toString(RATE),
                "--concurrency",
                "3",
                "--pacing",
                pacing));

    assertThat(run.code()).as(run.err()).isEqualTo(0);
    assertThat(run.number("done")).isEqualTo(120);
    List<TestDestination.Arrival> arrivals = destination.arrivals();
    assertThat(arrivals).hasSize(120);
    return arrivals;
  }

  /**
   * Every worker sent its first request at least a second before every other worker sent its last:
   * the ceiling was shared by workers fetching at the same time, not held by one worker after
   * another.
   */
  private static void assertOverlapped(List<TestDestination.Arrival> arrivals) {
    Map<String, LongSummaryStatistics> byWorker = new TreeMap<>();
    arrivals.forEach(
        a ->
            byWorker
                .computeIfAbsent(a.worker(), w -> new LongSummaryStatistics())
                .accept(a.nanos()));
    long origin = arrivals.stream().mapToLong(TestDestination.Arrival::nanos).min().orElseThrow();
    StringBuilder intervals = new StringBuilder();
    byWorker.forEach(
        (w, s) ->
            intervals.append(
                String.format(
                    Locale.ROOT,
                    " pid %s: %d requests in [%.3f, %.3f] s;",
                    w,
                    s.getCount(),
                    (s.getMin() - origin) / 1e9,
                    (s.getMax() - origin) / 1e9)));
    System.out.println("conveyor workers:" + intervals);
    assertThat(byWorker).as("workers that fetched:" + intervals).hasSize(3);
    for (Map.Entry<String, LongSummaryStatistics> a : byWorker.entrySet()) {
      for (Map.Entry<String, LongSummaryStatistics> b : byWorker.entrySet()) {
        if (!a.getKey().equals(b.getKey())) {
          assertThat((b.getValue().getMax() - a.getValue().getMin()) / 1e9)
              .as(
                  "pid %s started a second before pid %s ended:%s",
                  a.getKey(), b.getKey(), intervals)
              .isGreaterThanOrEqualTo(1.0);
        }
      }
    }
  }

  @Test
  void maxDispatchesCapsTheWorkersThatFetchAtOnce() throws Exception {
    String name = "conveyor-cap-" + ProcessHandle.current().pid();
    Path input = Files.write(dir.resolve("urls.txt"), destination.items(12));
    Cli.Result run =
        Cli.run(
            fetchArgs(
                name,
                input,
                "--processes",
                "2",
                "--max-dispatches",
                "1",
                "--threads",
                "2",
                "--rate",
                "20",
                "--concurrency",
                "2"));

    assertThat(run.code()).as(run.err()).isEqualTo(0);
    assertThat(run.number("done")).isEqualTo(12);
    assertThat(run.number("turnsShared"))
        .as("summed over the worker processes' reports")
        .isEqualTo(12);
    Set<String> workers = new HashSet<>();
    destination.arrivals().forEach(a -> workers.add(a.worker()));
    assertThat(workers).as("only the worker holding the one dispatch slot fetched").hasSize(1);
  }

  @Test
  void aWorkerKilledWithSigkillLosesNoItemAndNothingIsRecordedTwice() throws Exception {
    String name = "conveyor-kill-" + ProcessHandle.current().pid();
    Path input = Files.write(dir.resolve("urls.txt"), destination.items(40));
    CompletableFuture<Cli.Result> run =
        CompletableFuture.supplyAsync(
            () ->
                Cli.run(
                    fetchArgs(
                        name,
                        input,
                        "--processes",
                        "3",
                        "--threads",
                        "2",
                        "--rate",
                        "10",
                        "--concurrency",
                        "2",
                        "--lease-seconds",
                        "3")));

    // Wait until the workers are fetching, then SIGKILL one that holds leased items.
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    Optional<ProcessHandle> victim = Optional.empty();
    long killedAt = 0;
    while (victim.isEmpty() && System.nanoTime() < deadline) {
      if (destination.arrivals().size() >= 8) {
        for (ProcessHandle child : ProcessHandle.current().children().toList()) {
          if (!leasedBy(name, child.pid()).isEmpty()) {
            killedAt = System.nanoTime();
            child.destroyForcibly();
            victim = Optional.of(child);
            break;
          }
        }
      }
      Thread.sleep(20);
    }
    assertThat(victim).as("a worker holding a lease was killed").isPresent();
    victim.get().onExit().get(10, TimeUnit.SECONDS);
    // Read once the victim is dead and well within its 3-s lease, which no other worker can take
    // over before it lapses: the items it held at the kill and had not recorded.
    List<String> heldAtKill = leasedBy(name, victim.get().pid());
    assertThat(heldAtKill).as("the victim held items when it died").isNotEmpty();
    Cli.Result result = run.get(120, TimeUnit.SECONDS);

    assertThat(result.code()).as(result.err()).isEqualTo(0);
    assertThat(result.number("done")).isEqualTo(40);
    assertThat(result.number("pending")).isZero();
    try (Connection c = TestDatabase.connect();
        PreparedStatement s =
            c.prepareStatement(
                "SELECT count(*), count(DISTINCT url) FROM pacer_item WHERE job = ? AND state ="
                    + " 'done'")) {
      s.setString(1, name);
      try (ResultSet r = s.executeQuery()) {
        r.next();
        assertThat(r.getLong(1)).isEqualTo(40);
        assertThat(r.getLong(2)).isEqualTo(40);
      }
    }
    List<TestDestination.Arrival> arrivals = destination.arrivals();
    Set<String> fetched = new HashSet<>();
    arrivals.forEach(a -> fetched.add(a.path()));
    assertThat(fetched).hasSize(40);
    String victimPid = Long.toString(victim.get().pid());
    long kill = killedAt;
    for (String url : heldAtKill) {
      String path = url.substring(url.indexOf("/item/"));
      List<String> itsArrivals =
          arrivals.stream()
              .filter(a -> a.path().equals(path))
              .map(
                  a ->
                      String.format(
                          Locale.ROOT,
                          "pid %s at %+.3f s from the kill",
                          a.worker(),
                          (a.nanos() - kill) / 1e9))
              .toList();
      System.out.println("kill -9: " + path + " held by pid " + victimPid + ": " + itsArrivals);
      assertThat(arrivals)
          .as(
              "%s, held by pid %s when it was killed, fetched after the kill by another worker;"
                  + " its arrivals: %s",
              path, victimPid, itsArrivals)
          .anyMatch(
              a -> a.path().equals(path) && !a.worker().equals(victimPid) && a.nanos() > kill);
    }
  }

  @Test
  void aTerminatedWorkerGivesItsItemsBackAtOnce() throws Exception {
    String name = "conveyor-term-" + ProcessHandle.current().pid();
    Path input = Files.write(dir.resolve("urls.txt"), destination.items(30));
    // A 90-s lease: if the terminated worker's items had to wait for it, the run would take
    // longer than the 45 s this test allows.
    CompletableFuture<Cli.Result> run =
        CompletableFuture.supplyAsync(
            () ->
                Cli.run(
                    fetchArgs(
                        name,
                        input,
                        "--processes",
                        "3",
                        "--threads",
                        "2",
                        "--rate",
                        "10",
                        "--concurrency",
                        "2",
                        "--lease-seconds",
                        "90")));
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    Optional<ProcessHandle> victim = Optional.empty();
    while (victim.isEmpty() && System.nanoTime() < deadline) {
      if (destination.arrivals().size() >= 6) {
        for (ProcessHandle child : ProcessHandle.current().children().toList()) {
          if (!leasedBy(name, child.pid()).isEmpty()) {
            child.destroy(); // SIGTERM
            victim = Optional.of(child);
            break;
          }
        }
      }
      Thread.sleep(20);
    }
    assertThat(victim).as("a worker holding a lease was terminated").isPresent();
    Cli.Result result = run.get(45, TimeUnit.SECONDS);

    assertThat(result.code()).as(result.err()).isEqualTo(0);
    assertThat(result.number("done")).isEqualTo(30);
  }

  /** URLs of the job leased by the worker with this pid (its id is host:pid:suffix). */
  private static List<String> leasedBy(String job, long pid) throws SQLException {
    try (Connection c = TestDatabase.connect();
        PreparedStatement s =
            c.prepareStatement(
                "SELECT url FROM pacer_item WHERE job = ? AND state = 'leased' AND leased_by"
                    + " LIKE ?")) {
      s.setString(1, job);
      s.setString(2, "%:" + pid + ":%");
      List<String> urls = new java.util.ArrayList<>();
      try (ResultSet r = s.executeQuery()) {
        while (r.next()) {
          urls.add(r.getString(1));
        }
      }
      return urls;
    } catch (SQLException e) {
      if ("42P01".equals(e.getSQLState())) {
        return List.of();
      }
      throw e;
    }
  }
}
