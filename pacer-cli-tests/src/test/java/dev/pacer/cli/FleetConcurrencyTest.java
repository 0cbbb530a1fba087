package dev.pacer.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.postgres.PostgresFleetSlots;
import dev.pacer.postgres.TestDatabase;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code --fleet-concurrency}: requests in flight to a slow destination, counted at the
 * destination, across a conveyor of three worker JVMs x six threads. The fleet cap holds them at 4;
 * the per-process cap of 4 alone (its twin) lets more than 4 through; a worker killed with SIGKILL
 * while holding slots gives them back within one lease.
 */
class FleetConcurrencyTest {

  private static final int CAP = 4;

  /** 20/s with answers taking 300 ms: about 6 requests would be in flight without a cap. */
  private static final int RATE = 20;

  private static final long ANSWER_MILLIS = 300;
  private static final int ITEMS = 60;

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

  private String[] fetchArgs(String name, int items, int threads, String... extra)
      throws IOException {
    Path input = Files.write(dir.resolve(name + ".txt"), destination.items(items));
    List<String> args =
        new ArrayList<>(
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
                "1000",
                "--no-progress",
                "--processes",
                "3",
                "--threads",
                Integer.toString(threads),
                "--rate",
                Integer.toString(RATE)));
    args.addAll(List.of(extra));
    return args.toArray(String[]::new);
  }

  @Test
  void threeProcessesNeverHaveMoreThanTheFleetCapInFlight() throws Exception {
    String name = "fleet-cap-" + ProcessHandle.current().pid();
    destination.answeringAfter(ANSWER_MILLIS);
    Cli.Result run =
        Cli.run(
            fetchArgs(
                name,
                ITEMS,
                6,
                "--concurrency",
                "6",
                "--fleet-concurrency",
                Integer.toString(CAP)));

    run.err()
        .lines()
        .filter(l -> l.contains("WARN") || l.contains("ERROR"))
        .forEach(l -> System.out.println(name + " | " + l));
    assertThat(run.code()).as(run.err()).isZero();
    assertThat(run.number("done")).isEqualTo(ITEMS);
    System.out.printf(
        Locale.ROOT,
        "fleet cap %d, 3 processes x 6 threads, %d ms answers: at most"
            + " %d open at the destination; %s%n",
        CAP,
        ANSWER_MILLIS,
        destination.mostOpenAtOnce(),
        TestDestination.timeline(destination.arrivals()));
    assertThat(destination.mostOpenAtOnce())
        .as("most requests open at the destination at once")
        .isEqualTo(CAP);
  }

  /**
   * The same run with today's per-process cap of 4 and no fleet cap: three processes put more than
   * 4 in flight, so {@link #threeProcessesNeverHaveMoreThanTheFleetCapInFlight} can fail.
   */
  @Test
  void thePerProcessCapAloneLetsMoreThanFourIntoFlight() throws Exception {
    String name = "fleet-cap-per-process-" + ProcessHandle.current().pid();
    destination.answeringAfter(ANSWER_MILLIS);
    Cli.Result run = Cli.run(fetchArgs(name, ITEMS, 6, "--concurrency", Integer.toString(CAP)));

    assertThat(run.code()).as(run.err()).isZero();
    System.out.printf(
        Locale.ROOT,
        "per-process cap %d, 3 processes x 6 threads, %d ms answers: at"
            + " most %d open at the destination%n",
        CAP,
        ANSWER_MILLIS,
        destination.mostOpenAtOnce());
    assertThat(destination.mostOpenAtOnce())
        .as("most requests open at the destination at once")
        .isGreaterThan(CAP);
  }

  /**
   * A worker holding fleet slots is killed with SIGKILL: its slots are seen held under a live lease
   * at most one lease (10 s) after the kill, and free not before three quarters of one (it renews
   * every quarter lease), the cap still holds at the destination, and the run finishes. Every
   * instant is the database's, on whose clock the lease runs: a look at the slots is judged at its
   * own now, so how often this test looks does not count.
   */
  @Test
  void aWorkerKilledWithSigkillGivesItsSlotsBackWithinOneLease() throws Exception {
    String name = "fleet-cap-kill-" + ProcessHandle.current().pid();
    destination.answeringAfter(1500);
    String[] args =
        fetchArgs(
            name,
            24,
            2,
            "--concurrency",
            "2",
            "--fleet-concurrency",
            Integer.toString(CAP),
            "--lease-seconds",
            "3");
    CompletableFuture<Cli.Result> run = CompletableFuture.supplyAsync(() -> Cli.run(args));

    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    Optional<ProcessHandle> victim = Optional.empty();
    long killedAt = 0;
    long lastHeldAt = 0;
    long freedAt = 0;
    int heldAtKill = 0;
    try (Connection clock = TestDatabase.connect()) {
      while (victim.isEmpty() && System.nanoTime() < deadline) {
        for (ProcessHandle child : ProcessHandle.current().children().toList()) {
          int held = slotsHeldBy(clock, name, child.pid()).slots();
          if (held > 0) {
            child.destroyForcibly();
            killedAt = databaseMicros(clock);
            victim = Optional.of(child);
            heldAtKill = held;
            break;
          }
        }
        Thread.sleep(20);
      }
      assertThat(victim).as("a worker holding fleet slots was killed").isPresent();
      long pid = victim.get().pid();
      lastHeldAt = killedAt;
      while (lastHeldAt - killedAt < TimeUnit.SECONDS.toMicros(30)) {
        Held held = slotsHeldBy(clock, name, pid);
        if (held.slots() == 0) {
          freedAt = held.atMicros();
          break;
        }
        lastHeldAt = held.atMicros();
        Thread.sleep(20);
      }
    }
    Cli.Result result = run.get(180, TimeUnit.SECONDS);
    double heldAfter = (lastHeldAt - killedAt) / 1e6;
    double freedAfter = (freedAt - killedAt) / 1e6;
    double lease = PostgresFleetSlots.DEFAULT_LEASE.toMillis() / 1000.0;
    System.out.printf(
        Locale.ROOT,
        "kill -9 of a worker holding %d fleet slot(s): last seen held"
            + " %.3f s after the kill, free %.3f s after it (lease %.0f s); at most %d open at the"
            + " destination%n",
        heldAtKill,
        heldAfter,
        freedAfter,
        lease,
        destination.mostOpenAtOnce());
    assertThat(freedAt).as("the slots were freed").isPositive();
    assertThat(heldAfter)
        .as("seconds after the kill the killed worker's slots were last seen held")
        // The slack is for a statement the worker sent before the kill, which the server runs
        // after the kill was read.
        .isLessThanOrEqualTo(lease + 0.1);
    assertThat(freedAfter)
        .as("seconds until the killed worker's slots were free")
        .isGreaterThanOrEqualTo(lease * 0.75 - 0.5);
    assertThat(destination.mostOpenAtOnce()).isLessThanOrEqualTo(CAP);
    assertThat(result.number("done")).isEqualTo(24);
  }

  @Test
  void aBadFleetConcurrencyIsRefusedNamingTheValue() throws Exception {
    String[] zero = fetchArgs("fleet-cap-bad", 1, 1, "--fleet-concurrency", "0");
    Cli.Result result = Cli.run(zero);
    assertThat(result.code()).isEqualTo(Main.EXIT_USAGE);
    assertThat(result.err()).contains("--fleet-concurrency must be >= 1, got 0");
    String[] word = fetchArgs("fleet-cap-bad", 1, 1, "--fleet-concurrency", "four");
    Cli.Result notANumber = Cli.run(word);
    assertThat(notANumber.code()).isEqualTo(Main.EXIT_USAGE);
    assertThat(notANumber.err()).contains("--fleet-concurrency", "four");
  }

  /** How many slots a worker held under a live lease, as the database judged it at its now. */
  private record Held(int slots, long atMicros) {}

  /** Slots of the destination held under a live lease by the worker with this pid. */
  private static Held slotsHeldBy(Connection c, String destinationName, long pid)
      throws SQLException {
    try (PreparedStatement s =
        c.prepareStatement(
            "SELECT count(*),"
                + " (extract(epoch FROM now()) * 1000000)::bigint FROM pacer_fleet_slot"
                + " WHERE destination = ? AND holder LIKE ? AND expires_at > now()")) {
      s.setString(1, destinationName);
      s.setString(2, "%:" + pid + ":%");
      try (ResultSet r = s.executeQuery()) {
        r.next();
        return new Held(r.getInt(1), r.getLong(2));
      }
    } catch (SQLException e) {
      if ("42P01".equals(e.getSQLState())) {
        return new Held(0, databaseMicros(c));
      }
      throw e;
    }
  }

  private static long databaseMicros(Connection c) throws SQLException {
    try (Statement s = c.createStatement();
        ResultSet r =
            s.executeQuery("SELECT (extract(epoch FROM clock_timestamp()) * 1000000)::bigint")) {
      r.next();
      return r.getLong(1);
    }
  }
}
