package dev.pacer.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.TimeSource;
import dev.pacer.cli.run.DispatchSlot;
import dev.pacer.postgres.OutagePolicy;
import dev.pacer.postgres.PostgresCursorConfig;
import dev.pacer.postgres.PostgresFleetSlots;
import dev.pacer.postgres.RestartablePostgres;
import dev.pacer.spi.FleetSlots;
import dev.pacer.testing.Timeline;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Three pooled runs of one destination, two dispatch slots between them, so one run waits for a
 * slot from its start. PostgreSQL stops under them and comes back with their role shut out, then
 * held to two connections, then free. While the runners are shut out, the two slots' leases run out
 * and this test takes both, so that every runner that held a slot finds them all taken when it is
 * back: each waits for one, as at its start, and fetches nothing meanwhile. The test gives its
 * slots back one at a time; the runners take them, every run finishes its own job, and the
 * destination never sees more than the ceiling.
 */
class DispatchSlotReturnTest {

  private static final int RATE = 10;
  private static final int ITEMS = 60;
  private static final int MAX_DISPATCHES = 2;
  private static final long SECOND = 1_000_000_000L;
  private static final String ROLE = "pacer_runner";
  private static final String LOST = "Lost the dispatch slot of destination slots";
  private static final String WAITING =
      "dispatch slots of destination slots are taken; waiting for one";
  private static final String HOLDING = "Holding dispatch slot";
  private static final List<String> JOBS = List.of("slots-a", "slots-b", "slots-c");

  @TempDir Path dir;

  @Test
  void aRunnerThatLostItsSlotInAMessyReturnWaitsForOneAndEveryRunFinishes() throws Exception {
    try (RestartablePostgres postgres = new RestartablePostgres();
        TestDestination destination = new TestDestination()) {
      administer(
          postgres,
          "CREATE ROLE " + ROLE + " LOGIN",
          "GRANT CREATE, USAGE ON SCHEMA public TO " + ROLE);
      List<Process> runs = new ArrayList<>();
      for (String job : JOBS) {
        Path input =
            Files.write(dir.resolve(job + ".txt"), destination.items("/" + job + "/", ITEMS));
        runs.add(
            Cli.spawn(
                Map.of(),
                dir.resolve(job + ".out"),
                dir.resolve(job + ".err"),
                "fetch",
                input.toString(),
                "--job",
                job,
                "--destination",
                "slots",
                "--db",
                "jdbc:postgresql://127.0.0.1:" + postgres.port() + "/postgres?user=" + ROLE,
                "--rate",
                String.valueOf(RATE),
                "--max-dispatches",
                String.valueOf(MAX_DISPATCHES),
                "--out",
                dir.resolve("out").toString(),
                "--max-load",
                "1000",
                "--no-progress",
                "--lease-seconds",
                "20",
                // A few items leased ahead, not a job's worth: each runner must have items left
                // when it is back, and give back those it leased ahead while it waits for a slot.
                "--outage-buffer",
                "2"));
      }
      try {
        awaitArrivals(destination, 1);
        Thread.sleep(4_000);
        assertThat(openItems(postgres))
            .as("every run has items open at the outage")
            .allMatch(open -> open > 0);
        List<Integer> holders = runnersHoldingASlot();
        assertThat(holders).as("runners holding a slot").hasSize(MAX_DISPATCHES);
        administer(postgres, "ALTER ROLE " + ROLE + " CONNECTION LIMIT 0");
        postgres.stopImmediately();
        Thread.sleep(4_000);
        postgres.start();

        try (PostgresFleetSlots test = testsOwnSlots(postgres)) {
          List<FleetSlots.Lease> taken = takeEverySlot(test);
          administer(postgres, "ALTER ROLE " + ROLE + " CONNECTION LIMIT 2");
          Thread.sleep(4_000);
          administer(postgres, "ALTER ROLE " + ROLE + " CONNECTION LIMIT -1");
          for (int holder : holders) {
            awaitLogged(holder, LOST, WAITING);
          }
          int before = destination.arrivals().size();
          Thread.sleep(2_000);
          assertThat(destination.arrivals())
              .as("requests while this test holds every slot")
              .hasSize(before);
          assertThat(slotsTakenByRunners())
              .as("dispatch slots the runners took, all before the" + " outage")
              .isEqualTo(MAX_DISPATCHES);

          taken.get(0).giveBack();
          awaitSlotsTakenByRunners(MAX_DISPATCHES + 1);
        }

        for (int i = 0; i < runs.size(); i++) {
          String job = JOBS.get(i);
          Process run = runs.get(i);
          assertThat(run.waitFor(60, TimeUnit.SECONDS)).as("%s finished", job).isTrue();
          String err = Files.readString(dir.resolve(job + ".err"));
          err.lines()
              .filter(l -> l.contains("WARN") || l.contains("ERROR") || l.contains("dispatch slot"))
              .forEach(l -> System.out.println(job + " | " + l));
          assertThat(run.exitValue()).as("%s exit code: %s", job, err).isZero();
          String[] out = Files.readString(dir.resolve(job + ".out")).strip().split("\n");
          assertThat(out[out.length - 1])
              .as(job)
              .contains("\"done\":" + ITEMS, "\"pending\":0", "\"failed\":0");
        }
      } finally {
        runs.forEach(Process::destroyForcibly);
      }

      List<TestDestination.Arrival> arrivals = destination.arrivals();
      Set<String> fetched = new HashSet<>();
      arrivals.forEach(a -> fetched.add(a.path()));
      assertThat(fetched).as("every item of every job fetched").hasSize(JOBS.size() * ITEMS);
      Timeline fleet = TestDestination.timeline(arrivals);
      System.out.println("dispatch slots after a messy return: " + fleet);
      TestDestination.assertBusiestWindowAtMost(arrivals, RATE + 1);
    }
  }

  /** Fleet slots of this test's own, as the server's superuser, whom no role limit holds. */
  private static PostgresFleetSlots testsOwnSlots(RestartablePostgres postgres) {
    OutagePolicy policy =
        new OutagePolicy(
            "test",
            Duration.ofSeconds(1),
            TimeSource.SYSTEM,
            OutagePolicy.Scheduler.none(),
            () -> {});
    return new PostgresFleetSlots(
        PostgresCursorConfig.forUrl(postgres.jdbcUrl()).build(),
        policy,
        "test",
        PostgresFleetSlots.DEFAULT_LEASE);
  }

  /**
   * Takes every dispatch slot of the destination as soon as the runners' leases run out: none of
   * them can reach PostgreSQL to renew or take one meanwhile.
   */
  private static List<FleetSlots.Lease> takeEverySlot(PostgresFleetSlots slots)
      throws InterruptedException {
    List<FleetSlots.Lease> taken = new ArrayList<>();
    long deadline = System.nanoTime() + 30 * SECOND;
    while (taken.size() < MAX_DISPATCHES) {
      FleetSlots.Claim claim = slots.tryTake(DispatchSlot.key("slots"), MAX_DISPATCHES);
      if (claim.outcome() == FleetSlots.Claim.Outcome.TAKEN) {
        taken.add(claim.lease());
      } else {
        assertThat(System.nanoTime())
            .as("every dispatch slot taken by this test within 30 s")
            .isLessThan(deadline);
        Thread.sleep(50);
      }
    }
    return taken;
  }

  /** Waits until run {@code run} has logged {@code first} and, after it, {@code then}. */
  private void awaitLogged(int run, String first, String then) throws Exception {
    long deadline = System.nanoTime() + 30 * SECOND;
    while (true) {
      String err = Files.readString(dir.resolve(JOBS.get(run) + ".err"));
      int at = err.indexOf(first);
      if (at >= 0 && err.indexOf(then, at) >= 0) {
        return;
      }
      assertThat(System.nanoTime())
          .as("%s logged \"%s\" and then \"%s\" within 30 s: %s", JOBS.get(run), first, then, err)
          .isLessThan(deadline);
      Thread.sleep(50);
    }
  }

  private static void awaitArrivals(TestDestination destination, int n)
      throws InterruptedException {
    long deadline = System.nanoTime() + 60 * SECOND;
    while (destination.arrivals().size() < n) {
      assertThat(System.nanoTime()).as("%d arrivals within 60 s", n).isLessThan(deadline);
      Thread.sleep(20);
    }
  }

  /** Waits until the runners have said {@code n} times in all that they hold a dispatch slot. */
  private void awaitSlotsTakenByRunners(int n) throws Exception {
    long deadline = System.nanoTime() + 30 * SECOND;
    while (slotsTakenByRunners() < n) {
      assertThat(System.nanoTime())
          .as("%d dispatch slots taken by the runners within 30 s", n)
          .isLessThan(deadline);
      Thread.sleep(50);
    }
  }

  /** How many times in all the runners have said that they hold a dispatch slot. */
  private int slotsTakenByRunners() throws IOException {
    int taken = 0;
    for (String job : JOBS) {
      taken += Files.readString(dir.resolve(job + ".err")).split(HOLDING, -1).length - 1;
    }
    return taken;
  }

  /** The runs (indexes into {@link #JOBS}) that have said they hold a dispatch slot. */
  private List<Integer> runnersHoldingASlot() throws IOException {
    List<Integer> holders = new ArrayList<>();
    for (int i = 0; i < JOBS.size(); i++) {
      if (Files.readString(dir.resolve(JOBS.get(i) + ".err")).contains(HOLDING)) {
        holders.add(i);
      }
    }
    return holders;
  }

  /** Each job's items not yet done or failed. */
  private static List<Long> openItems(RestartablePostgres postgres) throws SQLException {
    List<Long> open = new ArrayList<>();
    try (Connection c = DriverManager.getConnection(postgres.jdbcUrl());
        Statement s = c.createStatement()) {
      for (String job : JOBS) {
        try (var r =
            s.executeQuery(
                "SELECT count(*) FROM pacer_item WHERE job = '"
                    + job
                    + "' AND state NOT IN ('done', 'failed')")) {
          r.next();
          open.add(r.getLong(1));
        }
      }
    }
    return open;
  }

  /** Runs each statement as the server's superuser, durably: the stop that follows is a crash. */
  private static void administer(RestartablePostgres postgres, String... statements)
      throws SQLException {
    try (Connection c = DriverManager.getConnection(postgres.jdbcUrl());
        Statement s = c.createStatement()) {
      for (String statement : statements) {
        s.execute(statement);
      }
      s.execute("CHECKPOINT");
    }
  }
}
