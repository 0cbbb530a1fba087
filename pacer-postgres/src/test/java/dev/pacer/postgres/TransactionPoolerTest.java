package dev.pacer.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.spi.Reservation;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The cursor given a transaction pooler's URL as it is (a real PgBouncer in transaction mode, in
 * front of the test database): each of its transactions may run on any server connection of the
 * pool, which other clients' transactions use in turn.
 */
class TransactionPoolerTest {

  private static final Duration GAP = Duration.ofNanos(1000);
  private static final List<String> SETTINGS =
      List.of(
          "statement_timeout",
          "lock_timeout",
          "synchronous_commit",
          "enable_seqscan",
          "plan_cache_mode");

  /**
   * Three cursors, as three processes have, each with its own client connection, reserving and
   * reading holds from a thread each through a pool of two server connections: each statement must
   * find on whichever server connection it lands what it needs, and nothing another client left
   * there may get in its way.
   */
  @Test
  void cursorsOfSeveralProcessesReserveAndReadHoldsThroughThePooler() throws Exception {
    try (PgBouncer pooler = PgBouncer.transactionMode(TestDatabase.port(), 2)) {
      String name = "pooled-" + UUID.randomUUID().toString().substring(0, 8);
      List<PostgresCursor> cursors = new ArrayList<>();
      ExecutorService threads = Executors.newFixedThreadPool(3);
      try {
        for (int i = 0; i < 3; i++) {
          cursors.add(new PostgresCursor(PostgresCursorConfig.forUrl(pooler.jdbcUrl()).build()));
        }
        List<Future<List<String>>> runs = new ArrayList<>();
        for (PostgresCursor cursor : cursors) {
          runs.add(
              threads.submit(
                  () -> {
                    List<String> problems = new ArrayList<>();
                    if (!cursor.connect(Duration.ofSeconds(10))) {
                      problems.add("could not connect");
                    }
                    for (int i = 0; i < 200; i++) {
                      Reservation turn = cursor.reserve(name, GAP);
                      if (!turn.isGranted()) {
                        problems.add("reservation " + i + ": " + turn);
                      }
                      if (i % 20 == 0) {
                        try {
                          assertThat(cursor.holdsInForce(name)).isEqualTo(DestinationHolds.NONE);
                        } catch (RuntimeException e) {
                          problems.add("holds at " + i + ": " + e);
                        }
                      }
                    }
                    return problems;
                  }));
        }
        for (int i = 0; i < runs.size(); i++) {
          List<String> problems = runs.get(i).get(60, TimeUnit.SECONDS);
          assertThat(problems.size())
              .as(
                  "cursor %d's problems, the first: %s",
                  i, problems.subList(0, Math.min(3, problems.size())))
              .isZero();
          assertThat(cursors.get(i).failureCount()).as("cursor %d's failures", i).isZero();
        }
      } finally {
        threads.shutdownNow();
        cursors.forEach(PostgresCursor::close);
      }
    }
  }

  /**
   * Behind a pooler a reservation is still one statement in one round trip: unnamed, it is parsed,
   * bound and run in one flight of messages, and its deadline is the driver's, not a statement of
   * its own. Counted off the protocol by a {@link TcpProxy} between the cursor and the pooler.
   */
  @Test
  void aReservationThroughThePoolerIsOneRoundTrip() throws Exception {
    int reservations = 500;
    try (PgBouncer pooler = PgBouncer.transactionMode(TestDatabase.port(), 2);
        TcpProxy proxy = new TcpProxy(pooler.port());
        PostgresCursor cursor =
            new PostgresCursor(
                PostgresCursorConfig.forUrl(
                        "jdbc:postgresql://127.0.0.1:"
                            + proxy.port()
                            + "/postgres?user=postgres"
                            + "&sslmode=disable&gssEncMode=disable")
                    .build())) {
      String name = "pooled-cost-" + UUID.randomUUID().toString().substring(0, 8);
      assertThat(cursor.connect(Duration.ofSeconds(10))).isTrue();
      long before = proxy.roundTrips();
      long censusesBefore = cursor.censuses();
      long started = System.nanoTime();
      for (int i = 0; i < reservations; i++) {
        assertThat(cursor.reserve(name, GAP).isGranted()).isTrue();
      }
      // The census of the processes taking turns is one round trip of its own per period.
      long censuses = cursor.censuses() - censusesBefore;
      assertThat(censuses)
          .as("censuses while %d reservations were made", reservations)
          .isLessThanOrEqualTo(1 + (System.nanoTime() - started) / FetcherCensus.PERIOD.toNanos());
      assertThat(proxy.roundTrips() - before)
          .as("round trips for %d reservations and %d" + " census(es)", reservations, censuses)
          .isEqualTo(reservations + censuses);
    }
  }

  /**
   * A pool of one server connection, which the cursor and then another client use in turn: the
   * other client finds every setting as a connection made directly to the server has it.
   */
  @Test
  void theCursorLeavesNoSettingOnTheServerConnectionsItShares() throws Exception {
    Map<String, String> direct;
    try (Connection c = TestDatabase.connect()) {
      direct = settings(c);
    }
    try (PgBouncer pooler = PgBouncer.transactionMode(TestDatabase.port(), 1);
        PostgresCursor cursor =
            new PostgresCursor(
                PostgresCursorConfig.forUrl(pooler.jdbcUrl())
                    .operationTimeout(Duration.ofMillis(700))
                    .build())) {
      assertThat(cursor.reserve("pooled-settings", GAP).isGranted()).isTrue();
      try (Connection other = DriverManager.getConnection(pooler.jdbcUrl())) {
        assertThat(settings(other)).isEqualTo(direct);
      }
    }
  }

  /**
   * The operation timeout still bounds a reservation that waits for a row another transaction
   * holds, and the waiting statement is cancelled on the server, not left holding a server
   * connection of the pool.
   */
  @Test
  void aReservationWaitingForALockedRowIsCutAtTheOperationTimeoutOnTheServerToo() throws Exception {
    String name = "pooled-lock-" + UUID.randomUUID().toString().substring(0, 8);
    try (PgBouncer pooler = PgBouncer.transactionMode(TestDatabase.port(), 2);
        PostgresCursor cursor =
            new PostgresCursor(
                PostgresCursorConfig.forUrl(pooler.jdbcUrl())
                    .operationTimeout(Duration.ofMillis(500))
                    .build());
        Connection blocker = TestDatabase.connect()) {
      assertThat(cursor.reserve(name, GAP).isGranted()).isTrue();
      blocker.setAutoCommit(false);
      try (PreparedStatement lock =
          blocker.prepareStatement("SELECT 1 FROM pacer_cursor WHERE name = ? FOR UPDATE")) {
        lock.setString(1, name);
        lock.executeQuery().close();
      }
      long started = System.nanoTime();
      Reservation stuck = cursor.reserve(name, GAP);
      double seconds = (System.nanoTime() - started) / 1e9;
      assertThat(stuck.isUnavailable()).as("%s", stuck).isTrue();
      assertThat(seconds).isBetween(0.3, 1.5);
      try (Connection observer = TestDatabase.connect();
          Statement s = observer.createStatement();
          ResultSet waiting =
              s.executeQuery(
                  "SELECT count(*) FROM pg_stat_activity"
                      + " WHERE wait_event_type = 'Lock' AND query LIKE '%pacer_cursor%'")) {
        waiting.next();
        assertThat(waiting.getInt(1)).as("statements still waiting for the row").isZero();
      }
      blocker.rollback();
    }
  }

  private static Map<String, String> settings(Connection c) throws SQLException {
    Map<String, String> found = new LinkedHashMap<>();
    try (Statement s = c.createStatement()) {
      for (String setting : SETTINGS) {
        try (ResultSet r = s.executeQuery("SHOW " + setting)) {
          r.next();
          found.put(setting, r.getString(1));
        }
      }
    }
    return found;
  }
}
