package dev.pacer.cli.db;

import dev.pacer.cli.Secrets;
import dev.pacer.postgres.PostgresCursor;
import dev.pacer.postgres.PostgresCursorConfig;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Properties;

/**
 * Where Pacer's state lives: a PostgreSQL JDBC URL, which may carry a password. The URL itself is
 * never printed; {@link #toString()} and {@link #redactedUrl()} hide the password.
 */
public final class Database {

  private final String url;
  private final ConnectionGate gate = ConnectionGate.standard();

  public Database(String url) {
    if (url == null || !url.startsWith("jdbc:postgresql://")) {
      throw new IllegalArgumentException("--db must be a PostgreSQL JDBC URL such as"
          + " jdbc:postgresql://host:5432/dbname?user=NAME, got "
          + (url == null ? "nothing" : "'" + Secrets.redact(url) + "'"));
    }
    this.url = url;
  }

  /** The URL as given, password included: only for handing to a child process's environment. */
  public String url() {
    return url;
  }

  public String redactedUrl() {
    return Secrets.redact(url);
  }

  /** A new autocommit connection for work state; connecting and each read bounded. */
  public Connection open() throws SQLException {
    return connect(5, 10, "pacer");
  }

  /**
   * The fleet-wide cursor on this database (its own dedicated connection, default layout). It
   * connects through this database's {@link ConnectionGate}, with a 1-s connect bound (the
   * cursor bounds its own statements).
   */
  public PostgresCursor cursor() {
    return new PostgresCursor(cursorConfig().build());
  }

  /**
   * The fleet-wide cursor for a fleet whose longest honest queue is known: a stored cursor
   * further ahead than {@code resetBeyond} is reset instead of waited for.
   */
  public PostgresCursor cursor(Duration resetBeyond) {
    return new PostgresCursor(cursorConfig().resetBeyond(resetBeyond).build());
  }

  private PostgresCursorConfig.Builder cursorConfig() {
    return PostgresCursorConfig.forDataSource(
        new GatedDataSource(() -> connect(1, 1, "pacer-cursor")));
  }

  /** The gate every connection of this process to this database goes through. */
  public ConnectionGate gate() {
    return gate;
  }

  private Connection connect(int connectSeconds, int socketSeconds, String applicationName)
      throws SQLException {
    gate.beforeAttempt();
    Properties props = new Properties();
    props.setProperty("connectTimeout", Integer.toString(connectSeconds));
    props.setProperty("loginTimeout", Integer.toString(connectSeconds));
    props.setProperty("socketTimeout", Integer.toString(socketSeconds));
    props.setProperty("tcpKeepAlive", "true");
    props.setProperty("ApplicationName", applicationName);
    Connection c;
    try {
      c = new org.postgresql.Driver().connect(url, props);
      if (c == null) {
        throw new SQLException("not a PostgreSQL JDBC URL: " + redactedUrl());
      }
      c.setAutoCommit(true);
    } catch (SQLException e) {
      gate.failed();
      throw e;
    }
    gate.succeeded();
    return c;
  }

  /** An error message from the driver, with any password in it hidden. */
  public String describe(SQLException e) {
    String message = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
    return Secrets.redact(message.replace(url, redactedUrl()));
  }

  @Override
  public String toString() {
    return redactedUrl();
  }
}
