package dev.pacer.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.Timeline;
import dev.pacer.cli.run.DispatchSlot;
import dev.pacer.postgres.PostgresFleetSlots;
import dev.pacer.postgres.RestartablePostgres;
import dev.pacer.postgres.TcpProxy;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
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
 * slot from its start. PostgreSQL stops under them and comes back with their role held to two
 * connections, then free. Which runners take the slots again is a race; here the path of one
 * runner that held a slot stays silent (a TCP proxy) until the other two hold both, so that it is
 * the one to find them all taken. It waits for one, as it did at its start: every run finishes its
 * own job, and the destination never sees more than the ceiling.
 */
class DispatchSlotReturnTest {

  private static final int RATE = 10;
  private static final int ITEMS = 60;
  private static final long SECOND = 1_000_000_000L;
  private static final String ROLE = "pacer_runner";
  private static final List<String> JOBS = List.of("slots-a", "slots-b", "slots-c");

  @TempDir Path dir;

  @Test
  void aRunnerThatLostItsSlotInAMessyReturnWaitsForOneAndEveryRunFinishes() throws Exception {
    try (RestartablePostgres postgres = new RestartablePostgres();
        TestDestination destination = new TestDestination()) {
      administer(postgres, "CREATE ROLE " + ROLE + " LOGIN",
          "GRANT CREATE, USAGE ON SCHEMA public TO " + ROLE);
      List<TcpProxy> paths = new ArrayList<>();
      List<Process> runs = new ArrayList<>();
      for (String job : JOBS) {
        TcpProxy path = new TcpProxy(postgres.port());
        paths.add(path);
        Path input = Files.write(dir.resolve(job + ".txt"),
            destination.items("/" + job + "/", ITEMS));
        runs.add(Cli.spawn(Map.of(), dir.resolve(job + ".out"), dir.resolve(job + ".err"),
            "fetch", input.toString(), "--job", job, "--destination", "slots",
            "--db", "jdbc:postgresql://127.0.0.1:" + path.port() + "/postgres?user=" + ROLE,
            "--rate", String.valueOf(RATE), "--max-dispatches", "2",
            "--out", dir.resolve("out").toString(), "--max-load", "1000", "--no-progress",
            "--lease-seconds", "20"));
      }
      try {
        awaitArrivals(destination, 1);
        Thread.sleep(4_000);
        assertThat(openItems(postgres)).as("every run has items open at the outage").allMatch(
            open -> open > 0);
        List<Integer> holders = runnersHoldingASlot();
        assertThat(holders).as("runners holding a slot").hasSize(2);
        TcpProxy lastBack = paths.get(holders.get(1));
        lastBack.blackhole();
        administer(postgres, "ALTER ROLE " + ROLE + " CONNECTION LIMIT 2");
        postgres.stopImmediately();
        Thread.sleep(4_000);
        postgres.start();
        Thread.sleep(8_000);
        administer(postgres, "ALTER ROLE " + ROLE + " CONNECTION LIMIT -1");
        awaitSlotsHeld(postgres, 2);
        lastBack.restore();

        int lastBackRun = holders.get(1);
        for (int i = 0; i < runs.size(); i++) {
          String job = JOBS.get(i);
          Process run = runs.get(i);
          assertThat(run.waitFor(60, TimeUnit.SECONDS)).as("%s finished", job).isTrue();
          String err = Files.readString(dir.resolve(job + ".err"));
          err.lines().filter(l -> l.contains("WARN") || l.contains("ERROR")
                  || l.contains("dispatch slot"))
              .forEach(l -> System.out.println(job + " | " + l));
          assertThat(run.exitValue()).as("%s exit code: %s", job, err).isZero();
          String[] out = Files.readString(dir.resolve(job + ".out")).strip().split("\n");
          assertThat(out[out.length - 1]).as(job)
              .contains("\"done\":" + ITEMS, "\"pending\":0", "\"failed\":0");
          if (i == lastBackRun) {
            assertThat(err).as("%s, back last, found every slot taken", job)
                .contains("dispatch slots of destination slots are taken; waiting for one");
          }
        }
      } finally {
        runs.forEach(Process::destroyForcibly);
        for (TcpProxy path : paths) {
          path.close();
        }
      }

      List<TestDestination.Arrival> arrivals = destination.arrivals();
      Set<String> fetched = new HashSet<>();
      arrivals.forEach(a -> fetched.add(a.path()));
      assertThat(fetched).as("every item of every job fetched").hasSize(JOBS.size() * ITEMS);
      Timeline fleet = TestDestination.timeline(arrivals);
      System.out.println("dispatch slots after a messy return: " + fleet);
      assertThat(fleet.peakOneSecondWindow()).as(TestDestination.describe(arrivals))
          .isLessThanOrEqualTo(RATE + 1);
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

  /** The runs (indexes into {@link #JOBS}) that have said they hold a dispatch slot. */
  private List<Integer> runnersHoldingASlot() throws IOException {
    List<Integer> holders = new ArrayList<>();
    for (int i = 0; i < JOBS.size(); i++) {
      String err = Files.readString(dir.resolve(JOBS.get(i) + ".err"));
      if (err.contains("Holding dispatch slot")) {
        holders.add(i);
      }
    }
    return holders;
  }

  /** Waits until {@code n} dispatch slots of the destination are held under live leases. */
  private static void awaitSlotsHeld(RestartablePostgres postgres, int n) throws Exception {
    long deadline = System.nanoTime() + 30 * SECOND;
    try (Connection c = DriverManager.getConnection(postgres.jdbcUrl())) {
      while (true) {
        int held = PostgresFleetSlots.holdings(c).stream()
            .filter(h -> h.destination().equals(DispatchSlot.key("slots")))
            .mapToInt(PostgresFleetSlots.Holding::slotsHeld).sum();
        if (held >= n) {
          return;
        }
        assertThat(System.nanoTime()).as("%d dispatch slots held within 30 s", n)
            .isLessThan(deadline);
        Thread.sleep(50);
      }
    }
  }

  /** Each job's items not yet done or failed. */
  private static List<Long> openItems(RestartablePostgres postgres) throws SQLException {
    List<Long> open = new ArrayList<>();
    try (Connection c = DriverManager.getConnection(postgres.jdbcUrl());
        Statement s = c.createStatement()) {
      for (String job : JOBS) {
        try (var r = s.executeQuery("SELECT count(*) FROM pacer_item WHERE job = '" + job
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
