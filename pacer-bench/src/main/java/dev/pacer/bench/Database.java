package dev.pacer.bench;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Properties;

/**
 * The one PostgreSQL server a run measures: a throwaway embedded one (zonky's binaries), or the
 * server of a JDBC URL given with {@code --db}.
 *
 * <p>The embedded server is started with {@code fsync = on} and {@code synchronous_commit = on},
 * PostgreSQL's own defaults. zonky starts its server with {@code -F} (no fsync) and {@code
 * synchronous_commit = off} unless told otherwise, which would make every commit free and silently
 * give every peer the commit mode that Pacer chooses only for its own session.
 */
final class Database implements AutoCloseable {

  /** Where to connect: a JDBC URL carrying its own user and password, if any. */
  record Target(String jdbcUrl) {

    Properties properties() {
      return new Properties();
    }

    Connection connect() throws SQLException {
      Connection c = new org.postgresql.Driver().connect(jdbcUrl, properties());
      if (c == null) {
        throw new SQLException("not a PostgreSQL JDBC URL: " + jdbcUrl);
      }
      return c;
    }
  }

  private final EmbeddedPostgres embedded;
  private final Target target;

  private Database(EmbeddedPostgres embedded, Target target) {
    this.embedded = embedded;
    this.target = target;
  }

  static Database embedded() throws IOException {
    EmbeddedPostgres pg =
        EmbeddedPostgres.builder()
            .setServerConfig("fsync", "on")
            .setServerConfig("synchronous_commit", "on")
            .start();
    return new Database(pg, new Target(pg.getJdbcUrl("postgres", "postgres")));
  }

  static Database external(String jdbcUrl) {
    return new Database(null, new Target(jdbcUrl));
  }

  Target target() {
    return target;
  }

  boolean isEmbedded() {
    return embedded != null;
  }

  /** {@code version()} of the server, e.g. "PostgreSQL 14.22 on x86_64-pc-linux-gnu, …". */
  String serverVersion() throws SQLException {
    return queryString("SELECT version()");
  }

  /** The server's default commit mode, as a new session sees it. */
  String serverSynchronousCommit() throws SQLException {
    return queryString("SHOW synchronous_commit");
  }

  /** Whether the server flushes its WAL to disk at all. */
  String serverFsync() throws SQLException {
    return queryString("SHOW fsync");
  }

  /**
   * Creates the peers' tables (empty) with the DDL their documentation gives, and Pacer's key/value
   * table in the Django cache shape. Pacer's own table is created by the cursor itself.
   */
  void createTables() throws SQLException {
    try (Connection c = target.connect();
        Statement s = c.createStatement()) {
      for (String table :
          new String[] {
            Contender.BUCKET4J_SELECT_FOR_UPDATE_TABLE, Contender.BUCKET4J_ADVISORY_LOCK_TABLE
          }) {
        s.execute("DROP TABLE IF EXISTS " + table);
        s.execute(
            "CREATE TABLE " + table + " (id BIGINT PRIMARY KEY, state BYTEA, expires_at BIGINT)");
      }
      s.execute("DROP TABLE IF EXISTS " + Contender.NAIVE_TABLE);
      s.execute(
          "CREATE TABLE "
              + Contender.NAIVE_TABLE
              + " (name text PRIMARY KEY, next_at_micros bigint NOT NULL)");
      s.execute("DROP TABLE IF EXISTS " + Contender.KEY_VALUE_TABLE);
      s.execute(
          "CREATE TABLE "
              + Contender.KEY_VALUE_TABLE
              + " (cache_key varchar(255) PRIMARY KEY, value text NOT NULL,"
              + " expires timestamptz NOT NULL)");
    }
  }

  /** pgbench's connection arguments for this target. */
  Properties libpqSettings() {
    Properties parsed = org.postgresql.Driver.parseURL(target.jdbcUrl(), new Properties());
    if (parsed == null) {
      throw new IllegalArgumentException("not a PostgreSQL JDBC URL: " + target.jdbcUrl());
    }
    return parsed;
  }

  /** A stable 63-bit number for a key name: Bucket4j's and the advisory lock's key. */
  static long numericKey(String name) {
    long hash = 0xcbf29ce484222325L;
    for (int i = 0; i < name.length(); i++) {
      hash ^= name.charAt(i);
      hash *= 0x100000001b3L;
    }
    return hash & Long.MAX_VALUE;
  }

  private String queryString(String sql) throws SQLException {
    try (Connection c = target.connect();
        Statement s = c.createStatement();
        ResultSet r = s.executeQuery(sql)) {
      r.next();
      return r.getString(1);
    }
  }

  @Override
  public void close() throws IOException {
    if (embedded != null) {
      embedded.close();
    }
  }
}
