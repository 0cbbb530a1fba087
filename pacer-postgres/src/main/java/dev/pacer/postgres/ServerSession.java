package dev.pacer.postgres;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Map;
import java.util.stream.Collectors;
import org.postgresql.PGConnection;
import org.postgresql.jdbc.PgStatement;

/**
 * What the server at the other end of a connection keeps between the connection's transactions,
 * found when the connection is opened ({@link #probe}), and how Pacer's statements and settings are
 * made on it accordingly.
 *
 * <p>A transaction pooler (PgBouncer, Supavisor, Neon's pooler, RDS Proxy) hands each transaction
 * to whichever server connection of its pool is free, and other clients' transactions use that
 * server connection next. A session's state does not survive there: a {@code SET} stays on the
 * server connection for the next client's transactions; a named prepared statement is missing on
 * the next server connection (SQLState 26000) or collides with another client's of the same name
 * (42P05), and where the two have the same parameters it would run as the other client's statement.
 * So that no statement can ever be named, the probe tells the driver to prepare nothing on a pooled
 * connection: every statement is parsed and planned where it runs, in its own round trip.
 *
 * <p><b>How a pooler is recognised.</b> The server announces a process id at start-up (the key a
 * cancel request carries), and {@code pg_backend_pid()} answers the id of the process that runs the
 * query. Connected to PostgreSQL directly, or through a proxy that only forwards bytes, the two are
 * the same process. A pooler announces a key of its own, since the client's cancel requests come to
 * it and the client's transactions run on several server processes: PgBouncer's is random, so the
 * two differ but for a chance of one in about four billion. Whether other clients share the server
 * connection is no test: on a quiet pool the next transaction often lands on the same one, and the
 * collision comes only under load. A pooler in session mode is counted as pooled, which costs the
 * named statements' saving and nothing else.
 */
public enum ServerSession {

  /**
   * The connection has a server process of its own for its whole life: session settings and named
   * prepared statements stay with it.
   */
  OWN {
    @Override
    void set(Statement s, Map<String, String> settings) throws SQLException {
      s.execute(
          settings.entrySet().stream()
              .map(setting -> "SET " + setting.getKey() + " = " + setting.getValue())
              .collect(Collectors.joining("; ")));
    }

    @Override
    PreparedStatement prepare(Connection c, String sql, int deadlineMillis) throws SQLException {
      return c.prepareStatement(sql);
    }

    @Override
    PreparedStatement prepareForReuse(Connection c, String sql, int deadlineMillis)
        throws SQLException {
      PreparedStatement statement = c.prepareStatement(sql);
      statement.unwrap(PgStatement.class).setPrepareThreshold(1);
      return statement;
    }
  },

  /**
   * Each transaction may run on another server connection, shared with other clients: no session
   * setting is made, no statement is named, and each statement carries its own deadline: a cancel
   * request the driver sends when three quarters of it have passed, so that the cancel reaches the
   * server and its answer comes back before the connection's reads time out at the deadline. A
   * statement cut only by that read timeout would go on waiting on the server (for a row lock,
   * say), holding a server connection of the pool.
   */
  POOLED {
    @Override
    void set(Statement s, Map<String, String> settings) {
      // Nothing may outlive the transaction; the statements carry their deadlines themselves.
    }

    @Override
    PreparedStatement prepare(Connection c, String sql, int deadlineMillis) throws SQLException {
      PreparedStatement statement = c.prepareStatement(sql);
      statement.unwrap(PgStatement.class).setQueryTimeoutMs(Math.max(1, deadlineMillis * 3L / 4));
      return statement;
    }

    @Override
    PreparedStatement prepareForReuse(Connection c, String sql, int deadlineMillis)
        throws SQLException {
      return prepare(c, sql, deadlineMillis);
    }
  };

  /** A connection newly opened, and what the server behind it keeps. */
  record Probed(Connection connection, ServerSession server) {}

  /**
   * Finds out what the server behind {@code c} keeps, in one round trip; on a {@link #POOLED} one
   * it also sets the driver never to name a statement on {@code c} (pgjdbc's {@code
   * prepareThreshold=0} for the connection, whatever its URL says).
   *
   * @param c a newly opened pgjdbc connection
   * @return what its server keeps
   * @throws SQLException if the probe could not be made
   */
  public static ServerSession probe(Connection c) throws SQLException {
    PGConnection driver = c.unwrap(PGConnection.class);
    int announced = driver.getBackendPID();
    int running;
    try (Statement s = c.createStatement();
        ResultSet r = s.executeQuery("SELECT pg_backend_pid()")) {
      r.next();
      running = r.getInt(1);
    }
    if (announced == running) {
      return OWN;
    }
    driver.setPrepareThreshold(0);
    return POOLED;
  }

  /**
   * Makes the session settings {@code settings} (name to SQL literal, both Pacer's own, never a
   * caller's) where they stay with the session; none where they would not.
   */
  abstract void set(Statement s, Map<String, String> settings) throws SQLException;

  /**
   * A statement run once or now and then; on a pooled connection, cut by a cancel after {@code
   * deadlineMillis}, where a session's {@code statement_timeout} would otherwise have bounded it.
   */
  abstract PreparedStatement prepare(Connection c, String sql, int deadlineMillis)
      throws SQLException;

  /**
   * A statement kept and run many times on {@code c}: prepared on the server at its first run where
   * the server keeps it, and planned there once; on a pooled connection as {@link #prepare}.
   */
  abstract PreparedStatement prepareForReuse(Connection c, String sql, int deadlineMillis)
      throws SQLException;
}
