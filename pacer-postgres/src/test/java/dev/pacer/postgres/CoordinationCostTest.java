package dev.pacer.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.Destination;
import dev.pacer.DestinationLimiter;
import dev.pacer.LimiterRegistry;
import dev.pacer.Slot;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Arrays;
import java.util.Locale;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * What coordination costs: one statement and one round trip per reservation, counted (and one
 * census of the processes taking turns per period, whatever the reservations), and the session
 * settings the cursor promises. What that round trip costs in time, against a {@code SELECT 1} on
 * the same connection, is a benchmark's figure: pacer-bench's latency series ({@code
 * reserve_to_select1_ratio}, docs/benchmarks.md).
 */
class CoordinationCostTest {

  private static final int WARM_UP = 50;
  private static final int RESERVATIONS = 1000;

  /**
   * How far a turn's instant on this JVM's clock may stray from the database's: the error of
   * mapping one clock onto the other, a few milliseconds at most.
   */
  private static final long MAPPING_ERROR_NANOS = 5_000_000;

  /**
   * The connection runs through a {@link TcpProxy}, which counts the round trips read off the
   * protocol: what a reservation asks of the server, however the driver is driven. The twin series,
   * each reservation followed by one more {@code SELECT 1} on the same connection, shows the count
   * catches one extra round trip, which on a loaded machine a timing could not tell from a slower
   * statement.
   */
  @Test
  void aReservationIsOneStatementAndOneRoundTrip() throws Exception {
    try (TcpProxy proxy = new TcpProxy(TestDatabase.port());
        Connection shared =
            DriverManager.getConnection(
                "jdbc:postgresql://127.0.0.1:"
                    + proxy.port()
                    + "/postgres?user=postgres&sslmode=disable&gssEncMode=disable");
        PreparedStatement ping = shared.prepareStatement("SELECT 1")) {
      CountingConnection counted = new CountingConnection(shared);
      OneConnectionDataSource source = new OneConnectionDataSource(counted.connection());
      PostgresCursor cursor =
          new PostgresCursor(PostgresCursorConfig.forDataSource(source).build());
      String name = "cost-" + UUID.randomUUID().toString().substring(0, 8);
      Duration zero = Duration.ofNanos(1000);
      for (int i = 0; i < WARM_UP; i++) {
        assertThat(cursor.reserve(name, zero).isGranted()).isTrue();
        selectOne(ping);
      }

      // The census of the processes taking turns adds one statement (prepared, executed) per
      // period, whatever the reservations: counted apart, and bounded by the time taken.
      long censusesBefore = cursor.censuses();
      long started = System.nanoTime();
      Cost alone =
          Cost.of(
              proxy, counted, () -> assertThat(cursor.reserve(name, zero).isGranted()).isTrue());
      long censuses = cursor.censuses() - censusesBefore;
      assertThat(censuses)
          .as("censuses while %d reservations were made", RESERVATIONS)
          .isLessThanOrEqualTo(1 + (System.nanoTime() - started) / FetcherCensus.PERIOD.toNanos());
      assertThat(alone.roundTrips())
          .as("round trips for %d reservations", RESERVATIONS)
          .isEqualTo(RESERVATIONS + censuses);
      assertThat(alone.executions())
          .as("statements executed for %d reservations", RESERVATIONS)
          .isEqualTo(RESERVATIONS + censuses);
      assertThat(alone.connectionCalls()).as("other calls on the connection").isEqualTo(censuses);

      censusesBefore = cursor.censuses();
      Cost withOneMore =
          Cost.of(
              proxy,
              counted,
              () -> {
                assertThat(cursor.reserve(name, zero).isGranted()).isTrue();
                selectOne(ping);
              });
      censuses = cursor.censuses() - censusesBefore;
      assertThat(withOneMore.roundTrips())
          .as("round trips for %d reservations each followed by a SELECT 1", RESERVATIONS)
          .isEqualTo(2L * RESERVATIONS + censuses);
      assertThat(withOneMore.executions())
          .as("statements the cursor executed")
          .isEqualTo(RESERVATIONS + censuses);
      assertThat(source.taken).isEqualTo(1);
    }
  }

  /** What {@link #RESERVATIONS} runs of one step cost, as the proxy and the connection count it. */
  private record Cost(long roundTrips, long executions, long connectionCalls) {

    static Cost of(TcpProxy proxy, CountingConnection counted, SqlStep step) throws SQLException {
      long roundTrips = proxy.roundTrips();
      long executions = counted.executions();
      long connectionCalls = counted.connectionCalls();
      for (int i = 0; i < RESERVATIONS; i++) {
        step.run();
      }
      return new Cost(
          proxy.roundTrips() - roundTrips,
          counted.executions() - executions,
          counted.connectionCalls() - connectionCalls);
    }
  }

  private interface SqlStep {
    void run() throws SQLException;
  }

  private static void selectOne(PreparedStatement ping) throws SQLException {
    try (ResultSet r = ping.executeQuery()) {
      r.next();
    }
  }

  /**
   * Eight acquisitions at 7/s, one after another: each turn follows the last by one interval, or
   * begins at once if its caller came after that, and each caller returns at its turn. The turns
   * are the limiter's work and are held to the error of mapping the database's clock onto this one,
   * whatever the load; how long the eight take beyond the ceiling's second on a given machine is a
   * benchmark's figure (pacer-bench's {@code overhead_8_at_7}, docs/benchmarks.md).
   */
  @Test
  void eightAcquisitionsAtSevenPerSecondTakeTheirTurnsOneIntervalApart() throws Exception {
    try (PostgresCursor cursor = TestDatabase.cursor(TableLayout.pacerTable())) {
      Destination d =
          Destination.builder("cost-" + UUID.randomUUID().toString().substring(0, 8))
              .ratePerSecond(7)
              .maxConcurrency(1)
              .build();
      DestinationLimiter limiter = new LimiterRegistry(cursor).limiter(d);
      // The connection's set-up (connect, settings, table, rehearsal) is not the pacing timed here.
      assertThat(cursor.connect(Duration.ofSeconds(10))).isTrue();
      long interval = Math.round(1e9 / 7);
      long[] called = new long[8];
      long[] turns = new long[8];
      long[] returned = new long[8];
      for (int i = 0; i < 8; i++) {
        called[i] = System.nanoTime();
        try (Slot slot = limiter.acquire()) {
          returned[i] = System.nanoTime();
          turns[i] = slot.turnNanos();
        }
      }
      double seconds = (returned[7] - called[0]) / 1e9;
      StringBuilder gaps = new StringBuilder();
      for (int i = 1; i < 8; i++) {
        gaps.append(String.format(Locale.ROOT, " %.1f", (turns[i] - turns[i - 1]) / 1e6));
      }
      String figures =
          String.format(
              Locale.ROOT,
              "8 acquisitions at 7/s: %.4f s against 1.000 s for the ceiling alone; gaps between"
                  + " turns (ms):%s",
              seconds,
              gaps);
      System.out.println(figures);
      for (int i = 0; i < 8; i++) {
        assertThat(returned[i])
            .as("acquisition %d returned at its turn or after, %s", i, figures)
            .isGreaterThanOrEqualTo(turns[i] - MAPPING_ERROR_NANOS);
      }
      for (int i = 1; i < 8; i++) {
        assertThat(turns[i] - turns[i - 1])
            .as("turn %d's gap from the one before, %s", i, figures)
            .isGreaterThanOrEqualTo(interval - MAPPING_ERROR_NANOS);
        long due = turns[i - 1] + interval;
        if (called[i] < due - MAPPING_ERROR_NANOS) {
          assertThat(turns[i])
              .as(
                  "turn %d, asked for before it was due: one interval after the last, %s",
                  i, figures)
              .isLessThanOrEqualTo(due + MAPPING_ERROR_NANOS);
        } else {
          assertThat(turns[i])
              .as("turn %d, asked for after it was due: at once, %s", i, figures)
              .isLessThanOrEqualTo(returned[i] + MAPPING_ERROR_NANOS);
        }
      }
      assertThat(seconds).as(figures).isGreaterThanOrEqualTo(0.99);
    }
  }

  /**
   * What each commit mode costs, on a server that really flushes (the shared test server runs with
   * fsync off, which would hide the cost). A figure for docs/operations.md, printed only: how much
   * a flush costs depends on the disk under the test. That the cursor sets the mode is asserted by
   * {@link #theCursorSetsItsSessionsCommitMode()}.
   */
  @Test
  void commitModeThroughputOnAFlushingServer() throws Exception {
    try (EmbeddedPostgres durable =
        EmbeddedPostgres.builder()
            .setServerConfig("fsync", "on")
            .setServerConfig("synchronous_commit", "on")
            .start()) {
      String url = durable.getJdbcUrl("postgres", "postgres");
      try (Connection c = durable.getPostgresDatabase().getConnection();
          Statement s = c.createStatement()) {
        s.execute(
            "CREATE TABLE commit_mode_cache (cache_key varchar(255) PRIMARY KEY,"
                + " value text NOT NULL, expires timestamptz NOT NULL)");
      }
      PostgresCursor[] cursors = new PostgresCursor[4];
      String[] labels = new String[4];
      int i = 0;
      for (boolean synchronous : new boolean[] {false, true}) {
        for (TableLayout layout :
            new TableLayout[] {
              TableLayout.pacerTable(), TableLayout.djangoCache("commit_mode_cache")
            }) {
          cursors[i] =
              new PostgresCursor(
                  PostgresCursorConfig.forUrl(url)
                      .layout(layout)
                      .synchronousCommit(synchronous)
                      .build());
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
        System.out.printf(
            "fsync=on server, %s: %.0f reservations/s (median of 3 x 2000, one thread)%n",
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
        PostgresCursor cursor =
            new PostgresCursor(
                synchronous ? config.synchronousCommit(true).build() : config.build());
        assertThat(cursor.reserve("commit-mode-check", Duration.ofMillis(1)).isGranted()).isTrue();
        try (Statement s = c.createStatement();
            ResultSet r = s.executeQuery("SHOW synchronous_commit")) {
          r.next();
          assertThat(r.getString(1))
              .as("synchronousCommit(%s)", synchronous)
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
