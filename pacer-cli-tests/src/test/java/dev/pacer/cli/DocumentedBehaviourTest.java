package dev.pacer.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.postgres.TestDatabase;
import dev.pacer.testing.FleetBounds;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What docs/cli.md promises about the conveyor and {@code pacer status}, checked on real worker
 * JVMs: the database URL reaches workers through their environment, ending the orchestrator ends
 * its workers, a trip recorded by one worker stops the others within about a second, and status
 * shows a worker that paces locally.
 */
class DocumentedBehaviourTest {

  private static final long SECOND = 1_000_000_000L;

  @TempDir Path dir;
  private TestDestination destination;
  private String job;

  @BeforeEach
  void start() throws IOException {
    destination = new TestDestination();
    job = "documented-" + UUID.randomUUID().toString().substring(0, 8);
  }

  @AfterEach
  void stop() {
    destination.close();
  }

  /** {@code pacer fetch} as its own JVM: 2 workers x 2 threads, 100 items at 5/s (20 s). */
  private Process conveyor(String db) throws IOException {
    Path input = Files.write(dir.resolve("urls.txt"), destination.items(100));
    return Cli.spawn(
        Map.of(),
        dir.resolve("fetch.out"),
        dir.resolve("fetch.err"),
        "fetch",
        input.toString(),
        "--job",
        job,
        "--destination",
        job,
        "--db",
        db,
        "--processes",
        "2",
        "--threads",
        "2",
        "--concurrency",
        "2",
        "--rate",
        "5",
        "--out",
        dir.resolve("out").toString(),
        "--max-load",
        "1000",
        "--no-progress");
  }

  /** The orchestrator's worker JVMs, once both have sent a request. */
  private List<ProcessHandle> fetchingWorkers(Process orchestrator) throws Exception {
    long deadline = System.nanoTime() + 60 * SECOND;
    while (true) {
      List<ProcessHandle> workers =
          orchestrator
              .children()
              .filter(p -> commandLine(p.pid()).contains("dev.pacer.cli.Main\0worker\0"))
              .toList();
      long sending =
          workers.stream()
              .filter(
                  w ->
                      destination.arrivals().stream()
                          .anyMatch(a -> a.worker().equals(Long.toString(w.pid()))))
              .count();
      if (workers.size() == 2 && sending == 2) {
        return workers;
      }
      assertThat(orchestrator.isAlive())
          .as("pacer fetch is running: %s", Files.readString(dir.resolve("fetch.err")))
          .isTrue();
      assertThat(System.nanoTime()).as("two workers fetching within 60 s").isLessThan(deadline);
      Thread.sleep(50);
    }
  }

  @Test
  void workersReceiveTheDatabaseUrlInTheirEnvironmentNotOnTheirCommandLine() throws Exception {
    String secret = "Pw-" + UUID.randomUUID().toString().substring(0, 12);
    String db = TestDatabase.jdbcUrl() + "&password=" + secret;
    Process orchestrator = conveyor(db);
    try {
      for (ProcessHandle worker : fetchingWorkers(orchestrator)) {
        String commandLine = commandLine(worker.pid());
        List<String> environment = List.of(read("/proc/" + worker.pid() + "/environ").split("\0"));
        assertThat(commandLine)
            .as("worker pid %d's command line", worker.pid())
            .contains("--job\0" + job)
            .doesNotContain(secret)
            .doesNotContain("jdbc:postgresql:");
        assertThat(environment)
            .as("worker pid %d's environment", worker.pid())
            .contains("PACER_DB=" + db);
      }
    } finally {
      orchestrator.destroy();
      orchestrator.waitFor(30, TimeUnit.SECONDS);
    }
  }

  /**
   * SIGTERM to {@code pacer fetch --processes 2} ends both workers: each gives its items back, says
   * how many turns it gave up as late, and exits within a few seconds; no request arrives after
   * that, and no item stays leased.
   */
  @Test
  void terminatingTheOrchestratorEndsItsWorkers() throws Exception {
    Process orchestrator = conveyor(TestDatabase.jdbcUrl());
    List<ProcessHandle> workers = fetchingWorkers(orchestrator);
    long terminated = System.nanoTime();
    orchestrator.destroy();

    for (ProcessHandle worker : workers) {
      assertThat(worker.onExit().completeOnTimeout(null, 5, TimeUnit.SECONDS).get())
          .as("worker pid %d ended within 5 s of SIGTERM to pacer fetch", worker.pid())
          .isNotNull();
    }
    double ended = (System.nanoTime() - terminated) / 1e9;
    assertThat(orchestrator.waitFor(10, TimeUnit.SECONDS)).isTrue();
    int arrivals = destination.arrivals().size();
    Thread.sleep(1000);
    System.out.printf(
        Locale.ROOT,
        "SIGTERM: both workers ended %.3f s after it; %d of 100" + " requests sent%n",
        ended,
        arrivals);
    assertThat(destination.arrivals()).as("no request after the workers ended").hasSize(arrivals);
    assertThat(arrivals).as("the run was cut short").isLessThan(100);
    assertThat(openItems("leased")).as("no item left leased").isZero();
    Cli.LateTurns late = Cli.LateTurns.in(Files.readString(dir.resolve("fetch.err")));
    System.out.println("SIGTERM: " + late);
    late.assertFew(
        FleetBounds.at(5, "SIGTERM, the fleet"),
        2,
        TestDestination.timeline(destination.arrivals()));
  }

  /**
   * One worker meets a 403 and records a DESTINATION_LOCKOUT trip. The other two learn of it from
   * their heartbeat (once a second) and stop; only the turns they had already been granted (at most
   * one per fetch thread: 6 turns, 0.6 s at 10/s) still go out. So nothing arrives later than 2 s
   * after the 403, of a run that had 17 s left.
   */
  @Test
  void aTripRecordedByOneWorkerStopsTheOthersWithinASecond() throws Exception {
    // Only the first request for the item is refused: a worker that meets a 403 gives the item
    // back, and the others must stop because of the trip, not because each meets its own 403.
    destination.answering((path, attempt) -> path.equals("/item/40") && attempt == 1 ? 403 : 200);
    Path input = Files.write(dir.resolve("urls.txt"), destination.items(200));
    Cli.Result run =
        Cli.run(
            "fetch",
            input.toString(),
            "--job",
            job,
            "--destination",
            job,
            "--db",
            TestDatabase.jdbcUrl(),
            "--processes",
            "3",
            "--threads",
            "2",
            "--concurrency",
            "2",
            "--rate",
            "10",
            "--out",
            dir.resolve("out").toString(),
            "--max-load",
            "1000");

    assertThat(run.code()).as(run.err()).isEqualTo(3);
    assertThat(run.text("haltedBar")).isEqualTo("DESTINATION_LOCKOUT");
    List<TestDestination.Arrival> arrivals = destination.arrivals();
    assertThat(destination.count(403)).isEqualTo(1);
    TestDestination.Arrival lockout =
        arrivals.stream().filter(a -> a.status() == 403).findFirst().orElseThrow();
    List<String> after = new ArrayList<>();
    long last = lockout.nanos();
    for (TestDestination.Arrival a : arrivals) {
      if (a.nanos() > lockout.nanos()) {
        after.add(
            String.format(
                Locale.ROOT, "pid %s %+.3f s", a.worker(), (a.nanos() - lockout.nanos()) / 1e9));
        last = Math.max(last, a.nanos());
      }
    }
    System.out.printf(
        Locale.ROOT,
        "trip: 403 to pid %s; %d arrivals after it, the last %.3f s" + " after: %s%n",
        lockout.worker(),
        after.size(),
        (last - lockout.nanos()) / 1e9,
        after);
    assertThat(arrivals.stream().map(TestDestination.Arrival::worker).distinct())
        .as("three workers were fetching")
        .hasSize(3);
    assertThat(last - lockout.nanos())
        .as("arrivals after the 403: %s", after)
        .isLessThanOrEqualTo(2 * SECOND);
    assertThat(openItems("pending")).as("the run stopped with work left").isGreaterThan(100);
  }

  /**
   * A worker whose cursor cannot be reached while its work state can: a session holds the cursor
   * row's lock, so the worker's reservations time out (the cursor's 1-s lock_timeout) and it paces
   * locally. {@code pacer status} shows it degraded, and not once the lock is gone.
   */
  @Test
  void statusShowsAWorkerThatPacesLocally() throws Exception {
    Path input = Files.write(dir.resolve("urls.txt"), destination.items(100));
    CompletableFuture<Cli.Result> run =
        CompletableFuture.supplyAsync(
            () ->
                Cli.run(
                    "fetch",
                    input.toString(),
                    "--job",
                    job,
                    "--destination",
                    job,
                    "--db",
                    TestDatabase.jdbcUrl(),
                    "--concurrency",
                    "2",
                    "--rate",
                    "5",
                    "--out",
                    dir.resolve("out").toString(),
                    "--max-load",
                    "1000"));
    long deadline = System.nanoTime() + 60 * SECOND;
    while (destination.arrivals().size() < 3) {
      assertThat(System.nanoTime()).as("the run is fetching").isLessThan(deadline);
      Thread.sleep(50);
    }
    Pattern paced = Pattern.compile("\n  " + job + " +next turn .* degraded no\n");
    Pattern degraded =
        Pattern.compile(
            "\n  " + job + " +next turn .* degraded YES \\(1 of 1" + " pacing locally\\)\n");
    assertThat(awaitStatus(paced, 5)).containsPattern(paced).doesNotContain("DEGRADED");

    String whileLocked;
    long locked;
    try (Connection c = TestDatabase.connect()) {
      c.setAutoCommit(false);
      try (PreparedStatement lock =
          c.prepareStatement("SELECT 1 FROM pacer_cursor WHERE name = ? FOR UPDATE")) {
        lock.setString(1, job);
        try (ResultSet r = lock.executeQuery()) {
          assertThat(r.next()).as("the destination's cursor row").isTrue();
        }
      }
      locked = System.nanoTime();
      whileLocked = awaitStatus(degraded, 10);
      System.out.printf(
          Locale.ROOT,
          "status: degraded %.1f s after the cursor row was locked%n",
          (System.nanoTime() - locked) / 1e9);
      c.rollback();
    }
    long unlocked = System.nanoTime();
    String afterwards = awaitStatus(paced, 15);
    System.out.printf(
        Locale.ROOT,
        "status: paced fleet-wide again %.1f s after the lock ended%n",
        (System.nanoTime() - unlocked) / 1e9);
    Cli.Result result = run.get(120, TimeUnit.SECONDS);

    assertThat(whileLocked).containsPattern(degraded).contains("  DEGRADED");
    assertThat(afterwards).containsPattern(paced).doesNotContain("DEGRADED");
    // --job narrows every section to the job: earlier tests left other destinations' cursors.
    String destinations = afterwards.substring(afterwards.indexOf("Destinations"));
    destinations =
        destinations.substring(destinations.indexOf('\n') + 1, destinations.indexOf("\n\n"));
    assertThat(destinations.lines())
        .isNotEmpty()
        .allSatisfy(line -> assertThat(line).startsWith("  " + job + " "));
    assertThat(afterwards).contains("at the door while it sent: ");
    assertThat(result.code()).as(result.err()).isEqualTo(0);
  }

  /** The output of {@code pacer status --job JOB} once it matches, or the last one. */
  private String awaitStatus(Pattern expected, int seconds) throws InterruptedException {
    long deadline = System.nanoTime() + seconds * SECOND;
    String out;
    do {
      Cli.Result status = Cli.run("status", "--job", job, "--db", TestDatabase.jdbcUrl());
      assertThat(status.code()).as(status.err()).isEqualTo(0);
      out = status.out();
      if (expected.matcher(out).find()) {
        return out;
      }
      Thread.sleep(200);
    } while (System.nanoTime() < deadline);
    return out;
  }

  private long openItems(String state) throws SQLException {
    try (Connection c = TestDatabase.connect();
        PreparedStatement s =
            c.prepareStatement("SELECT count(*) FROM pacer_item WHERE job = ? AND state = ?")) {
      s.setString(1, job);
      s.setString(2, state);
      try (ResultSet r = s.executeQuery()) {
        r.next();
        return r.getLong(1);
      }
    }
  }

  private static String commandLine(long pid) {
    return read("/proc/" + pid + "/cmdline");
  }

  private static String read(String file) {
    try {
      return Files.readString(Path.of(file), StandardCharsets.ISO_8859_1);
    } catch (IOException e) {
      return "";
    }
  }
}
