package dev.pacer.postgres;

import dev.pacer.Cursor;
import dev.pacer.CursorStoreException;
import dev.pacer.Reservation;
import dev.pacer.TimeSource;
import dev.pacer.postgres.internal.CursorSql;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Types;
import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;
import org.postgresql.PGStatement;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The fleet-wide cursor: each reservation is one atomic {@code INSERT … ON CONFLICT DO UPDATE …
 * RETURNING} on a row every process shares, computed on the database's clock (the SQL and its
 * reasoning are in {@code CursorSql}). The statement also returns the database's now, from which
 * {@link DatabaseClock} maps the turn onto this process's clock: the wait it answers is measured
 * from the moment the call returns, and the same turn starts at the same instant in every process
 * however long each one's round trip took.
 *
 * <p>One dedicated autocommit connection per cursor, and so per process if the process makes one
 * cursor: never the caller's connection or transaction, because a reservation inside a caller's
 * transaction would hold the cursor row's lock until that transaction commits and stall the whole
 * fleet. Threads take turns on the connection; a reservation holds it for one round trip.
 *
 * <p>Failure handling, so that a fetch thread never hangs on or is stopped by the coordinator:
 *
 * <ul>
 *   <li>every database operation is bounded by {@code operationTimeout} (connect, socket reads and
 *       the server's {@code statement_timeout});
 *   <li>a connection that died between calls (a restart, a terminated backend) is replaced and the
 *       statement retried once in the same call; a second failure, or a timeout, answers {@link
 *       Reservation#unavailable()};
 *   <li>after a failure, reservations answer "unavailable" without touching the network until the
 *       next retry boundary, with one WARN per cooldown carrying a running failure count. Retry
 *       boundaries are the multiples of {@code failureCooldown} on the wall clock, at least a whole
 *       cooldown after the failure: every process of the fleet retries at the same instants, so
 *       after an outage they all return to the shared cursor together, instead of some pacing on
 *       the cursor at the full rate while others still pace locally (which would add up to more
 *       than the ceiling). An outage costs one connection attempt per cooldown per process.
 * </ul>
 */
public final class PostgresCursor implements Cursor, AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(PostgresCursor.class);
  private static final long NO_RETRY = Long.MIN_VALUE;
  static final int REHEARSALS = 5;
  /** Not a valid destination name (those hold no whitespace), so never a real cursor. */
  private static final String REHEARSAL_KEY = " pacer rehearsal ";

  private final PostgresCursorConfig config;
  private final CursorSql sql;
  private final TimeSource time;
  private final DatabaseClock databaseClock = new DatabaseClock();
  private final long timeoutNanos;
  private final int timeoutMillis;
  private final long resetBeyondMicros;

  private final ReentrantLock connectionLock = new ReentrantLock();
  private Connection connection;
  private PreparedStatement reserveStatement;
  private boolean tableEnsured;

  private volatile long latchedUntilNanos;
  private volatile boolean closed;
  /** A background reconnection is in flight: reservations answer "unavailable" meanwhile. */
  private volatile boolean probing;
  private ScheduledExecutorService prober;
  private volatile boolean latched;
  private final AtomicLong failures = new AtomicLong();
  private final AtomicLong connectionAttempts = new AtomicLong();
  private long consecutiveFailures;
  /** The wall-clock boundary (epoch ms) the latch waits for, or NO_RETRY when not latched. */
  private long retryBoundaryMillis = NO_RETRY;

  public PostgresCursor(PostgresCursorConfig config) {
    this.config = config;
    this.sql = config.layout().sql();
    this.time = config.time();
    this.timeoutNanos = config.operationTimeout().toNanos();
    this.timeoutMillis = (int) Math.max(1, Math.min(Integer.MAX_VALUE, config.operationTimeout().toMillis()));
    this.resetBeyondMicros = ceilMicros(config.resetBeyond());
  }

  @Override
  public Reservation reserve(String name, Duration interval, Duration notBefore) {
    return reserveOrRefuse(name, interval, notBefore, null);
  }

  @Override
  public Reservation tryReserve(
      String name, Duration interval, Duration notBefore, Duration maxWait) {
    return reserveOrRefuse(name, interval, notBefore, maxWait);
  }

  @Override
  public void clear(String name) {
    boolean locked = false;
    try {
      locked = connectionLock.tryLock(timeoutNanos * 2, TimeUnit.NANOSECONDS);
      if (!locked) {
        throw new CursorStoreException("cursor connection busy; could not clear " + name, null);
      }
      ensureConnected();
      try (PreparedStatement delete = connection.prepareStatement(sql.clear())) {
        delete.setString(1, sql.key(name));
        delete.executeUpdate();
      }
    } catch (SQLException e) {
      discardConnection();
      throw new CursorStoreException("could not clear cursor " + name + ": " + e.getMessage(), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new CursorStoreException("interrupted while clearing cursor " + name, e);
    } finally {
      if (locked) {
        connectionLock.unlock();
      }
    }
  }

  /**
   * Opens the dedicated connection now, allowing it {@code timeout} instead of the operation
   * timeout. Call it at start-up, where a slow first connection (a cold JVM loading the driver on a
   * busy host) costs nothing, rather than leave it to the first reservation, which would give up
   * after the operation timeout and degrade until the next retry boundary. A failure here is
   * logged and not latched.
   *
   * <p>It then rehearses: runs the reservation statement {@value #REHEARSALS} times on a key of
   * its own, in a transaction it rolls back, so nothing is reserved or kept. The statement is
   * prepared and planned, the code that runs it is loaded, and {@link DatabaseClock} has samples
   * from quick round trips, all before the first real turn. Without it the first reservation of a
   * cold JVM is the slow one (three worker JVMs starting on one core measured 48 to 68 ms against
   * 1 to 5 ms later), and the first turn is placed from that slow trip alone.
   *
   * @return whether the cursor is connected
   */
  public boolean connect(Duration timeout) {
    boolean locked = false;
    try {
      locked = connectionLock.tryLock(timeout.toNanos(), TimeUnit.NANOSECONDS);
      if (!locked) {
        return false;
      }
      ensureConnected(timeout.toNanos());
      rehearse();
      return true;
    } catch (SQLException e) {
      log.warn("Could not connect the PostgreSQL cursor within {}: {} [SQLState {}]", timeout,
          e.getMessage(), e.getSQLState());
      return false;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    } finally {
      if (locked) {
        connectionLock.unlock();
      }
    }
  }

  /** Connection attempts made so far (each connect counts, successful or not). */
  public long connectionAttempts() {
    return connectionAttempts.get();
  }

  /** Failed reservations so far (each counted once, after its retry). */
  public long failureCount() {
    return failures.get();
  }

  /** True while the failure latch makes reservations answer "unavailable" without trying. */
  public boolean isLatched() {
    return latched && (probing || time.nanoTime() - latchedUntilNanos < 0);
  }

  public PostgresCursorConfig config() {
    return config;
  }

  @Override
  public void close() {
    closed = true;
    synchronized (this) {
      if (prober != null) {
        prober.shutdownNow();
      }
    }
    connectionLock.lock();
    try {
      discardConnection();
    } finally {
      connectionLock.unlock();
    }
  }

  private Reservation reserveOrRefuse(
      String name, Duration interval, Duration notBefore, Duration maxWait) {
    if (isLatched()) {
      return Reservation.unavailable();
    }
    boolean locked;
    try {
      // Another thread may be stuck on a hung database; waiting longer than one bound for it
      // would make this thread hang too.
      locked = connectionLock.tryLock(timeoutNanos, TimeUnit.NANOSECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return Reservation.unavailable();
    }
    if (!locked) {
      return Reservation.unavailable();
    }
    try {
      if (isLatched()) {
        return Reservation.unavailable();
      }
      return attempt(sql.key(name), ceilMicros(interval), notBefore.toNanos() / 1000,
          maxWait == null ? null : maxWait.toNanos() / 1000);
    } finally {
      connectionLock.unlock();
    }
  }

  private Reservation attempt(String key, long gapMicros, long notBeforeMicros, Long maxWaitMicros) {
    long started = time.nanoTime();
    boolean reusedConnection = connection != null;
    try {
      return succeeded(execute(key, gapMicros, notBeforeMicros, maxWaitMicros));
    } catch (SQLException first) {
      discardConnection();
      boolean diedBetweenCalls =
          reusedConnection && isConnectionLoss(first) && time.nanoTime() - started < timeoutNanos / 2;
      if (!diedBetweenCalls) {
        return failed(first);
      }
      try {
        return succeeded(execute(key, gapMicros, notBeforeMicros, maxWaitMicros));
      } catch (SQLException second) {
        discardConnection();
        return failed(second);
      }
    }
  }

  private Reservation execute(String key, long gapMicros, long notBeforeMicros, Long maxWaitMicros)
      throws SQLException {
    ensureConnected();
    PreparedStatement statement = reserveStatement;
    statement.setString(1, key);
    statement.setLong(2, gapMicros);
    statement.setLong(3, resetBeyondMicros);
    if (maxWaitMicros == null) {
      statement.setNull(4, Types.BIGINT);
    } else {
      statement.setLong(4, maxWaitMicros);
    }
    statement.setLong(5, Math.max(0, notBeforeMicros));
    long asked = time.nanoTime();
    try (ResultSet row = statement.executeQuery()) {
      long answered = time.nanoTime();
      if (!row.next()) {
        return Reservation.refused();
      }
      long waitMicros = row.getLong(1);
      long priorAheadMicros = row.getLong(2);
      boolean priorReadable = !row.wasNull();
      boolean priorExisted = row.getBoolean(3);
      if (priorExisted && !priorReadable) {
        log.warn("Cursor {} held an unreadable value; overwritten with now", key);
      } else if (priorReadable && priorAheadMicros > resetBeyondMicros) {
        log.warn("Cursor {} was {} s ahead of the database clock (bound {}); reset to now",
            key, priorAheadMicros / 1_000_000, config.resetBeyond());
      }
      long databaseNowMicros = row.getLong(4);
      return Reservation.grantedNanos(databaseClock.waitFromAnswer(asked, answered,
          databaseNowMicros * 1000, Math.max(0, waitMicros) * 1000));
    }
  }

  private Reservation succeeded(Reservation reservation) {
    if (consecutiveFailures > 0) {
      log.info("PostgreSQL cursor available again after {} failed attempt(s)", consecutiveFailures);
      consecutiveFailures = 0;
    }
    latched = false;
    retryBoundaryMillis = NO_RETRY;
    return reservation;
  }

  private Reservation failed(SQLException cause) {
    long total = failures.incrementAndGet();
    consecutiveFailures++;
    long untilRetry = nanosUntilNextRetryBoundary();
    latchedUntilNanos = time.nanoTime() + untilRetry;
    latched = true;
    scheduleProbe(untilRetry);
    log.warn("PostgreSQL cursor unavailable ({} failure(s) so far, {} in a row): {} [SQLState {}];"
            + " pacing locally for the next {}",
        total, consecutiveFailures, cause.getMessage(), cause.getSQLState(),
        config.failureCooldown());
    return Reservation.unavailable();
  }

  /**
   * Reconnects at the retry boundary itself, on a background thread, rather than at whichever
   * reservation comes first after it. Every process of a fleet then tries within milliseconds of
   * the others (as far as their clocks agree), instead of whenever one of its threads next wakes
   * from a local turn (up to a local interval later): if the database came back inside that
   * spread, the processes that tried before it would otherwise return a whole cooldown after the
   * others. It also keeps the reconnection off the fetch threads. Whoever comes first at a
   * boundary, the probe or a reservation, makes the one attempt; the other finds the latch moved.
   */
  private void scheduleProbe(long delayNanos) {
    if (!config.backgroundReconnect() || closed) {
      return;
    }
    synchronized (this) {
      if (prober == null) {
        prober = Executors.newSingleThreadScheduledExecutor(r -> {
          Thread t = new Thread(r, "pacer-cursor-reconnect");
          t.setDaemon(true);
          return t;
        });
      }
      prober.schedule(this::probe, delayNanos, TimeUnit.NANOSECONDS);
    }
  }

  private void probe() {
    if (!latched || time.nanoTime() - latchedUntilNanos < 0) {
      return;
    }
    boolean locked = false;
    try {
      locked = connectionLock.tryLock(timeoutNanos, TimeUnit.NANOSECONDS);
      if (!locked || !latched || isLatched()) {
        return;
      }
      probing = true;
      try {
        ensureConnected();
        succeeded(null);
      } catch (SQLException e) {
        discardConnection();
        failed(e);
      } finally {
        probing = false;
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } finally {
      if (locked) {
        connectionLock.unlock();
      }
    }
  }

  /**
   * Moves the retry to the next boundary of the grid of cooldown multiples on the wall clock: after
   * a first failure, the first boundary at least a cooldown away; after a failed retry, the
   * boundary one cooldown after the one it was scheduled for, even if this retry ran late (all of
   * a process's threads may have been asleep on local turns when its boundary passed). Skipping a
   * boundary would put this process a cooldown out of step with the rest of the fleet.
   */
  private long nanosUntilNextRetryBoundary() {
    long cooldown = config.failureCooldown().toMillis();
    if (cooldown == 0) {
      return 0;
    }
    long now = time.epochMillis();
    long next = retryBoundaryMillis == NO_RETRY
        ? ceilToMultiple(now + cooldown, cooldown)
        : Math.max(retryBoundaryMillis + cooldown, ceilToMultiple(now + 1, cooldown));
    retryBoundaryMillis = next;
    return (next - now) * 1_000_000L;
  }

  private static long ceilToMultiple(long value, long step) {
    return Math.floorDiv(value + step - 1, step) * step;
  }

  private void ensureConnected() throws SQLException {
    ensureConnected(timeoutNanos);
  }

  private void ensureConnected(long connectTimeoutNanos) throws SQLException {
    if (connection != null) {
      return;
    }
    connectionAttempts.incrementAndGet();
    Connection fresh = openConnection(connectTimeoutNanos);
    try {
      fresh.setAutoCommit(true);
      fresh.setNetworkTimeout(Runnable::run, timeoutMillis);
      try (Statement session = fresh.createStatement()) {
        // The generic plan is made once, at the first reservation, when the table may hold a
        // page or two and a sequential scan looks cheapest for the statement's read of the prior
        // value. A hot key's updates then grow the table (HOT pruning loses to concurrent pins),
        // and that scan would read every page on every reservation: measured on one key from 4
        // clients, 27,000/s falling to 8,000/s within 20 s. This session runs only primary-key
        // statements, for which the index is always the right path.
        session.execute("SET statement_timeout = " + timeoutMillis
            + "; SET lock_timeout = " + timeoutMillis
            + "; SET synchronous_commit = " + (config.synchronousCommit() ? "on" : "off")
            + "; SET plan_cache_mode = force_generic_plan"
            + "; SET enable_seqscan = off");
        if (sql.createTable() != null && !tableEnsured) {
          createTable(session);
        }
      }
      PreparedStatement statement = fresh.prepareStatement(sql.reserve());
      statement.unwrap(PGStatement.class).setPrepareThreshold(1);
      connection = fresh;
      reserveStatement = statement;
    } catch (SQLException e) {
      closeQuietly(fresh);
      throw e;
    }
  }

  private void rehearse() throws SQLException {
    connection.setAutoCommit(false);
    try {
      for (int i = 0; i < REHEARSALS; i++) {
        execute(sql.key(REHEARSAL_KEY), 1, 0, null);
      }
    } finally {
      try {
        connection.rollback();
      } finally {
        connection.setAutoCommit(true);
      }
    }
  }

  private void createTable(Statement session) throws SQLException {
    try {
      session.execute(sql.createTable());
    } catch (SQLException e) {
      // Two processes creating the table at once: the loser sees a duplicate, which is success.
      if (!"23505".equals(e.getSQLState()) && !"42P07".equals(e.getSQLState())) {
        throw e;
      }
    }
    tableEnsured = true;
  }

  private Connection openConnection(long connectTimeoutNanos) throws SQLException {
    if (config.dataSource() != null) {
      return config.dataSource().getConnection();
    }
    Properties props = new Properties();
    props.putAll(config.properties());
    String wholeSeconds = Long.toString(
        Math.max(1, TimeUnit.NANOSECONDS.toSeconds(connectTimeoutNanos + 999_999_999L)));
    props.putIfAbsent("connectTimeout", wholeSeconds);
    props.putIfAbsent("loginTimeout", wholeSeconds);
    props.putIfAbsent("socketTimeout", wholeSeconds);
    props.putIfAbsent("tcpKeepAlive", "true");
    props.putIfAbsent("ApplicationName", "pacer");
    Connection c = new org.postgresql.Driver().connect(config.jdbcUrl(), props);
    if (c == null) {
      throw new SQLException("not a PostgreSQL JDBC URL: " + JdbcUrls.redact(config.jdbcUrl()));
    }
    return c;
  }

  private void discardConnection() {
    closeQuietly(connection);
    connection = null;
    reserveStatement = null;
  }

  private static boolean isConnectionLoss(SQLException e) {
    String state = e.getSQLState();
    return state == null || state.startsWith("08") || state.startsWith("57P");
  }

  private static void closeQuietly(Connection c) {
    if (c == null) {
      return;
    }
    try {
      c.close();
    } catch (SQLException | RuntimeException ignored) {
      // The connection is being thrown away because it failed; its close may fail the same way.
    }
  }

  private static long ceilMicros(Duration d) {
    long nanos = d.toNanos();
    return (nanos + 999) / 1000;
  }

  @Override
  public String toString() {
    return "PostgresCursor{" + sql + "}";
  }
}
