package dev.pacer.postgres.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.pacer.postgres.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Two creators of one table, on real PostgreSQL: the one that loses the race still has its table,
 * and a clash that is not a race is still an error.
 */
class ConcurrentCreateTest {

  private static String freshName() {
    return "race_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
  }

  /**
   * The winner's creation is open when the loser's starts: the loser waits on the winner's catalog
   * rows, and fails on them once the winner commits, unless it runs its script again.
   */
  @Test
  void theCreatorThatLosesTheRaceHasTheTable() throws Exception {
    String table = freshName();
    String ddl = CursorSql.pacerTable(table).createTable();
    try (Connection winner = TestDatabase.connect();
        Connection loser = TestDatabase.connect()) {
      winner.setAutoCommit(false);
      try (Statement w = winner.createStatement()) {
        w.execute(ddl);
      }
      int loserPid = pid(loser);
      CompletableFuture<Void> losing =
          CompletableFuture.runAsync(
              () -> {
                try (Statement s = loser.createStatement()) {
                  ConcurrentCreate.execute(s, ddl);
                } catch (SQLException e) {
                  throw new IllegalStateException(e.getSQLState() + ": " + e.getMessage(), e);
                }
              });
      awaitLockWait(loserPid);
      winner.commit();
      losing.get(10, TimeUnit.SECONDS);
      try (Statement s = loser.createStatement()) {
        s.execute(
            "INSERT INTO " + table + " (name, next_at, updated_at) VALUES ('k', now(), now())");
        s.execute("SELECT 1 FROM " + table + "_lockout");
      }
    } finally {
      TestDatabase.execute(
          "DROP TABLE IF EXISTS " + table + ", " + table + "_lockout, " + table + "_fetcher");
    }
  }

  @Test
  void aClashThatIsNotARaceIsThrown() throws Exception {
    String name = freshName();
    try (Connection c = TestDatabase.connect();
        Statement s = c.createStatement()) {
      s.execute("CREATE TYPE " + name + " AS ENUM ('a')");
      assertThatThrownBy(
              () ->
                  ConcurrentCreate.execute(
                      s, "CREATE TABLE IF NOT EXISTS " + name + " (x integer)"))
          .isInstanceOfSatisfying(
              SQLException.class, e -> assertThat(e.getSQLState()).isEqualTo("42710"));
    } finally {
      TestDatabase.execute("DROP TYPE IF EXISTS " + name);
    }
  }

  private static int pid(Connection c) throws SQLException {
    try (Statement s = c.createStatement();
        ResultSet r = s.executeQuery("SELECT pg_backend_pid()")) {
      r.next();
      return r.getInt(1);
    }
  }

  /** Until the backend {@code pid} waits for a lock another transaction holds. */
  private static void awaitLockWait(int pid) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    try (Connection c = TestDatabase.connect();
        PreparedStatement q =
            c.prepareStatement(
                "SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE pid = ?")) {
      q.setInt(1, pid);
      while (System.nanoTime() < deadline) {
        try (ResultSet r = q.executeQuery()) {
          if (r.next() && r.getBoolean(1)) {
            return;
          }
        }
        Thread.sleep(10);
      }
    }
    throw new AssertionError("backend " + pid + " never waited for a lock");
  }
}
