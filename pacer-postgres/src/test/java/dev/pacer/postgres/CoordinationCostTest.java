package dev.pacer.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.Destination;
import dev.pacer.DestinationLimiter;
import dev.pacer.LimiterRegistry;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Arrays;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * What coordination costs: one statement, one round trip, per reservation, and the session
 * settings the cursor promises. The precise figures (printed here, and measured properly by
 * pacer-bench) are ratios against a {@code SELECT 1} on the same connection.
 */
class CoordinationCostTest {

  private static final int WARM_UP = 500;
  private static final int SAMPLES = 2000;
  /**
   * The most a reservation's p50 may be, in {@code SELECT 1} p50s on the same connection, timed
   * interleaved after warm-up. Measured on the 2-core build machine shared with other builds (load
   * average 8-9): 2.41-3.09 over 7 runs, the server's work on a one-row write (about 25 us of CPU
   * against 9 us for {@code SELECT 1}, docs/benchmarks.md). A reservation followed by one more
   * round trip measured 3.49-4.13 in the same runs: too close to tell apart by time on a loaded
   * machine, so one extra round trip is caught by the statement count instead; two extra (the twin
   * series, measured 4.4 and above) must break this bound.
   */
  private static final double MAX_RESERVE_TO_SELECT1 = 3.5;

  @Test
  void aReservationIsOneStatementAndOneRoundTrip() throws SQLException {
    try (Connection shared = TestDatabase.connect()) {
      CountingConnection counted = new CountingConnection(shared);
      OneConnectionDataSource source = new OneConnectionDataSource(counted.connection());
      PostgresCursor cursor = new PostgresCursor(PostgresCursorConfig.forDataSource(source).build());
      String name = "cost-" + UUID.randomUUID().toString().substring(0, 8);
      Duration zero = Duration.ofNanos(1000);
      long[] reserve = new long[SAMPLES];
      long[] select1 = new long[SAMPLES];
      long[] threeTrips = new long[SAMPLES];
      try (PreparedStatement ping = shared.prepareStatement("SELECT 1")) {
        long executionsBefore = 0;
        long connectionCallsBefore = 0;
        // Interleaved, so that load on the machine falls on every series alike.
        for (int i = -WARM_UP; i < SAMPLES; i++) {
          if (i == 0) {
            executionsBefore = counted.executions();
            connectionCallsBefore = counted.connectionCalls();
          }
          long t0 = System.nanoTime();
          assertThat(cursor.reserve(name, zero).isGranted()).isTrue();
          long t1 = System.nanoTime();
          selectOne(ping);
          long t2 = System.nanoTime();
          assertThat(cursor.reserve(name, zero).isGranted()).isTrue();
          selectOne(ping);
          selectOne(ping);
          long t3 = System.nanoTime();
          if (i >= 0) {
            reserve[i] = t1 - t0;
            select1[i] = t2 - t1;
            threeTrips[i] = t3 - t2;
          }
        }
        assertThat(counted.executions() - executionsBefore)
            .as("statements executed for %d reservations", 2 * SAMPLES).isEqualTo(2L * SAMPLES);
        assertThat(counted.connectionCalls() - connectionCallsBefore)
            .as("other calls on the connection").isZero();
      }
      double ratio = (double) percentile(reserve, 50) / percentile(select1, 50);
      double twinRatio = (double) percentile(threeTrips, 50) / percentile(select1, 50);
      System.out.printf("reservation p50 %.1f us, p99 %.1f us; SELECT 1 p50 %.1f us; ratio of p50s"
              + " %.2f; reservation + 2 x SELECT 1 p50 %.1f us, ratio %.2f%n",
          percentile(reserve, 50) / 1e3, percentile(reserve, 99) / 1e3,
          percentile(select1, 50) / 1e3, ratio, percentile(threeTrips, 50) / 1e3, twinRatio);
      assertThat(ratio).as("reservation p50 in SELECT 1 p50s").isLessThanOrEqualTo(MAX_RESERVE_TO_SELECT1);
      assertThat(twinRatio).as("a reservation with two more round trips must break the bound")
          .isGreaterThan(MAX_RESERVE_TO_SELECT1);
      assertThat(source.taken).isEqualTo(1);
    }
  }

  private static void selectOne(PreparedStatement ping) throws SQLException {
    try (ResultSet r = ping.executeQuery()) {
      r.next();
    }
  }

  @Test
  void eightAcquisitionsAtSevenPerSecondTakeAboutOneSecond() throws Exception {
    try (PostgresCursor cursor = TestDatabase.cursor(TableLayout.pacerTable())) {
      Destination d = Destination.builder("cost-" + UUID.randomUUID().toString().substring(0, 8))
          .ratePerSecond(7).maxConcurrency(1).build();
      DestinationLimiter limiter = new LimiterRegistry(cursor).limiter(d);
      long start = System.nanoTime();
      for (int i = 0; i < 8; i++) {
        limiter.acquire().close();
      }
      double seconds = (System.nanoTime() - start) / 1e9;
      System.out.printf("8 acquisitions at 7/s: %.4f s against 1.000 s for the ceiling alone%n", seconds);
      assertThat(seconds).isBetween(0.99, 1.10);
    }
  }

  /**
   * What each commit mode costs, on a server that really flushes (the shared test server runs with
   * fsync off, which would hide the cost). A figure for docs/operations.md, printed only: how much a
   * flush costs depends on the disk under the test. That the cursor sets the mode is asserted by
   * {@link #theCursorSetsItsSessionsCommitMode()}.
   */
  @Test
  void commitModeThroughputOnAFlushingServer() throws Exception {
    try (EmbeddedPostgres durable = EmbeddedPostgres.builder().setServerConfig("fsync", "on")
        .setServerConfig("synchronous_commit", "on").start()) {
      String url = durable.getJdbcUrl("postgres", "postgres");
      try (Connection c = durable.getPostgresDatabase().getConnection(); Statement s = c.createStatement()) {
        s.execute("CREATE TABLE commit_mode_cache (cache_key varchar(255) PRIMARY KEY,"
            + " value text NOT NULL, expires timestamptz NOT NULL)");
      }
      PostgresCursor[] cursors = new PostgresCursor[4];
      String[] labels = new String[4];
      int i = 0;
      for (boolean synchronous : new boolean[] {false, true}) {
        for (TableLayout layout : new TableLayout[] {TableLayout.pacerTable(),
            TableLayout.djangoCache("commit_mode_cache")}) {
          cursors[i] = new PostgresCursor(PostgresCursorConfig.forUrl(url)
              .layout(layout).synchronousCommit(synchronous).build());
          labels[i++] = "synchronous_commit=" + (synchronous ? "on " : "off") + " " + layout;
        }
      }
      double[][] rates = new double[4][3];
      for (int round = 0; round < 3; round++) { // interleaved, so warm-up and noise hit all four
        for (int c = 0; c < 4; c++) {
          rates[c][round] = throughput(cursors[c]);
        }
      }
      for (int c = 0; c < 4; c++) {
        Arrays.sort(rates[c]);
        System.out.printf("fsync=on server, %s: %.0f reservations/s (median of 3 x 2000, one thread)%n",
            labels[c], rates[c][1]);
        cursors[c].close();
      }
    }
  }

  /**
   * The commit mode is set on the cursor's own session, whatever that session had before: each
   * connection is handed over set to the opposite of what the cursor must choose, and read back
   * through the same connection after a reservation.
   */
  @Test
  void theCursorSetsItsSessionsCommitMode() throws SQLException {
    for (boolean synchronous : new boolean[] {false, true}) {
      try (Connection c = TestDatabase.connect()) {
        try (Statement s = c.createStatement()) {
          s.execute("SET synchronous_commit = " + (synchronous ? "off" : "on"));
        }
        PostgresCursorConfig.Builder config =
            PostgresCursorConfig.forDataSource(new OneConnectionDataSource(c));
        PostgresCursor cursor = new PostgresCursor(
            synchronous ? config.synchronousCommit(true).build() : config.build());
        assertThat(cursor.reserve("commit-mode-check", Duration.ofMillis(1)).isGranted()).isTrue();
        try (Statement s = c.createStatement(); ResultSet r = s.executeQuery("SHOW synchronous_commit")) {
          r.next();
          assertThat(r.getString(1)).as("synchronousCommit(%s)", synchronous)
              .isEqualTo(synchronous ? "on" : "off");
        }
      }
    }
  }

  private static double throughput(PostgresCursor cursor) {
    String name = "commit-" + UUID.randomUUID().toString().substring(0, 8);
    Duration zero = Duration.ofNanos(1000);
    for (int i = 0; i < 200; i++) {
      cursor.reserve(name, zero);
    }
    int n = 2000;
    long start = System.nanoTime();
    for (int i = 0; i < n; i++) {
      cursor.reserve(name, zero);
    }
    return n / ((System.nanoTime() - start) / 1e9);
  }

  private static long percentile(long[] values, int p) {
    long[] sorted = values.clone();
    Arrays.sort(sorted);
    return sorted[Math.min(sorted.length - 1, sorted.length * p / 100)];
  }

  /** Hands out one given connection, so a cursor and the test share it. */
  private static final class OneConnectionDataSource extends DataSourceAdapter {
    private final Connection connection;
    int taken;

    OneConnectionDataSource(Connection connection) {
      this.connection = connection;
    }

    @Override
    public Connection getConnection() {
      taken++;
      return connection;
    }
  }
}
