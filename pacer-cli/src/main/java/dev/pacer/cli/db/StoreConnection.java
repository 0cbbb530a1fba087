package dev.pacer.cli.db;

import dev.pacer.postgres.KeptConnection;
import java.sql.SQLException;

/**
 * One work-state connection to the database, shared by the calling threads in turn: a {@link
 * KeptConnection} under the database's outage policy, so a restarted database costs one failed
 * call, not a broken process, and while the database is down no call touches the network.
 * Failures are thrown as {@link SQLException}: callers decide whether to retry.
 */
final class StoreConnection implements AutoCloseable {

  /** A unit of work on the connection. */
  @FunctionalInterface
  interface SqlCall<T> extends KeptConnection.Work<T> {}

  private final Database database;
  private final KeptConnection connection;

  StoreConnection(Database database) {
    this.database = database;
    this.connection = database.keptConnection();
  }

  Database database() {
    return database;
  }

  /** Runs {@code body} on the connection; see {@link KeptConnection#call}. */
  synchronized <T> T call(SqlCall<T> body) throws SQLException {
    return connection.call(body);
  }

  /** Gives the connection back; a later call opens another. */
  @Override
  public synchronized void close() {
    connection.release();
  }
}
