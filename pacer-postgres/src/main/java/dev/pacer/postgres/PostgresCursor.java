package dev.pacer.postgres;

import dev.pacer.Destination;
import dev.pacer.TimeSource;
import dev.pacer.postgres.ReservationStatement.Answered;
import dev.pacer.postgres.ReservationStatement.Ask;
import dev.pacer.postgres.internal.ConcurrentCreate;
import dev.pacer.postgres.internal.CursorSql;
import dev.pacer.spi.Cursor;
import dev.pacer.spi.CursorStoreException;
import dev.pacer.spi.Reservation;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
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
 * fleet. Threads take turns on the connection; a reservation holds it for one round trip. Nothing
 * else of the process runs on it, however rare: a turn is computed when its statement runs, so a
 * reservation queued behind someone else's slower statement gets a later turn than it asked for,
 * and its request leaves late. The {@link HoldListener} keeps a second connection, started at the
 * first {@link #listen}: it waits on it for notifications, which would hold reservations back for
 * each wait, and a {@code LISTEN} belongs to a server session, which behind a transaction pooler
 * this connection is not.
 *
 * <p><b>Reservations waiting together share a round trip.</b> Plain reservations ({@link #reserve}
 * and {@link #tryReserve}) that queue for the connection are made together by whichever of them
 * takes it next: one statement per destination and interval reserves {@code k} consecutive turns
 * ({@code next = max(now, next) + k × interval}) and each of the {@code k} callers gets one of
 * them, in the order they asked, spaced by the interval: the same turns {@code k} statements made
 * at that instant would have granted, for one round trip instead of {@code k}, so that many threads
 * of one process wait for the connection less (docs/benchmarks.md). A combined reservation that is
 * refused (a {@code maxWait} the later turns would pass) is made again one caller at a time, so
 * that no caller is refused a turn it would have been granted alone. Reservations under the fleet's
 * backoff carry their own counts of clean answers and are made one at a time.
 *
 * <p><b>The cursor counts the fleet.</b> At most once every 2 s, before a reservation and on its
 * connection, Pacer's table layout stamps the destinations this cursor reserved turns of in a table
 * beside the cursors and reads back how many processes did so lately (the census, {@code
 * FetcherCensus}): {@link #fetchingProcesses}, by which a limiter divides its ceiling when this
 * database is lost, if more than its destination's {@code maxFetchingProcesses}. One round trip per
 * period per process; the reservation's statement is unchanged.
 *
 * <p>Failure handling, so that a fetch thread never hangs on or is stopped by the coordinator, is
 * the database's {@link OutagePolicy} (one per database per process, shared with whatever else the
 * process keeps there; the cursor makes its own if the config names none):
 *
 * <ul>
 *   <li>every database operation is bounded by {@code operationTimeout} (connect, socket reads and
 *       the server's {@code statement_timeout} and {@code lock_timeout}; behind a transaction
 *       pooler, a cancel the driver sends, see {@link ServerSession});
 *   <li>a connection that died between calls is replaced and the statement retried once in the same
 *       call ({@link KeptConnection#call}); a second failure, or a timeout, answers {@link
 *       Reservation#unavailable()} and tells the policy, which then holds the database down until a
 *       retry boundary: reservations answer "unavailable" without touching the network. Each of the
 *       cursor's statements may be made twice so, when its first answer was lost after it
 *       committed: a reservation made twice spends the turns of both and hands out the second's
 *       (the destination sees fewer requests, never more); a pause or a lockout recorded twice is
 *       the same hold; a rate-pressure answer recorded twice backs the fleet off twice (slower,
 *       never faster);
 *   <li>during a hand-over (a return, until one cooldown after the next boundary) granted turns are
 *       marked {@link Reservation#isHandOver()}, so that a limiter also paces them locally.
 * </ul>
 *
 * <p><b>Busy is not unavailable.</b> A reservation waits for the connection behind other threads
 * without a bound of its own: each holder is bounded by {@code operationTimeout}, and after a
 * failure the holders behind it find the policy down and answer at once, so the wait is bounded by
 * the queue's progress, never by a hung database. A bounded wait would count a busy process (many
 * threads, one connection) as a database outage and pace it locally on top of its shared turns.
 *
 * <p><b>What goes back to a pool goes back clean.</b> With {@link
 * PostgresCursorConfig#forDataSource} the cursor borrows one connection and sets session parameters
 * on it ({@code synchronous_commit}, timeouts, planner settings); whenever it gives the connection
 * back (closed, or discarded after a failed statement), it runs {@code RESET ALL} first, or aborts
 * the connection if that fails, so no other borrower inherits them.
 *
 * <p><b>Behind a transaction pooler</b> (found at each connect, {@link ServerSession}), where any
 * transaction may run on a server connection other clients use next, the cursor sets nothing on the
 * session and names no statement: each statement is parsed and planned where it runs, and is still
 * one round trip. Its listener, which no notification can reach there, polls the holds instead
 * ({@link HoldListener}).
 *
 * <p><b>An interrupted caller costs only itself.</b> A reservation already in its round trip is
 * answered, and the caller's interrupt is kept for its next wait (a limiter's sleep for the turn),
 * on a virtual thread as on a platform thread: the round trip of a virtual thread runs on a
 * platform thread, since an interrupt would close a virtual thread's socket, the connection every
 * caller shares, and hold the database down for all of them ({@link KeptConnection}).
 *
 * <p>A dropped cursor table is created again by the reservation that finds it missing, and a closed
 * cursor stays closed: it answers "unavailable" and never reconnects.
 */
public final class PostgresCursor implements Cursor, AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(PostgresCursor.class);

  private final PostgresCursorConfig config;
  private final CursorSql sql;
  private final TimeSource time;
  private final long timeoutNanos;
  private final int timeoutMillis;
  private final OutagePolicy policy;

  /** The scheduler of a policy this cursor made for itself, closed with it. */
  private final OutagePolicy.DaemonScheduler ownScheduler;

  /** The connection's lock; plain reservations waiting for it are made together. */
  private final StatementLane<Ask, Answered> lane =
      new StatementLane<>(
          (a, b) -> a.key().equals(b.key()) && a.gapMicros() == b.gapMicros(),
          this::makeTogether,
          this::notMade);

  /** Round trips of reservations made, combined or not: for tests of the combining. */
  private final AtomicLong reservationStatements = new AtomicLong();

  private final KeptConnection session;

  /** The processes taking turns of each destination; null where the layout keeps no census. */
  private final FetcherCensus census;

  /** The pauses and lockouts, recorded, read and heard. */
  private final CursorHolds holds;

  /** The reservation statement, prepared on the connection. */
  private final ReservationStatement statement;

  /** What the server behind the session keeps; set with each connection opened. */
  private ServerSession server = ServerSession.OWN;

  private long openTimeoutNanos;

  private volatile boolean closed;
  private final AtomicLong failures = new AtomicLong();
  private final AtomicLong connectionAttempts = new AtomicLong();

  /**
   * A cursor as {@code config} says; it connects at its first reservation or at {@link
   * #connect(Duration)}.
   *
   * @param config where and how to reach PostgreSQL
   */
  public PostgresCursor(PostgresCursorConfig config) {
    this.config = config;
    this.sql = config.layout().sql();
    this.time = config.time();
    this.timeoutNanos = config.operationTimeout().toNanos();
    this.timeoutMillis =
        (int) Math.max(1, Math.min(Integer.MAX_VALUE, config.operationTimeout().toMillis()));
    this.statement =
        new ReservationStatement(config, sql, timeoutMillis, ceilMicros(config.resetBeyond()));
    this.openTimeoutNanos = timeoutNanos;
    if (config.outagePolicy().isPresent()) {
      this.ownScheduler = null;
      this.policy = config.outagePolicy().get();
    } else {
      this.ownScheduler =
          config.backgroundReconnect()
              ? OutagePolicy.Scheduler.daemonThread("pacer-cursor-reconnect")
              : null;
      this.policy =
          new OutagePolicy(
              "cursor " + sql,
              config.failureCooldown(),
              time,
              ownScheduler != null ? ownScheduler : OutagePolicy.Scheduler.none(),
              this::reconnect);
    }
    // Every failure of the reservation statement means the fleet cannot be coordinated through
    // this database: a lost connection, a timeout, a row lock held by a stuck transaction.
    this.session =
        new KeptConnection(
            policy,
            this::openSession,
            e -> true,
            config.dataSource() != null,
            config.operationTimeout().dividedBy(2));
    this.census =
        sql.census() == null
            ? null
            : new FetcherCensus(
                sql.census().statement(),
                time,
                FetcherCensus.PERIOD,
                FetcherCensus.WINDOW,
                c -> {
                  try (Statement session = c.createStatement()) {
                    ConcurrentCreate.execute(session, sql.census().createTable());
                  }
                });
    this.holds = new CursorHolds(sql, config, policy, timeoutMillis, this::onSession, () -> server);
  }

  @Override
  public Reservation reserve(String name, Duration interval, Duration notBefore) {
    return reserveWithOthers(name, interval, notBefore, null);
  }

  @Override
  public Reservation tryReserve(
      String name, Duration interval, Duration notBefore, Duration maxWait) {
    return reserveWithOthers(name, interval, notBefore, maxWait);
  }

  @Override
  public void clear(String name) {
    try {
      ConnectionGuard.run(
          laneWithin(timeoutNanos * 2),
          () -> closed,
          () ->
              session.call(
                  c -> {
                    try (PreparedStatement delete = server.prepare(c, sql.clear(), timeoutMillis)) {
                      delete.setString(1, sql.key(name));
                      return delete.executeUpdate();
                    }
                  }),
          why -> {
            throw new CursorStoreException(
                why == ConnectionGuard.Refusal.BUSY
                    ? "cursor connection busy; could not clear " + name
                    : "cursor closed; could not clear " + name,
                null);
          });
    } catch (SQLException e) {
      throw new CursorStoreException("could not clear cursor " + name + ": " + e.getMessage(), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new CursorStoreException("interrupted while clearing cursor " + name, e);
    }
  }

  /** The connection's lock, as {@link ConnectionGuard} takes it: free within {@code nanos}. */
  private ConnectionGuard.Lock laneWithin(long nanos) {
    return new ConnectionGuard.Lock() {
      @Override
      public boolean take() throws InterruptedException {
        return lane.tryHold(nanos, TimeUnit.NANOSECONDS);
      }

      @Override
      public void release() {
        lane.release();
      }
    };
  }

  /**
   * Pushes the destination's cursor to at least now + {@code delay} on the database's clock, in one
   * statement that also records the pause and announces it to every process listening ({@link
   * #listen}; the key/value layout's pause is the cursor alone). A delay longer than {@link
   * Destination#LONGEST_RETRY_AFTER} is cut to it, the longest pause a reservation believes.
   */
  @Override
  public boolean pause(String name, Duration delay) {
    return holds.pause(name, delay);
  }

  /**
   * Records the lockout and announces it to every process listening, in one statement. The
   * key/value layout has nowhere to keep it, and so announces nothing (a notification is only ever
   * a wake-up to read the record): each process meets the lockout status itself.
   */
  @Override
  public boolean lockOut(String name, String reason) {
    return holds.lockOut(name, reason);
  }

  @Override
  public void clearLockout(String name) {
    holds.clearLockout(name);
  }

  /**
   * Starts, at the first call, this cursor's listener: a connection of its own that waits for the
   * pauses and lockouts any process announces, and hands each to the listeners of its destination
   * within milliseconds (where no notification reaches it, within about {@link
   * PostgresCursorConfig#holdPollInterval}). See {@link HoldListener}. The key/value layout
   * announces nothing, and starts none.
   */
  @Override
  public void listen(String name, Cursor.Listener listener) {
    holds.listen(name, listener);
  }

  /** Stops handing {@code listener} the pauses and lockouts of {@code name} ({@link #listen}). */
  @Override
  public void unlisten(String name, Cursor.Listener listener) {
    holds.unlisten(name, listener);
  }

  /**
   * The pause and lockout recorded for {@code name} now: for an operator's tools, which must not
   * start a run against a locked-out destination. (The key/value layout records neither apart from
   * the cursor itself, and answers {@link DestinationHolds#NONE}.)
   *
   * @param name the destination's name
   * @return the pause and the lockout in force
   * @throws CursorStoreException if PostgreSQL cannot be asked
   */
  public DestinationHolds holdsInForce(String name) {
    return holds.inForce(name);
  }

  /** Runs {@code work} on the cursor's connection; false if it failed or the cursor is closed. */
  private boolean onSession(String what, KeptConnection.Work<Boolean> work) {
    if (closed || policy.refusesNow()) {
      return false;
    }
    try {
      return ConnectionGuard.run(
          laneWithin(timeoutNanos * 2), () -> closed, () -> session.call(work), why -> false);
    } catch (SQLException e) {
      log.warn(
          "Could not {} in PostgreSQL: {} [SQLState {}]", what, e.getMessage(), e.getSQLState());
      return false;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  /**
   * Opens the dedicated connection now, allowing it {@code timeout} instead of the operation
   * timeout. Call it at start-up, where a slow first connection (a cold JVM loading the driver on a
   * busy host) costs nothing, rather than leave it to the first reservation, which would give up
   * after the operation timeout and degrade until the next retry boundary. A failure to connect
   * here is logged and not counted as an outage.
   *
   * <p>Like every opening of the connection, this one rehearses the reservation statement, so that
   * the first turn is placed on the database's clock through quick round trips, not through the
   * slow first one; here before anyone waits for a turn.
   *
   * @param timeout how long the first connection may take
   * @return whether the cursor is connected
   */
  public boolean connect(Duration timeout) {
    try {
      return ConnectionGuard.run(
          laneWithin(timeout.toNanos()),
          () -> closed,
          () -> {
            openTimeoutNanos = timeout.toNanos();
            try {
              session.open();
            } finally {
              openTimeoutNanos = timeoutNanos;
            }
            return true;
          },
          why -> false);
    } catch (SQLException e) {
      log.warn(
          "Could not connect the PostgreSQL cursor within {}: {} [SQLState {}]",
          timeout,
          e.getMessage(),
          e.getSQLState());
      return false;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  /**
   * Connection attempts made so far (each connect counts, successful or not).
   *
   * @return the number of connection attempts
   */
  public long connectionAttempts() {
    return connectionAttempts.get();
  }

  /**
   * Failed reservations so far (each counted once, after its retry).
   *
   * @return the number of failed reservations
   */
  public long failureCount() {
    return failures.get();
  }

  /**
   * True while the outage policy holds the database down: reservations answer "unavailable".
   *
   * @return whether the database is held down
   */
  @Override
  public boolean isLatched() {
    return policy.isDown();
  }

  /**
   * The outage policy this cursor answers to.
   *
   * @return the policy
   */
  public OutagePolicy outagePolicy() {
    return policy;
  }

  /**
   * The configuration this cursor was built with.
   *
   * @return the configuration
   */
  public PostgresCursorConfig config() {
    return config;
  }

  /**
   * Gives the connection back (reset, if borrowed from a pool); later reservations answer
   * unavailable.
   */
  @Override
  public void close() {
    closed = true;
    holds.close();
    if (ownScheduler != null) {
      ownScheduler.close();
    }
    lane.hold();
    try {
      session.close();
      statement.forget();
    } finally {
      lane.release();
    }
  }

  /** Pacer's own table keeps the fleet's backoff beside each cursor; a key/value table cannot. */
  @Override
  public boolean keepsFleetBackoff() {
    return sql.fleetBackoff() != null;
  }

  @Override
  public Reservation reserveUnderFleetBackoff(
      String name, Duration interval, Duration notBefore, Duration maxWait, int cleanAnswers) {
    if (!keepsFleetBackoff()) {
      throw new UnsupportedOperationException(this + " keeps no fleet backoff");
    }
    return reserveAlone(name, interval, notBefore, maxWait, cleanAnswers);
  }

  @Override
  public OptionalInt throttled(String name) {
    if (!keepsFleetBackoff()) {
      return OptionalInt.empty();
    }
    String throttled = sql.fleetBackoff().throttled();
    int[] multiplier = {0};
    boolean recorded =
        onSession(
            "record a rate answer for " + name,
            c -> {
              try (PreparedStatement s = server.prepare(c, throttled, timeoutMillis)) {
                s.setString(1, sql.key(name));
                try (ResultSet row = s.executeQuery()) {
                  row.next();
                  multiplier[0] = row.getInt(1);
                }
                return true;
              }
            });
    return recorded ? OptionalInt.of(multiplier[0]) : OptionalInt.empty();
  }

  /** A reservation under the fleet's backoff: made on its own, as it carries its own counts. */
  private Reservation reserveAlone(
      String name, Duration interval, Duration notBefore, Duration maxWait, int cleanAnswers) {
    if (closed || policy.refusesNow()) {
      return Reservation.unavailable();
    }
    try {
      lane.holdInterruptibly();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return Reservation.unavailable();
    }
    Answered answered;
    try {
      answered =
          makeOne(
              new Ask(
                  sql.key(name),
                  ceilMicros(interval),
                  notBefore.toNanos() / 1000,
                  maxWait == null ? null : maxWait.toNanos() / 1000,
                  true,
                  cleanAnswers));
    } finally {
      lane.release();
    }
    return answered.waitingFrom(time.nanoTime());
  }

  /**
   * A plain reservation: queued, then made by whichever waiting caller takes the connection first,
   * together with every other reservation waiting then (see the class comment).
   */
  private Reservation reserveWithOthers(
      String name, Duration interval, Duration notBefore, Duration maxWait) {
    if (closed || policy.refusesNow()) {
      return Reservation.unavailable();
    }
    return lane.call(
            new Ask(
                sql.key(name),
                ceilMicros(interval),
                notBefore.toNanos() / 1000,
                maxWait == null ? null : maxWait.toNanos() / 1000,
                false,
                0))
        .map(answered -> answered.waitingFrom(time.nanoTime()))
        .orElse(Reservation.unavailable());
  }

  /** A reservation whose statement failed unexpectedly (not a database error): unavailable. */
  private Answered notMade(RuntimeException e) {
    failures.incrementAndGet();
    log.warn("PostgreSQL cursor reservation not made", e);
    return Answered.notGranted(Reservation.unavailable());
  }

  /**
   * Makes the turns of {@code together} (one destination, one interval), one answer for each, in
   * their order.
   */
  private List<Answered> makeTogether(List<Ask> together) {
    int k = together.size();
    long gap = together.get(0).gapMicros();
    long notBefore = 0;
    Long maxWait = null;
    for (int j = 0; j < k; j++) {
      Ask ask = together.get(j);
      notBefore = Math.max(notBefore, ask.notBeforeMicros());
      if (ask.maxWaitMicros() != null) {
        long left = ask.maxWaitMicros() - j * gap;
        maxWait = maxWait == null ? left : Math.min(maxWait, left);
      }
    }
    if (k > 1 && maxWait != null && maxWait < 0) {
      return oneByOne(together);
    }
    Answered answered =
        makeOne(new Ask(together.get(0).key(), gap * k, notBefore, maxWait, false, 0));
    if (k > 1 && answered.reservation().isRefused()) {
      return oneByOne(together);
    }
    List<Answered> answers = new ArrayList<>(k);
    for (int j = 0; j < k; j++) {
      answers.add(answered.reservation().isGranted() ? answered.later(j * gap * 1000) : answered);
    }
    return answers;
  }

  private List<Answered> oneByOne(List<Ask> asks) {
    List<Answered> answers = new ArrayList<>(asks.size());
    asks.forEach(ask -> answers.add(makeOne(ask)));
    return answers;
  }

  /**
   * One reservation statement, with the connection held; a failure answers unavailable. A turn
   * granted while the outage policy hands over carries what is left of the hand-over.
   */
  private Answered makeOne(Ask ask) {
    if (closed || policy.refusesNow()) {
      return Answered.notGranted(Reservation.unavailable());
    }
    reservationStatements.incrementAndGet();
    if (census != null) {
      census.note(ask.key());
    }
    try {
      Answered answered =
          session.call(
              c -> {
                if (census != null) {
                  census.takeIfDue(c);
                }
                return statement.reserveCreatingTable(c, server, ask);
              });
      return answered.reservation().isGranted()
          ? answered.handingOver(policy.handOverLeft())
          : answered;
    } catch (SQLException e) {
      failures.incrementAndGet();
      log.debug(
          "PostgreSQL cursor reservation failed: {} [SQLState {}]",
          e.getMessage(),
          e.getSQLState());
      return Answered.notGranted(Reservation.unavailable());
    }
  }

  /**
   * Reservation statements this cursor made so far, each one round trip, however many turns it
   * reserved (combined callers, a lease): against the turns taken, what a permit costs the
   * database.
   *
   * @return the reservation statements made
   */
  public long reservationStatements() {
    return reservationStatements.get();
  }

  /** Censuses taken so far (see {@link FetcherCensus}), with the connection held. */
  long censuses() {
    if (census == null) {
      return 0;
    }
    lane.hold();
    try {
      return census.censuses();
    } finally {
      lane.release();
    }
  }

  /**
   * The processes that took turns of {@code name} through Pacer's table within the last 10 s, as
   * the last census counted them (see the class comment); the key/value layout counts no one.
   */
  @Override
  public OptionalInt fetchingProcesses(String name) {
    return census == null ? OptionalInt.empty() : census.processes(sql.key(name));
  }

  /**
   * The probe of a policy this cursor made for itself: reconnects at the retry boundary on the
   * policy's background thread rather than at whichever reservation comes first after it, so that
   * every process of a fleet tries within milliseconds of the others, and the reconnection stays
   * off the fetch threads. A closed cursor's probe does nothing.
   */
  private void reconnect() throws SQLException {
    lane.hold();
    try {
      if (!closed) {
        session.open();
      }
    } finally {
      lane.release();
    }
  }

  private Connection openSession() throws SQLException {
    connectionAttempts.incrementAndGet();
    Connection fresh = openConnection(openTimeoutNanos);
    try {
      fresh.setAutoCommit(true);
      fresh.setNetworkTimeout(Runnable::run, timeoutMillis);
      server = ServerSession.probe(fresh);
      try (Statement session = fresh.createStatement()) {
        // The generic plan is made once, at the first reservation, when the table may hold a
        // page or two and a sequential scan looks cheapest for the statement's read of the prior
        // value. A hot key's updates then grow the table (HOT pruning loses to concurrent pins),
        // and that scan would read every page on every reservation, the rate falling by a multiple
        // within seconds on one hot key. This session runs only primary-key statements, for which
        // the index is always the right path. Behind a pooler nothing is set: each statement is
        // planned where it runs, on the table as it is then, and carries its own deadline.
        server.set(session, sessionSettings());
        // On every connection, not only the first: the rehearsal below needs the table, and a
        // database found again after an outage may have come back without it.
        if (sql.createTable() != null) {
          statement.createTable(session);
        }
      }
      if (census != null) {
        census.makeTable(fresh);
      }
      statement.rehearse(fresh, server);
      return fresh;
    } catch (SQLException e) {
      if (config.dataSource() != null) {
        // Borrowed: whatever was set must not go back to the pool.
        try {
          fresh.abort(Runnable::run);
        } catch (SQLException | RuntimeException ignored) {
          // Closing it below is the last word.
        }
      }
      closeQuietly(fresh);
      throw e;
    }
  }

  private Map<String, String> sessionSettings() {
    Map<String, String> settings = new LinkedHashMap<>();
    settings.put("statement_timeout", Integer.toString(timeoutMillis));
    settings.put("lock_timeout", Integer.toString(timeoutMillis));
    settings.put("synchronous_commit", config.synchronousCommit() ? "on" : "off");
    settings.put("plan_cache_mode", "force_generic_plan");
    settings.put("enable_seqscan", "off");
    return settings;
  }

  private Connection openConnection(long connectTimeoutNanos) throws SQLException {
    return config.openConnection(connectTimeoutNanos, PostgresCursorConfig.CURSOR_CONNECTION);
  }

  private static void closeQuietly(Connection c) {
    try {
      c.close();
    } catch (SQLException | RuntimeException ignored) {
      // The connection is being thrown away because it failed; its close may fail the same way.
    }
  }

  static long ceilMicros(Duration d) {
    long nanos = d.toNanos();
    return (nanos + 999) / 1000;
  }

  @Override
  public String toString() {
    return "PostgresCursor{" + sql + "}";
  }
}
