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
 * What coordination costs. The assertions are loose on purpose, so they stay true on a busy CI
 * machine; the precise figures (printed here, and measured properly by pacer-bench) are ratios
 * against a {@code SELECT 1} on the same connection.
 */
class CoordinationCostTest {

  private static final int SAMPLES = 500;

  @Test
  void aReservationCostsAboutOneRoundTrip() throws SQLException {
    try (Connection shared = TestDatabase.connect()) {
      OneConnectionDataSource source = new OneConnectionDataSource(shared);
      PostgresCursor cursor = new PostgresCursor(PostgresCursorConfig.forDataSource(source).build());
      String name = "cost-" + UUID.randomUUID().toString().substring(0, 8);
      Duration zero = Duration.ofNanos(1000);
      long[] reserve = new long[SAMPLES];
      long[] select1 = new long[SAMPLES];
      try (PreparedStatement ping = shared.prepareStatement("SELECT 1")) {
        for (int i = -100; i < SAMPLES; i++) { // the first 100 warm up both paths
          long t0 = System.nanoTime();
          assertThat(cursor.reserve(name, zero).isGranted()).isTrue();
          long t1 = System.nanoTime();
          try (ResultSet r = ping.executeQuery()) {
            r.next();
          }
          long t2 = System.nanoTime();
          if (i >= 0) {
            reserve[i] = t1 - t0;
            select1[i] = t2 - t1;
          }
        }
      }
      double average = Arrays.stream(reserve).average().orElseThrow() / 1e6;
      System.out.printf("reservation p50 %.1f us, p99 %.1f us, mean %.3f ms; SELECT 1 p50 %.1f us;"
              + " ratio of p50s %.2f%n",
          percentile(reserve, 50) / 1e3, percentile(reserve, 99) / 1e3, average,
          percentile(select1, 50) / 1e3, (double) percentile(reserve, 50) / percentile(select1, 50));
      assertThat(average).as("mean reservation, ms").isLessThan(10.0);
      assertThat(source.taken).isEqualTo(1);
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
   * The commit mode of the dedicated session, measured on a server that really flushes (the shared
   * test server runs with fsync off, which would hide the cost being measured).
   */
  @Test
  void theDedicatedSessionCommitsAsynchronouslyByDefault() throws Exception {
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
      try (Connection c = durable.getPostgresDatabase().getConnection()) {
        PostgresCursor cursor = new PostgresCursor(
            PostgresCursorConfig.forDataSource(new OneConnectionDataSource(c)).build());
        cursor.reserve("commit-mode-check", Duration.ofMillis(1));
        try (Statement s = c.createStatement(); ResultSet r = s.executeQuery("SHOW synchronous_commit")) {
          r.next();
          assertThat(r.getString(1)).isEqualTo("off");
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
