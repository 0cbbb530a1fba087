package dev.pacer.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.postgres.RestartablePostgres;
import dev.pacer.testing.Timeline;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The server turns read-only under a conveyor run (every session's {@code
 * default_transaction_read_only} on, by a configuration reload, as when it is made a standby's twin
 * or an operator freezes it), then writable again. The run degrades as in an outage: one WARN per
 * process that names the cause, no error repeated at every retry boundary, no worker exiting, and
 * every item done once the server takes writes again.
 */
class ReadOnlyServerTest {

  private static final int RATE = 10;
  private static final int ITEMS = 80;
  private static final long SECOND = 1_000_000_000L;
  private static final String JOB = "read-only";

  @TempDir Path dir;

  @Test
  void aRunOnAServerTurnedReadOnlyWaitsWithOneWarningAndFinishesOnceItIsWritable()
      throws Exception {
    try (RestartablePostgres postgres = new RestartablePostgres();
        TestDestination destination = new TestDestination()) {
      Path input = Files.write(dir.resolve("urls.txt"), destination.items(ITEMS));
      Process run =
          Cli.spawn(
              Map.of(),
              dir.resolve("out"),
              dir.resolve("err"),
              "fetch",
              input.toString(),
              "--job",
              JOB,
              "--destination",
              JOB,
              "--db",
              postgres.jdbcUrl(),
              "--processes",
              "2",
              "--threads",
              "4",
              "--concurrency",
              "4",
              "--rate",
              String.valueOf(RATE),
              "--out",
              dir.resolve("bodies").toString(),
              "--max-load",
              "1000",
              "--no-progress",
              "--lease-seconds",
              "20");
      try {
        awaitArrivals(destination, 10);
        setReadOnly(postgres, true);
        long readOnly = System.nanoTime();
        // Two retry boundaries at least, and a third most times: each would repeat an error.
        Thread.sleep(3_000);
        Set<String> leasedAhead = leasedPaths(postgres);
        Thread.sleep(9_000);
        setReadOnly(postgres, false);
        long writable = System.nanoTime();

        assertThat(run.waitFor(60, TimeUnit.SECONDS)).as("the run finished").isTrue();
        String err = Files.readString(dir.resolve("err"));
        err.lines()
            .filter(l -> l.contains("WARN") || l.contains("ERROR") || l.contains("answers again"))
            .forEach(l -> System.out.println("read-only | " + l));
        assertThat(run.exitValue()).as(err).isZero();
        String[] out = Files.readString(dir.resolve("out")).strip().split("\n");
        assertThat(out[out.length - 1])
            .contains("\"done\":" + ITEMS, "\"pending\":0", "\"failed\":0");

        List<String> outageWarnings =
            err.lines()
                .filter(l -> l.contains("WARN OutagePolicy") && l.contains("unavailable"))
                .toList();
        assertThat(outageWarnings)
            .as("one outage WARN per worker process, not one per boundary")
            .hasSize(2)
            .allMatch(l -> l.contains("read-only"));
        assertThat(err.lines().filter(l -> l.matches("\\S+ ERROR .*")).toList())
            .as("nothing logged as an error")
            .isEmpty();

        List<TestDestination.Arrival> arrivals = destination.arrivals();
        Set<String> fetched = new HashSet<>();
        arrivals.forEach(a -> fetched.add(a.path()));
        assertThat(fetched).as("every item fetched").hasSize(ITEMS);
        Timeline fleet = TestDestination.timeline(arrivals);
        List<String> during =
            arrivals.stream()
                .filter(a -> a.nanos() > readOnly + 3 * SECOND && a.nanos() < writable)
                .map(TestDestination.Arrival::path)
                .toList();
        System.out.printf(
            "read-only server: %s; %d requests from 3 s after it turned read-only"
                + " until it was writable, of %d items leased then%n",
            fleet, during.size(), leasedAhead.size());
        // The workers go on fetching what they leased ahead, and claim nothing more.
        assertThat(leasedAhead)
            .as("no item claimed from a read-only server: every request an item leased before it")
            .containsAll(during);
        TestDestination.assertBusiestWindowAtMost(arrivals, RATE + 1);
      } finally {
        run.destroyForcibly();
      }
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

  /**
   * Every session's default, existing ones included (a reload reaches them all), as the server's
   * superuser; its own session stays writable to undo it.
   */
  /** The paths of the job's items leased now, as the destination sees them. */
  private static Set<String> leasedPaths(RestartablePostgres postgres) throws SQLException {
    Set<String> paths = new HashSet<>();
    try (Connection c = DriverManager.getConnection(postgres.jdbcUrl());
        Statement s = c.createStatement();
        ResultSet r =
            s.executeQuery(
                "SELECT url FROM pacer_item WHERE job = '" + JOB + "' AND state = 'leased'")) {
      while (r.next()) {
        paths.add(URI.create(r.getString(1)).getPath());
      }
    }
    return paths;
  }

  private static void setReadOnly(RestartablePostgres postgres, boolean readOnly)
      throws SQLException {
    try (Connection c = DriverManager.getConnection(postgres.jdbcUrl());
        Statement s = c.createStatement()) {
      s.execute("SET default_transaction_read_only = off");
      s.execute(
          readOnly
              ? "ALTER SYSTEM SET default_transaction_read_only = on"
              : "ALTER SYSTEM RESET default_transaction_read_only");
      s.execute("SELECT pg_reload_conf()");
    }
  }
}
