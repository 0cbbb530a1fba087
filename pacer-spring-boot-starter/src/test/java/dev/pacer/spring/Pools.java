package dev.pacer.spring;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.pacer.postgres.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.function.IntSupplier;

/**
 * The application's side of the tests: HikariCP pools on the test PostgreSQL (the pool Spring Boot
 * gives an application by default), each under an application name of its own, so that a test can
 * count and terminate the server sessions of its own pool.
 */
final class Pools {

  private Pools() {}

  /** The URL without credentials: a pool or {@code pacer.datasource} gives them. */
  static String url() {
    return "jdbc:postgresql://localhost:" + TestDatabase.port() + "/postgres";
  }

  /** A pool of {@code size} connections, named {@code pool.getPoolName()} on the server too. */
  static HikariDataSource pool(int size) {
    return pool(size, 0);
  }

  /**
   * As {@link #pool(int)}, reporting a connection borrowed longer than {@code leakMillis} (0:
   * never).
   */
  static HikariDataSource pool(int size, long leakMillis) {
    HikariConfig c = new HikariConfig();
    c.setLeakDetectionThreshold(leakMillis);
    String name = "pool-" + UUID.randomUUID().toString().substring(0, 8);
    c.setPoolName(name);
    c.setJdbcUrl(url());
    c.setUsername("postgres");
    c.setMaximumPoolSize(size);
    c.setMinimumIdle(0);
    c.setConnectionTimeout(5_000);
    c.addDataSourceProperty("ApplicationName", name);
    return new HikariDataSource(c);
  }

  /** Server sessions whose application name is {@code applicationName}. */
  static int sessions(String applicationName) {
    return queryInt(
        "SELECT count(*) FROM pg_stat_activity WHERE application_name = '" + applicationName + "'");
  }

  /**
   * Terminates every server session named {@code applicationName} and waits (up to 10 s) until
   * their backends have left {@code pg_stat_activity}; returns how many. A terminated backend stays
   * listed until it has exited, which on a busy machine can outlast the client's next connection,
   * and {@link #sessions} would count it as one of the application's.
   */
  static int terminate(String applicationName) throws InterruptedException {
    List<Integer> pids = new ArrayList<>();
    try (Connection c = TestDatabase.connect();
        PreparedStatement s =
            c.prepareStatement(
                "SELECT pid, pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name"
                    + " = ?")) {
      s.setString(1, applicationName);
      try (ResultSet r = s.executeQuery()) {
        while (r.next()) {
          pids.add(r.getInt(1));
        }
      }
      long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
      try (PreparedStatement left =
          c.prepareStatement("SELECT count(*) FROM pg_stat_activity WHERE pid = ANY (?)")) {
        left.setArray(1, c.createArrayOf("int4", pids.toArray()));
        while (true) {
          try (ResultSet r = left.executeQuery()) {
            r.next();
            if (r.getInt(1) == 0) {
              return pids.size();
            }
          }
          if (System.nanoTime() > deadline) {
            throw new IllegalStateException(
                "terminated backends "
                    + pids
                    + " of "
                    + applicationName
                    + " still listed after 10 s");
          }
          Thread.sleep(10);
        }
      }
    } catch (SQLException e) {
      throw new IllegalStateException("terminating the sessions of " + applicationName, e);
    }
  }

  private static int queryInt(String sql) {
    try (Connection c = TestDatabase.connect();
        Statement s = c.createStatement();
        ResultSet r = s.executeQuery(sql)) {
      r.next();
      return r.getInt(1);
    } catch (SQLException e) {
      throw new IllegalStateException(sql, e);
    }
  }

  /**
   * Polls {@code value} until it equals {@code expected} or {@code within} has passed, and returns
   * the last value read: for what background threads (the hold listener) settle to.
   */
  static int settlesTo(int expected, Duration within, IntSupplier value)
      throws InterruptedException {
    long deadline = System.nanoTime() + within.toNanos();
    int last = value.getAsInt();
    while (last != expected && System.nanoTime() < deadline) {
      Thread.sleep(20);
      last = value.getAsInt();
    }
    return last;
  }
}
