package dev.pacer.postgres;

import dev.pacer.TimeSource;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;

/**
 * How a {@link PostgresCursor} reaches PostgreSQL and how it behaves when it cannot. Immutable;
 * built with {@link #forUrl} or {@link #forDataSource}, every setter validated.
 *
 * <ul>
 *   <li>{@code operationTimeout} (default 1 s): the most a reservation may spend on the database
 *       before it answers "unavailable": it bounds connecting, each socket read, and the server's
 *       {@code statement_timeout} (behind a transaction pooler, a cancel three quarters of the way
 *       through, see {@link ServerSession}). pgjdbc counts connect and login timeouts in whole
 *       seconds, so a fresh connection attempt is bounded by the timeout rounded up to a second.
 *   <li>{@code outagePolicy}: the database's {@link OutagePolicy}, when the process shares one with
 *       other users of the database; otherwise the cursor makes its own from {@code
 *       failureCooldown} and {@code backgroundReconnect}.
 *   <li>{@code failureCooldown} (default 5 s): after a failure, reservations answer "unavailable"
 *       without touching the network until the next multiple of this period on the wall clock: an
 *       outage costs one connection attempt per boundary per process, and every process retries at
 *       the same instants.
 *   <li>{@code resetBeyond} (default 1 h): a stored cursor further ahead than this of now, and of
 *       the end of the pause ({@code Retry-After}) recorded with it, believed up to {@link
 *       dev.pacer.Destination#LONGEST_RETRY_AFTER} ahead, is treated as corrupt (a clock step, a
 *       hand edit), reset and logged. It must exceed the longest honest queue, {@link
 *       dev.pacer.Destination#longestHonestQueue()}; in the key/value layout, which records no
 *       pause, also the destinations' {@code maxRetryAfter}.
 *   <li>{@code synchronousCommit} (default false): the dedicated session runs with {@code
 *       synchronous_commit = off}; see docs/operations.md for the measurement. Behind a transaction
 *       pooler the session keeps no setting, and the server's own applies.
 *   <li>{@code holdPollInterval} (default 100 ms): how often the cursor's {@link HoldListener}
 *       reads the pauses and lockouts of every destination it serves, in one statement, where
 *       notifications do not reach it (behind a pooler, or where its own does not come back).
 *       Directly connected it listens, and this costs nothing.
 * </ul>
 *
 * <p><b>Each connection says what it is for.</b> Unless the properties name an {@code
 * ApplicationName}, each connection opened from a URL is named for its purpose, so that {@code
 * pg_stat_activity} tells an operator which of a process's connections is which, and what to count
 * against {@code max_connections}: {@value #CURSOR_CONNECTION} (the cursor's reservations), {@value
 * #LISTENER_CONNECTION} (the {@link HoldListener}'s {@code LISTEN}) and {@value #SLOTS_CONNECTION}
 * ({@link PostgresFleetSlots}). Named properties are the caller's choice and name every connection
 * alike.
 */
public final class PostgresCursorConfig {

  private static final Duration DEFAULT_HOLD_POLL_INTERVAL = Duration.ofMillis(100);

  /**
   * Below this, every process's polls add up to a load of their own on the database, for a pause
   * heard a few milliseconds sooner.
   */
  private static final long LEAST_HOLD_POLL_MILLIS = 10;

  /** Above this, a pause reaches the other processes after most turns it should have held. */
  private static final long MOST_HOLD_POLL_MILLIS = 10_000;

  /** The application name of a cursor's reservation connection, unless the properties name one. */
  public static final String CURSOR_CONNECTION = "pacer-cursor";

  /** The application name of a cursor's listener connection, unless the properties name one. */
  public static final String LISTENER_CONNECTION = "pacer-listener";

  /** The application name of the fleet slots' connection, unless the properties name one. */
  public static final String SLOTS_CONNECTION = "pacer-slots";

  private final String jdbcUrl;
  private final Properties properties;
  private final DataSource dataSource;
  private final TableLayout layout;
  private final Duration operationTimeout;
  private final Duration failureCooldown;
  private final Duration resetBeyond;
  private final boolean synchronousCommit;
  private final boolean backgroundReconnect;
  private final TimeSource time;
  private final OutagePolicy outagePolicy;
  private final Duration holdPollInterval;

  private PostgresCursorConfig(Builder b) {
    this.jdbcUrl = b.jdbcUrl;
    this.properties = b.properties;
    this.dataSource = b.dataSource;
    this.layout = b.layout;
    this.operationTimeout = b.operationTimeout;
    this.failureCooldown = b.failureCooldown;
    this.resetBeyond = b.resetBeyond;
    this.synchronousCommit = b.synchronousCommit;
    this.backgroundReconnect = b.backgroundReconnect;
    this.time = b.time;
    this.outagePolicy = b.outagePolicy;
    this.holdPollInterval = b.holdPollInterval;
  }

  /**
   * Connect with a JDBC URL ({@code jdbc:postgresql://host:port/db}) and connection properties
   * (user, password, ...). The properties are copied.
   *
   * @param jdbcUrl a {@code jdbc:postgresql:} URL
   * @param properties connection properties, or null for none
   * @return a builder
   * @throws IllegalArgumentException if the URL is not a PostgreSQL JDBC URL (named without its
   *     secrets)
   */
  public static Builder forUrl(String jdbcUrl, Properties properties) {
    if (jdbcUrl == null || !jdbcUrl.startsWith("jdbc:postgresql:")) {
      throw new IllegalArgumentException(
          "jdbcUrl must start with jdbc:postgresql:, got "
              + (jdbcUrl == null ? "null" : JdbcUrls.redact(jdbcUrl)));
    }
    Properties copy = new Properties();
    if (properties != null) {
      copy.putAll(properties);
    }
    return new Builder(jdbcUrl, copy, null);
  }

  /**
   * Connect with a JDBC URL that carries everything it needs.
   *
   * @param jdbcUrl a {@code jdbc:postgresql:} URL
   * @return a builder
   * @throws IllegalArgumentException if the URL is not a PostgreSQL JDBC URL (named without its
   *     secrets)
   */
  public static Builder forUrl(String jdbcUrl) {
    return forUrl(jdbcUrl, new Properties());
  }

  /**
   * Take one connection from {@code dataSource} and keep it (another if it dies). With a pool, that
   * connection stays borrowed for the cursor's lifetime.
   *
   * @param dataSource where the connection comes from
   * @return a builder
   */
  public static Builder forDataSource(DataSource dataSource) {
    return new Builder(null, null, Objects.requireNonNull(dataSource, "dataSource"));
  }

  String jdbcUrl() {
    return jdbcUrl;
  }

  Properties properties() {
    return properties;
  }

  DataSource dataSource() {
    return dataSource;
  }

  /**
   * A new connection to the configured database (or one borrowed from its data source), with
   * connecting, logging in and each socket read bounded by {@code connectTimeoutNanos} unless the
   * properties say otherwise, named {@code applicationName} unless they name it: the cursor's
   * session and the fleet slots' session open theirs here.
   */
  Connection openConnection(long connectTimeoutNanos, String applicationName) throws SQLException {
    if (dataSource != null) {
      return dataSource.getConnection();
    }
    Properties props = new Properties();
    props.putAll(properties);
    String wholeSeconds =
        Long.toString(
            Math.max(1, TimeUnit.NANOSECONDS.toSeconds(connectTimeoutNanos + 999_999_999L)));
    props.putIfAbsent("connectTimeout", wholeSeconds);
    props.putIfAbsent("loginTimeout", wholeSeconds);
    props.putIfAbsent("socketTimeout", wholeSeconds);
    props.putIfAbsent("tcpKeepAlive", "true");
    props.putIfAbsent("ApplicationName", applicationName);
    Connection c = new org.postgresql.Driver().connect(jdbcUrl, props);
    if (c == null) {
      throw new SQLException("not a PostgreSQL JDBC URL: " + JdbcUrls.redact(jdbcUrl));
    }
    return c;
  }

  /**
   * A new connection as {@link #openConnection} opens it, probed for a pooler in front ({@link
   * ServerSession#probe}), so that no statement is ever named on it behind one. The probe's read is
   * bounded by {@code connectTimeoutNanos}, a borrowed connection's too.
   */
  ServerSession.Probed openProbed(long connectTimeoutNanos, String applicationName)
      throws SQLException {
    Connection c = openConnection(connectTimeoutNanos, applicationName);
    try {
      c.setNetworkTimeout(
          Runnable::run,
          (int) Math.max(1, Math.min(Integer.MAX_VALUE, connectTimeoutNanos / 1_000_000)));
      return new ServerSession.Probed(c, ServerSession.probe(c));
    } catch (SQLException | RuntimeException e) {
      try {
        c.close();
      } catch (SQLException | RuntimeException ignored) {
        // Thrown away because its probe failed; its close may fail the same way.
      }
      throw e;
    }
  }

  /**
   * Where the cursors are stored.
   *
   * @return the layout (default {@link TableLayout#pacerTable()})
   */
  public TableLayout layout() {
    return layout;
  }

  /**
   * The most a reservation may spend on the database (see the class comment).
   *
   * @return the operation timeout (default 1 s)
   */
  public Duration operationTimeout() {
    return operationTimeout;
  }

  /**
   * The spacing of retry boundaries after a failure (see the class comment).
   *
   * @return the cooldown (default 5 s)
   */
  public Duration failureCooldown() {
    return failureCooldown;
  }

  /**
   * How far ahead a stored cursor may be before it is reset as corrupt (see the class comment).
   *
   * @return the reset bound (default 1 h)
   */
  public Duration resetBeyond() {
    return resetBeyond;
  }

  /**
   * Whether the dedicated session keeps {@code synchronous_commit} on.
   *
   * @return the setting (default false)
   */
  public boolean synchronousCommit() {
    return synchronousCommit;
  }

  /**
   * Whether a background thread reconnects at each retry boundary (default true).
   *
   * @return whether the cursor reconnects in the background
   */
  public boolean backgroundReconnect() {
    return backgroundReconnect;
  }

  TimeSource time() {
    return time;
  }

  /**
   * The shared outage policy, if one was given.
   *
   * @return the policy given, or empty
   */
  public Optional<OutagePolicy> outagePolicy() {
    return Optional.ofNullable(outagePolicy);
  }

  /**
   * How often the hold listener reads the holds of every destination it serves where notifications
   * do not reach it (see the class comment).
   *
   * @return the interval (default 100 ms)
   */
  public Duration holdPollInterval() {
    return holdPollInterval;
  }

  @Override
  public String toString() {
    return "PostgresCursorConfig{"
        + (jdbcUrl != null ? "url=" + JdbcUrls.redact(jdbcUrl) : "dataSource=" + dataSource)
        + ", layout="
        + layout
        + ", operationTimeout="
        + operationTimeout
        + ", failureCooldown="
        + failureCooldown
        + ", resetBeyond="
        + resetBeyond
        + ", synchronousCommit="
        + synchronousCommit
        + ", backgroundReconnect="
        + backgroundReconnect
        + ", holdPollInterval="
        + holdPollInterval
        + "}";
  }

  /** Builder for {@link PostgresCursorConfig}. */
  public static final class Builder {
    private final String jdbcUrl;
    private final Properties properties;
    private final DataSource dataSource;
    private TableLayout layout = TableLayout.pacerTable();
    private Duration operationTimeout = Duration.ofSeconds(1);
    private Duration failureCooldown = Duration.ofSeconds(5);
    private Duration resetBeyond = Duration.ofHours(1);
    private boolean synchronousCommit;
    private boolean backgroundReconnect = true;
    private TimeSource time = TimeSource.SYSTEM;
    private OutagePolicy outagePolicy;
    private Duration holdPollInterval = DEFAULT_HOLD_POLL_INTERVAL;

    private Builder(String jdbcUrl, Properties properties, DataSource dataSource) {
      this.jdbcUrl = jdbcUrl;
      this.properties = properties;
      this.dataSource = dataSource;
    }

    /**
     * Where the cursors are stored. Default {@link TableLayout#pacerTable()}.
     *
     * @param layout the layout
     * @return this builder
     */
    public Builder layout(TableLayout layout) {
      this.layout = Objects.requireNonNull(layout, "layout");
      return this;
    }

    /**
     * The most a reservation may spend on the database. Default 1 s.
     *
     * @param timeout above zero
     * @return this builder
     * @throws IllegalArgumentException naming the value if it is not above zero
     */
    public Builder operationTimeout(Duration timeout) {
      this.operationTimeout = positive("operationTimeout", timeout);
      return this;
    }

    /**
     * The spacing of retry boundaries after a failure; zero retries at every reservation. Default 5
     * s.
     *
     * @param cooldown zero or more
     * @return this builder
     * @throws IllegalArgumentException naming the value if it is negative
     */
    public Builder failureCooldown(Duration cooldown) {
      if (cooldown == null || cooldown.isNegative()) {
        throw new IllegalArgumentException("failureCooldown must be >= 0, got " + cooldown);
      }
      this.failureCooldown = cooldown;
      return this;
    }

    /**
     * How far ahead a stored cursor may be, of now and of the end of the pause recorded with it,
     * before it is reset as corrupt. Default 1 h.
     *
     * @param resetBeyond above zero, and above the longest honest queue of every destination
     * @return this builder
     * @throws IllegalArgumentException naming the value if it is not above zero
     */
    public Builder resetBeyond(Duration resetBeyond) {
      this.resetBeyond = positive("resetBeyond", resetBeyond);
      return this;
    }

    /**
     * Whether the dedicated session keeps {@code synchronous_commit} on. Default false.
     *
     * @param synchronousCommit the setting
     * @return this builder
     */
    public Builder synchronousCommit(boolean synchronousCommit) {
      this.synchronousCommit = synchronousCommit;
      return this;
    }

    /**
     * Whether a background thread reconnects exactly at each retry boundary (default true). Off,
     * the first reservation after a boundary reconnects; tests on a fake clock turn it off.
     *
     * @param backgroundReconnect the setting
     * @return this builder
     */
    public Builder backgroundReconnect(boolean backgroundReconnect) {
      this.backgroundReconnect = backgroundReconnect;
      return this;
    }

    /**
     * The clock of the cursor's own outage policy and its database clock (tests substitute a fake).
     *
     * @param time the clock
     * @return this builder
     */
    public Builder timeSource(TimeSource time) {
      this.time = Objects.requireNonNull(time, "time");
      return this;
    }

    /**
     * The outage policy of the database, shared with everything else this process keeps there (its
     * time source and cooldown then apply, not {@link #failureCooldown}, {@link
     * #backgroundReconnect} or {@link #timeSource} for its retry grid).
     *
     * @param policy the database's policy
     * @return this builder
     */
    public Builder outagePolicy(OutagePolicy policy) {
      this.outagePolicy = Objects.requireNonNull(policy, "policy");
      return this;
    }

    /**
     * How often the hold listener reads the holds of every destination it serves where
     * notifications do not reach it: a turn another process's pause should hold may go out up to
     * this long after the pause was recorded. Default 100 ms.
     *
     * @param interval from 10 ms to 10 s
     * @return this builder
     * @throws IllegalArgumentException naming the value if it is outside that range
     */
    public Builder holdPollInterval(Duration interval) {
      if (interval == null
          || interval.toMillis() < LEAST_HOLD_POLL_MILLIS
          || interval.compareTo(Duration.ofMillis(MOST_HOLD_POLL_MILLIS)) > 0) {
        throw new IllegalArgumentException(
            "holdPollInterval must be from "
                + LEAST_HOLD_POLL_MILLIS
                + " ms to "
                + MOST_HOLD_POLL_MILLIS
                + " ms, got "
                + interval);
      }
      this.holdPollInterval = interval;
      return this;
    }

    /**
     * Builds the configuration.
     *
     * @return the configuration
     */
    public PostgresCursorConfig build() {
      return new PostgresCursorConfig(this);
    }

    private static Duration positive(String field, Duration value) {
      if (value == null || value.isZero() || value.isNegative()) {
        throw new IllegalArgumentException(field + " must be > 0, got " + value);
      }
      return value;
    }
  }
}
