package dev.pacer.cli.db;

import dev.pacer.postgres.JdbcUrls;
import dev.pacer.postgres.PostgresCursor;
import dev.pacer.postgres.PostgresCursorConfig;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.Properties;

/**
 * Where Pacer's state lives: a PostgreSQL JDBC URL, which may carry a password. The URL itself is
 * never printed; {@link #toString()} and {@link #redactedUrl()} hide the password.
 */
public final class Database {

  private final String url;

  public Database(String url) {
    if (url == null || !url.startsWith("jdbc:postgresql://")) {
      throw new IllegalArgumentException("--db must be a PostgreSQL JDBC URL such as"
          + " jdbc:postgresql://host:5432/dbname?user=NAME, got "
          + (url == null ? "nothing" : "'" + JdbcUrls.redact(url) + "'"));
    }
    this.url = url;
  }

  /** The URL as given, password included: only for handing to a child process's environment. */
  public String url() {
    return url;
  }

  public String redactedUrl() {
    return JdbcUrls.redact(url);
  }

  /** A new autocommit connection whose every network wait is bounded. */
  public Connection open() throws SQLException {
    Properties props = new Properties();
    props.setProperty("connectTimeout", "5");
    props.setProperty("loginTimeout", "5");
    props.setProperty("socketTimeout", "10");
    props.setProperty("tcpKeepAlive", "true");
    props.setProperty("ApplicationName", "pacer");
    Connection c = new org.postgresql.Driver().connect(url, props);
    if (c == null) {
      throw new SQLException("not a PostgreSQL JDBC URL: " + redactedUrl());
    }
    c.setAutoCommit(true);
    return c;
  }

  /** The fleet-wide cursor on this database (its own dedicated connection, default layout). */
  public PostgresCursor cursor() {
    return new PostgresCursor(PostgresCursorConfig.forUrl(url).build());
  }

  /** An error message from the driver, with any password in it hidden. */
  public String describe(SQLException e) {
    String message = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
    return JdbcUrls.redact(message.replace(url, redactedUrl()));
  }

  @Override
  public String toString() {
    return redactedUrl();
  }
}
