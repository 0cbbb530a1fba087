package dev.pacer.cli.db;

import java.sql.Connection;
import java.sql.SQLException;

/**
 * One work-state connection to the database, shared by the calling threads in turn. After a
 * failure it is discarded and the next call reconnects, so a restarted database costs one failed
 * call, not a broken process. Failures are thrown as {@link SQLException}: callers decide whether
 * to retry.
 */
final class StoreConnection implements AutoCloseable {

  /** A unit of work on the connection. */
  @FunctionalInterface
  interface SqlCall<T> {
    T apply(Connection c) throws SQLException;
  }

  private final Database database;
  private Connection connection;

  StoreConnection(Database database) {
    this.database = database;
  }

  Database database() {
    return database;
  }

  /**
   * Runs {@code body} on the connection. A kept connection that turns out to have died since its
   * last use (a database restart) is replaced and {@code body} run once more; any other failure
   * discards the connection and is thrown.
   */
  synchronized <T> T call(SqlCall<T> body) throws SQLException {
    boolean reused = connection != null;
    Connection c = connection();
    try {
      return body.apply(c);
    } catch (SQLException e) {
      discard();
      if (!reused || !isConnectionLoss(e)) {
        throw e;
      }
    }
    Connection fresh = connection();
    try {
      return body.apply(fresh);
    } catch (SQLException e) {
      discard();
      throw e;
    }
  }

  private static boolean isConnectionLoss(SQLException e) {
    String state = e.getSQLState();
    return state == null || state.startsWith("08") || state.startsWith("57P");
  }

  private Connection connection() throws SQLException {
    if (connection == null) {
      connection = database.open();
    }
    return connection;
  }

  private void discard() {
    if (connection != null) {
      try {
        connection.close();
      } catch (SQLException ignored) {
        // Discarded because it failed; closing it may fail the same way.
      }
      connection = null;
    }
  }

  @Override
  public synchronized void close() {
    discard();
  }
}
