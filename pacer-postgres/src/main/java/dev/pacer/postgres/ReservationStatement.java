package dev.pacer.postgres;

import dev.pacer.TimeSource;
import dev.pacer.postgres.internal.ConcurrentCreate;
import dev.pacer.postgres.internal.CursorSql;
import dev.pacer.spi.Cursor;
import dev.pacer.spi.Reservation;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Types;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@link PostgresCursor}'s reservation statement on its connection: one reservation's parameters
 * ({@link Ask}), the statement's execution and its answer placed on this process's clock through
 * {@link DatabaseClock} ({@link Answered}), the statements prepared once per connection, a dropped
 * table created again, and the rehearsal that warms each new connection. Used with the connection's
 * lock held.
 */
final class ReservationStatement {

  private static final Logger log = LoggerFactory.getLogger(PostgresCursor.class);
  static final int REHEARSALS = 5;

  /** Not a valid destination name (those hold no whitespace), so never a real cursor. */
  private static final String REHEARSAL_KEY = " pacer rehearsal ";

  /** A granted answer carries no wait of its own (see {@link Answered}). */
  private static final Reservation GRANTED = Reservation.granted(Duration.ZERO);

  private final PostgresCursorConfig config;
  private final CursorSql sql;
  private final TimeSource time;
  private final int timeoutMillis;
  private final long resetBeyondMicros;
  private final DatabaseClock databaseClock = new DatabaseClock();

  /** The reservation statements, plain and under the fleet's backoff, on a connection. */
  private PreparedStatement reserveStatement;

  /** The plain reservation on a row known not to be locked out ({@link CursorSql#reserveOnRow}). */
  private PreparedStatement onRowStatement;

  /**
   * The keys whose rows this cursor's last full statement found and left checked and unlocked, the
   * most recently reserved {@value #ROWS_KNOWN} of them: only these try the row alone first, so
   * that a destination's first reservation, and one after a lockout, is still one statement in one
   * round trip. A key the row-alone statement misses (a crash emptied the table, a lockout came) is
   * forgotten, and that reservation makes the full statement after it.
   */
  private final Map<String, Boolean> rowsKnown =
      new LinkedHashMap<>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Boolean> eldest) {
          return size() > ROWS_KNOWN;
        }
      };

  private static final int ROWS_KNOWN = 1024;

  private PreparedStatement fleetReserveStatement;
  private Connection statementConnection;

  ReservationStatement(
      PostgresCursorConfig config, CursorSql sql, int timeoutMillis, long resetBeyondMicros) {
    this.config = config;
    this.sql = sql;
    this.time = config.time();
    this.timeoutMillis = timeoutMillis;
    this.resetBeyondMicros = resetBeyondMicros;
  }

  /** Forgets the prepared statements: their connection is gone. */
  void forget() {
    reserveStatement = null;
    onRowStatement = null;
    fleetReserveStatement = null;
    statementConnection = null;
  }

  /**
   * The statement's answer, a granted turn's start kept as an instant on this process's clock
   * ({@code turnAt}) until the reservation returns, so that its wait counts from the return, as
   * {@link Cursor} has it: a thread held up between the answer and the return (by the scheduler, on
   * a busy host, for tens of milliseconds) would otherwise start its turn that much late. For a
   * granted answer {@code reservation} carries only the fleet's backoff; its wait is {@code
   * turnAt}'s.
   */
  record Answered(Reservation reservation, long turnAt, Duration handOverLeft) {

    static Answered notGranted(Reservation reservation) {
      return new Answered(reservation, 0, Duration.ZERO);
    }

    /** The same answer for a turn {@code nanos} after this one. */
    Answered later(long nanos) {
      return new Answered(reservation, turnAt + nanos, handOverLeft);
    }

    Answered handingOver(Duration left) {
      return new Answered(reservation, turnAt, left);
    }

    Reservation waitingFrom(long now) {
      if (!reservation.isGranted()) {
        return reservation;
      }
      Reservation granted = Reservation.grantedNanos(turnAt - now);
      OptionalInt backoff = reservation.fleetBackoff();
      Reservation turn =
          backoff.isPresent() ? granted.withFleetBackoff(backoff.getAsInt()) : granted;
      return handOverLeft.isZero() ? turn : turn.duringHandOver(handOverLeft);
    }
  }

  /** One reservation's parameters (see {@link CursorSql}). */
  record Ask(
      String key,
      long gapMicros,
      long notBeforeMicros,
      Long maxWaitMicros,
      boolean fleet,
      int cleanAnswers) {}

  /** A dropped table (SQLState 42P01) is created again and the reservation made once more. */
  Answered reserveCreatingTable(Connection c, ServerSession server, Ask ask) throws SQLException {
    try {
      return execute(c, server, ask);
    } catch (SQLException e) {
      if (!"42P01".equals(e.getSQLState()) || sql.createTable() == null) {
        throw e;
      }
      log.warn("Cursor table missing ({}); creating it again", e.getMessage());
      try (Statement session = c.createStatement()) {
        createTable(session);
      }
      return execute(c, server, ask);
    }
  }

  private Answered execute(Connection c, ServerSession server, Ask ask) throws SQLException {
    boolean plain = ask.maxWaitMicros() == null && !ask.fleet() && sql.reserveOnRow() != null;
    if (plain && rowsKnown.get(ask.key()) != null) {
      Optional<Answered> onRow = executeOnRow(c, server, ask);
      if (onRow.isPresent()) {
        return onRow.get();
      }
      rowsKnown.remove(ask.key());
    }
    PreparedStatement statement = reserveStatement(c, server, ask.fleet());
    bind(statement, ask);
    if (ask.fleet()) {
      statement.setInt(6, ask.cleanAnswers());
    }
    long asked = time.nanoTime();
    try (ResultSet row = statement.executeQuery()) {
      long answered = time.nanoTime();
      if (!row.next()) {
        return Answered.notGranted(Reservation.refused());
      }
      long waitMicros = row.getLong(1);
      if (row.wasNull()) {
        String lockout = row.getString(5);
        return Answered.notGranted(
            lockout == null ? Reservation.refused() : Reservation.lockedOut(lockout));
      }
      long priorAheadMicros = row.getLong(2);
      boolean priorReadable = !row.wasNull();
      boolean priorExisted = row.getBoolean(3);
      long databaseNowMicros = row.getLong(4);
      int fleetBackoff = row.getInt(6);
      boolean backedOff = !row.wasNull();
      logPrior(ask, priorExisted, priorReadable, priorAheadMicros);
      if (plain) {
        rowsKnown.put(ask.key(), Boolean.TRUE);
      }
      Reservation turn = Reservation.granted(Duration.ZERO);
      return new Answered(
          backedOff ? turn.withFleetBackoff(fleetBackoff) : turn,
          turnAt(asked, answered, databaseNowMicros, waitMicros),
          Duration.ZERO);
    }
  }

  /**
   * The plain reservation on the row alone; empty when it updated nothing (see {@link
   * CursorSql#reserveOnRow}), and the full statement must answer. It never resets a cursor, so
   * there is nothing to log.
   */
  private Optional<Answered> executeOnRow(Connection c, ServerSession server, Ask ask)
      throws SQLException {
    if (statementConnection != c) {
      forgetStatementsOf(c);
    }
    if (onRowStatement == null) {
      onRowStatement = prepare(c, server, sql.reserveOnRow());
    }
    bind(onRowStatement, ask);
    long asked = time.nanoTime();
    try (ResultSet row = onRowStatement.executeQuery()) {
      long answered = time.nanoTime();
      if (!row.next()) {
        return Optional.empty();
      }
      return Optional.of(
          new Answered(
              GRANTED, turnAt(asked, answered, row.getLong(2), row.getLong(1)), Duration.ZERO));
    }
  }

  private void bind(PreparedStatement statement, Ask ask) throws SQLException {
    statement.setString(1, ask.key());
    statement.setLong(2, ask.gapMicros());
    statement.setLong(3, resetBeyondMicros);
    if (ask.maxWaitMicros() == null) {
      statement.setNull(4, Types.BIGINT);
    } else {
      statement.setLong(4, ask.maxWaitMicros());
    }
    statement.setLong(5, Math.max(0, ask.notBeforeMicros()));
  }

  /** A granted turn's start on this process's clock (see {@link Answered}). */
  private long turnAt(long asked, long answered, long databaseNowMicros, long waitMicros) {
    return answered
        + databaseClock.waitFromAnswer(
            asked, answered, databaseNowMicros * 1000, Math.max(0, waitMicros) * 1000);
  }

  /** A reset or repaired cursor is logged with the value it held. */
  private void logPrior(
      Ask ask, boolean priorExisted, boolean priorReadable, long priorAheadMicros) {
    if (priorExisted && !priorReadable) {
      log.warn("Cursor {} held an unreadable value; overwritten with now", ask.key());
    } else if (priorReadable && priorAheadMicros > resetBeyondMicros) {
      log.warn(
          "Cursor {} was {} s ahead of the database clock (bound {}); reset to now",
          ask.key(),
          priorAheadMicros / 1_000_000,
          config.resetBeyond());
    }
  }

  private void forgetStatementsOf(Connection c) {
    reserveStatement = null;
    fleetReserveStatement = null;
    onRowStatement = null;
    statementConnection = c;
  }

  /** The statements prepared once per connection, planned for the primary key (see openSession). */
  private PreparedStatement reserveStatement(Connection c, ServerSession server, boolean fleet)
      throws SQLException {
    if (statementConnection != c) {
      forgetStatementsOf(c);
    }
    if (fleet) {
      if (fleetReserveStatement == null) {
        fleetReserveStatement = prepare(c, server, sql.fleetBackoff().reserve());
      }
      return fleetReserveStatement;
    }
    if (reserveStatement == null) {
      reserveStatement = prepare(c, server, sql.reserve());
    }
    return reserveStatement;
  }

  private PreparedStatement prepare(Connection c, ServerSession server, String statementSql)
      throws SQLException {
    return server.prepareForReuse(c, statementSql, timeoutMillis);
  }

  /**
   * Runs the reservation statement {@value #REHEARSALS} times on a key of its own, in a transaction
   * it rolls back, so nothing is reserved or kept: on every connection opened, by {@link
   * PostgresCursor#connect} or by the reservation that finds none. The statement is prepared and
   * planned, the code that runs it is loaded, and {@link DatabaseClock} has samples from quick
   * round trips, all before the turn that follows. Without it the first reservation on a connection
   * is the slow one, many times a warm round trip in a fresh JVM, and the turn is placed on the
   * database's clock through that slow trip alone: the first sample's half round trip is that much
   * less certain, and the better samples after it move the clock's offset by enough to bring a
   * first request within less than an interval of the next at a few hundred per second.
   */
  void rehearse(Connection c, ServerSession server) throws SQLException {
    c.setAutoCommit(false);
    try {
      for (int i = 0; i < REHEARSALS; i++) {
        execute(c, server, new Ask(sql.key(REHEARSAL_KEY), 1, 0, null, false, 0));
      }
    } finally {
      try {
        c.rollback();
      } finally {
        c.setAutoCommit(true);
      }
    }
  }

  void createTable(Statement session) throws SQLException {
    ConcurrentCreate.execute(session, sql.createTable());
  }
}
