package dev.pacer.cli.db;

import dev.pacer.TimeSource;
import dev.pacer.cli.model.Secrets;
import dev.pacer.postgres.KeptConnection;
import dev.pacer.postgres.OutagePolicy;
import dev.pacer.postgres.PostgresCursor;
import dev.pacer.postgres.PostgresCursorConfig;
import dev.pacer.postgres.PostgresFleetSlots;
import dev.pacer.postgres.ServerSession;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Where Pacer's state lives: a PostgreSQL JDBC URL, which may carry a password. The URL itself is
 * never printed; {@link #toString()} and {@link #redactedUrl()} hide the password.
 *
 * <p>One {@link OutagePolicy} per database per process, here: the cursor, the fleet slots (the
 * dispatch slots among them) and the work stores all connect under it, so an outage costs this
 * process one connection attempt per 5-s boundary (the policy's probe), whichever component noticed
 * it, and every process of the fleet returns on the same boundary.
 */
public final class Database {

  private static final Duration STORE_READ_TIMEOUT = Duration.ofSeconds(10);

  /** The application name of the work store's connections. */
  private static final String STORE_CONNECTION = "pacer-store";

  /** The application name of the outage policy's probe at a retry boundary. */
  private static final String PROBE_CONNECTION = "pacer-probe";

  /** SQLSTATE read_only_sql_transaction. */
  private static final String READ_ONLY = "25006";

  private final String url;
  private final CursorPlace cursorPlace;
  private final AtomicLong connectionAttempts = new AtomicLong();
  private final OutagePolicy policy =
      new OutagePolicy(
          "Pacer's database",
          Duration.ofSeconds(5),
          TimeSource.SYSTEM,
          OutagePolicy.Scheduler.daemonThread("pacer-db-probe"),
          this::probe);

  /** The database at {@code url}, its cursors in Pacer's own table. */
  public Database(String url) {
    this(url, CursorPlace.DEFAULT);
  }

  /** The database at {@code url}, its cursors kept at {@code cursorPlace}. */
  public Database(String url, CursorPlace cursorPlace) {
    this.cursorPlace = java.util.Objects.requireNonNull(cursorPlace, "cursorPlace");
    if (url == null || !url.startsWith("jdbc:postgresql://")) {
      throw new IllegalArgumentException(
          "--db must be a PostgreSQL JDBC URL such as"
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

  /**
   * A new autocommit connection for work state, under the outage policy (refused while the database
   * is down); connecting and each read bounded.
   */
  public Connection open() throws SQLException {
    return policy.open(this::openForWork);
  }

  /**
   * A kept work-state connection under the outage policy. {@code asynchronousCommit}: its session
   * runs {@code synchronous_commit = off} (see {@link StoreConnection} for when that is chosen).
   */
  KeptConnection keptConnection(boolean asynchronousCommit) {
    return KeptConnection.whenUnavailable(
        policy, asynchronousCommit ? this::openForRecords : this::openForWork, STORE_READ_TIMEOUT);
  }

  /** Where this database keeps the fleet-wide cursors. */
  public CursorPlace cursorPlace() {
    return cursorPlace;
  }

  /**
   * The fleet-wide cursor on this database (its own dedicated connection, at the cursor place),
   * under this database's outage policy, with a 1-s connect bound (the cursor bounds its own
   * statements).
   */
  public PostgresCursor cursor() {
    return new PostgresCursor(cursorConfig().build());
  }

  /**
   * The fleet-wide cursor for a fleet whose longest honest queue is known: a stored cursor further
   * ahead than {@code resetBeyond} is reset instead of waited for.
   */
  public PostgresCursor cursor(Duration resetBeyond) {
    return new PostgresCursor(cursorConfig().resetBeyond(resetBeyond).build());
  }

  /**
   * The fleet-wide concurrency slots on this database (their own connection, opened at the first
   * take), under this database's outage policy, with the default lease; {@code holder} is what the
   * table says of this process.
   */
  public PostgresFleetSlots fleetSlots(String holder) {
    return new PostgresFleetSlots(
        cursorConfig().build(), policy, holder, PostgresFleetSlots.DEFAULT_LEASE);
  }

  private PostgresCursorConfig.Builder cursorConfig() {
    return PostgresCursorConfig.forUrl(url, new Properties())
        .outagePolicy(policy)
        .layout(cursorPlace.tableLayout());
  }

  /** The outage policy every connection of this process to this database answers to. */
  public OutagePolicy outagePolicy() {
    return policy;
  }

  /**
   * Connection attempts this process made for work state, slots and probes (the cursor counts its
   * own).
   */
  public long connectionAttempts() {
    return connectionAttempts.get();
  }

  /**
   * A work-state connection, probed for a transaction pooler in front ({@link
   * ServerSession#probe}), behind which no statement is named on it.
   */
  private Connection openForWork() throws SQLException {
    return probed(connect(5, (int) STORE_READ_TIMEOUT.toSeconds(), STORE_CONNECTION));
  }

  /**
   * A work-state connection committing asynchronously where the session keeps the setting; behind a
   * pooler it would stay on a server connection for other clients, and the server's own setting is
   * used.
   */
  private Connection openForRecords() throws SQLException {
    Connection c = connect(5, (int) STORE_READ_TIMEOUT.toSeconds(), STORE_CONNECTION);
    try (Statement s = c.createStatement()) {
      if (ServerSession.probe(c) == ServerSession.OWN) {
        s.execute("SET synchronous_commit = off");
      }
    } catch (SQLException | RuntimeException e) {
      c.close();
      throw e;
    }
    return c;
  }

  private static Connection probed(Connection c) throws SQLException {
    try {
      ServerSession.probe(c);
      return c;
    } catch (SQLException | RuntimeException e) {
      c.close();
      throw e;
    }
  }

  /**
   * The policy's attempt at a retry boundary: can this process connect, and would the server take
   * its writes? Every user of the policy writes. A read-only server (a standby, {@code
   * default_transaction_read_only}) accepts connections: a probe that only connected would end the
   * outage at every boundary, for the next write to begin it again, with a WARN each time.
   */
  private void probe() throws SQLException {
    try (Connection c = connect(1, 1, PROBE_CONNECTION);
        Statement s = c.createStatement();
        ResultSet r = s.executeQuery("SHOW transaction_read_only")) {
      if (r.next() && "on".equals(r.getString(1))) {
        throw new SQLException(
            "the server is read-only (transaction_read_only is on: a standby,"
                + " or default_transaction_read_only)",
            READ_ONLY);
      }
    }
  }

  private Connection connect(int connectSeconds, int socketSeconds, String applicationName)
      throws SQLException {
    connectionAttempts.incrementAndGet();
    Properties props = new Properties();
    props.setProperty("connectTimeout", Integer.toString(connectSeconds));
    props.setProperty("loginTimeout", Integer.toString(connectSeconds));
    props.setProperty("socketTimeout", Integer.toString(socketSeconds));
    props.setProperty("tcpKeepAlive", "true");
    props.setProperty("ApplicationName", applicationName);
    Connection c = new org.postgresql.Driver().connect(url, props);
    if (c == null) {
      throw new SQLException("not a PostgreSQL JDBC URL: " + redactedUrl());
    }
    c.setAutoCommit(true);
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
