package dev.pacer.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.spi.Reservation;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * The cursor's own correctness on a real server: what it gives back to a pool, a busy connection
 * told from an unavailable database, a dropped table, and a closed cursor.
 */
class CursorFindingsTest {

  private static final Duration GAP = Duration.ofMillis(100);

  private static String freshName() {
    return "cf-" + UUID.randomUUID().toString().substring(0, 8);
  }

  @Test
  void aPooledConnectionGoesBackWithoutPacersSessionSettings() throws Exception {
    String[] settings = {
      "synchronous_commit", "statement_timeout", "lock_timeout", "enable_seqscan", "plan_cache_mode"
    };
    try (Connection physical = TestDatabase.connect()) {
      String[] before = show(physical, settings);
      AtomicInteger returned = new AtomicInteger();
      DataSourceAdapter pool =
          new DataSourceAdapter() {
            @Override
            public Connection getConnection() {
              return pooled(physical, returned);
            }
          };
      PostgresCursor cursor = new PostgresCursor(PostgresCursorConfig.forDataSource(pool).build());
      assertThat(cursor.reserve(freshName(), GAP).isGranted()).isTrue();
      assertThat(show(physical, settings))
          .as("set while borrowed")
          .containsExactly(before[0], "1s", "1s", "off", "force_generic_plan");
      cursor.close();
      assertThat(returned.get()).as("given back to the pool").isEqualTo(1);
      assertThat(show(physical, settings)).as("as the pool lent it").containsExactly(before);
    }
  }

  /**
   * Three threads on one cursor: the first waits 0.9 s on a locked row, the second then 0.7 s on
   * another, so the third waits 1.6 s for the connection, longer than the 1-s operation bound,
   * while the database answers every statement.
   */
  @Test
  void aReservationQueuedBehindBusyThreadsIsNotAnOutage() throws Exception {
    String first = freshName();
    String second = freshName();
    try (PostgresCursor cursor = TestDatabase.cursor(TableLayout.pacerTable());
        Connection blockFirst = TestDatabase.connect();
        Connection blockSecond = TestDatabase.connect()) {
      cursor.reserve(first, GAP);
      cursor.reserve(second, GAP);
      lockRow(blockFirst, first);
      lockRow(blockSecond, second);
      CompletableFuture<Reservation> a =
          CompletableFuture.supplyAsync(() -> cursor.reserve(first, GAP));
      TimeUnit.MILLISECONDS.sleep(50);
      CompletableFuture<Reservation> b =
          CompletableFuture.supplyAsync(() -> cursor.reserve(second, GAP));
      TimeUnit.MILLISECONDS.sleep(250);
      CompletableFuture<Reservation> c =
          CompletableFuture.supplyAsync(() -> cursor.reserve(freshName(), GAP));
      TimeUnit.MILLISECONDS.sleep(600);
      blockFirst.rollback();
      TimeUnit.MILLISECONDS.sleep(700);
      blockSecond.rollback();
      assertThat(a.get(5, TimeUnit.SECONDS).isGranted()).isTrue();
      assertThat(b.get(5, TimeUnit.SECONDS).isGranted()).isTrue();
      Reservation queued = c.get(5, TimeUnit.SECONDS);
      assertThat(queued.isGranted()).as("busy, not unavailable: %s", queued).isTrue();
      assertThat(cursor.failureCount()).isZero();
      assertThat(cursor.isLatched()).isFalse();
    }
  }

  @Test
  void aDroppedTableIsCreatedAgain() {
    String table = "dropped_" + UUID.randomUUID().toString().substring(0, 8);
    try (PostgresCursor cursor = TestDatabase.cursor(TableLayout.pacerTable(table))) {
      String name = freshName();
      assertThat(cursor.reserve(name, GAP).isGranted()).isTrue();
      TestDatabase.execute("DROP TABLE " + table);
      Reservation afterDrop = cursor.reserve(name, GAP);
      assertThat(afterDrop.isGranted()).as("table created again: %s", afterDrop).isTrue();
      assertThat(cursor.failureCount()).isZero();
      assertThat(cursor.reserve(name, GAP).isGranted()).isTrue();
    }
  }

  @Test
  void aClosedCursorStaysClosed() {
    PostgresCursor cursor = TestDatabase.cursor(TableLayout.pacerTable());
    String name = freshName();
    assertThat(cursor.reserve(name, GAP).isGranted()).isTrue();
    long attempts = cursor.connectionAttempts();
    cursor.close();
    assertThat(cursor.reserve(name, GAP).isUnavailable())
        .as("a late thread's reservation")
        .isTrue();
    assertThat(cursor.tryReserve(name, GAP, GAP).isUnavailable()).isTrue();
    assertThat(cursor.connectionAttempts()).as("never reconnects").isEqualTo(attempts);
  }

  private static void lockRow(Connection c, String name) throws SQLException {
    c.setAutoCommit(false);
    try (PreparedStatement s =
        c.prepareStatement("SELECT * FROM pacer_cursor WHERE name = ? FOR UPDATE")) {
      s.setString(1, name);
      s.executeQuery().close();
    }
  }

  private static String[] show(Connection c, String... settings) throws SQLException {
    String[] values = new String[settings.length];
    for (int i = 0; i < settings.length; i++) {
      try (Statement s = c.createStatement();
          ResultSet r = s.executeQuery("SHOW " + settings[i])) {
        r.next();
        values[i] = r.getString(1);
      }
    }
    return values;
  }

  /** The physical connection as a pool lends it: closing it gives it back instead. */
  private static Connection pooled(Connection physical, AtomicInteger returned) {
    return (Connection)
        Proxy.newProxyInstance(
            Connection.class.getClassLoader(),
            new Class<?>[] {Connection.class},
            (proxy, method, args) -> {
              if (method.getName().equals("close")) {
                returned.incrementAndGet();
                return null;
              }
              try {
                return method.invoke(physical, args);
              } catch (java.lang.reflect.InvocationTargetException e) {
                throw e.getCause();
              }
            });
  }
}
