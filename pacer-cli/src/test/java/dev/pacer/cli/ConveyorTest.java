package dev.pacer.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.Timeline;
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
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The conveyor: {@code pacer fetch --processes P} with real worker JVMs. */
class ConveyorTest {

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
    List<String> args = new java.util.ArrayList<>(List.of("fetch", input.toString(),
        "--job", name, "--destination", name, "--db", TestDatabase.jdbcUrl(),
        "--out", dir.resolve("out").toString(), "--max-load", "1000"));
    args.addAll(List.of(extra));
    return args.toArray(String[]::new);
  }

  @Test
  void threeWorkerProcessesHoldOneCeilingBetweenThem() throws Exception {
    String name = "conveyor-" + ProcessHandle.current().pid();
    // The library's fleet bounds at 20/s, over 90 items: long enough (4.5 s) that the three
    // workers, which start a little apart, overlap for most of the run, so per-process pacing
    // would show as ~60 requests in one second.
    Path input = Files.write(dir.resolve("urls.txt"), destination.items(90));
    Cli.Result run = Cli.run(fetchArgs(name, input, "--processes", "3", "--threads", "3",
        "--rate", "20", "--concurrency", "3"));

    assertThat(run.code()).as(run.err()).isEqualTo(0);
    assertThat(run.number("done")).isEqualTo(90);
    List<TestDestination.Arrival> arrivals = destination.arrivals();
    Set<String> workers = new HashSet<>();
    arrivals.forEach(a -> workers.add(a.worker()));
    assertThat(workers).as("requests came from several worker processes").hasSizeGreaterThan(1);
    Timeline fleet = TestDestination.timeline(arrivals);
    assertThat(fleet.size()).isEqualTo(90);
    assertThat(fleet.aggregateRatePerSecond()).as(fleet.toString()).isLessThanOrEqualTo(25.0);
    assertThat(fleet.peakOneSecondWindow()).as(fleet.toString()).isLessThanOrEqualTo(25);
    assertThat(fleet.spanSeconds()).as(fleet.toString()).isGreaterThanOrEqualTo(0.75 * 89 / 20);
  }

  @Test
  void maxDispatchesCapsTheWorkersThatFetchAtOnce() throws Exception {
    String name = "conveyor-cap-" + ProcessHandle.current().pid();
    Path input = Files.write(dir.resolve("urls.txt"), destination.items(12));
    Cli.Result run = Cli.run(fetchArgs(name, input, "--processes", "2", "--max-dispatches", "1",
        "--threads", "2", "--rate", "20", "--concurrency", "2"));

    assertThat(run.code()).as(run.err()).isEqualTo(0);
    assertThat(run.number("done")).isEqualTo(12);
    Set<String> workers = new HashSet<>();
    destination.arrivals().forEach(a -> workers.add(a.worker()));
    assertThat(workers).as("only the worker holding the one dispatch slot fetched").hasSize(1);
  }

  @Test
  void aWorkerKilledWithSigkillLosesNoItemAndNothingIsRecordedTwice() throws Exception {
    String name = "conveyor-kill-" + ProcessHandle.current().pid();
    Path input = Files.write(dir.resolve("urls.txt"), destination.items(40));
    CompletableFuture<Cli.Result> run = CompletableFuture.supplyAsync(() -> Cli.run(fetchArgs(
        name, input, "--processes", "3", "--threads", "2", "--rate", "10", "--concurrency", "2",
        "--lease-seconds", "3")));

    // Wait until the workers are fetching, then SIGKILL one that holds leased items.
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    Optional<ProcessHandle> victim = Optional.empty();
    List<String> heldAtKill = List.of();
    while (victim.isEmpty() && System.nanoTime() < deadline) {
      if (destination.arrivals().size() >= 8) {
        for (ProcessHandle child : ProcessHandle.current().children().toList()) {
          List<String> held = leasedBy(name, child.pid());
          if (!held.isEmpty()) {
            child.destroyForcibly();
            victim = Optional.of(child);
            heldAtKill = held;
            break;
          }
        }
      }
      Thread.sleep(20);
    }
    assertThat(victim).as("a worker holding a lease was killed").isPresent();
    victim.get().onExit().get(10, TimeUnit.SECONDS);
    Cli.Result result = run.get(120, TimeUnit.SECONDS);

    assertThat(result.code()).as(result.err()).isEqualTo(0);
    assertThat(result.number("done")).isEqualTo(40);
    assertThat(result.number("pending")).isZero();
    try (Connection c = TestDatabase.connect();
        PreparedStatement s = c.prepareStatement(
            "SELECT count(*), count(DISTINCT url) FROM pacer_item WHERE job = ? AND state = 'done'")) {
      s.setString(1, name);
      try (ResultSet r = s.executeQuery()) {
        r.next();
        assertThat(r.getLong(1)).isEqualTo(40);
        assertThat(r.getLong(2)).isEqualTo(40);
      }
    }
    Set<String> fetched = new HashSet<>();
    destination.arrivals().forEach(a -> fetched.add(a.path()));
    assertThat(fetched).hasSize(40);
    for (String url : heldAtKill) {
      assertThat(fetched).contains(url.substring(url.indexOf("/item/")));
    }
  }

  @Test
  void aTerminatedWorkerGivesItsItemsBackAtOnce() throws Exception {
    String name = "conveyor-term-" + ProcessHandle.current().pid();
    Path input = Files.write(dir.resolve("urls.txt"), destination.items(30));
    // A 90-s lease: if the terminated worker's items had to wait for it, the run would take
    // longer than the 45 s this test allows.
    CompletableFuture<Cli.Result> run = CompletableFuture.supplyAsync(() -> Cli.run(fetchArgs(
        name, input, "--processes", "3", "--threads", "2", "--rate", "10", "--concurrency", "2",
        "--lease-seconds", "90")));
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
        PreparedStatement s = c.prepareStatement(
            "SELECT url FROM pacer_item WHERE job = ? AND state = 'leased' AND leased_by LIKE ?")) {
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
