package dev.pacer.postgres;

import dev.pacer.postgres.internal.CursorSql;
import dev.pacer.spi.Cursor;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.temporal.ChronoUnit;
import java.util.EnumSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * How every process learns within milliseconds of a pause ({@code Retry-After}) or a lockout that
 * another process heard from the destination: a connection of its own, {@code LISTEN}ing on the
 * cursor table's channel, on a daemon thread.
 *
 * <p>The statements that record a pause or a lockout announce it in the same statement ({@code
 * pg_notify}), so PostgreSQL delivers it when it commits, to every listening session at once.
 * Checking the row before each send would cost every request a round trip, and still miss a turn
 * whose thread was asleep when the pause began; a notification costs nothing until one is sent, and
 * the limiter then checks each waking turn against the pause in memory.
 *
 * <p>A notification is a wake-up, never a fact. Any role that can connect to the database can
 * {@code NOTIFY} on any channel, and the channel's name is predictable, so what a payload says is
 * not believed: only the destination it names is taken from it, and only if this process serves
 * that destination; the listener then reads the destination's row and lockout, which only roles
 * allowed to write Pacer's tables can change, and hands on what they say. A flood of forged
 * notifications costs one short read per destination per wait on this connection, and the limiter
 * caps every pause it hears at the destination's {@code maxRetryAfter}. A destination whose row
 * cannot be read (a value a writer put there that the read cannot convert) is passed over until the
 * next reconnection rather than stall the reads of the others.
 *
 * <p>The listener follows the database's {@link OutagePolicy} but never decides it: while the
 * policy holds the database down it does not connect, and it comes back after the policy's next
 * boundary; its own failures (a slow first connection on a busy host, a dropped session) are not
 * reported as an outage, because the reservations, which the fleet's pacing depends on, already do
 * that. Whenever it (re)connects it reads the holds in force for every destination it serves, so
 * that nothing announced while it was away is missed; a destination added later is read at the
 * listener's next wake-up, and one whose last listener was removed is forgotten, so that the
 * listener's memory follows the destinations this process paces now. A connection that has heard
 * nothing for a while is asked a {@code SELECT 1} within the probe's timeout: a half-open
 * connection delivers nothing and fails nothing, and would otherwise leave the listener deaf until
 * TCP's keepalive gives up. When the listener lets its connection go it stops listening first,
 * since a pool would lend the connection, still listening, to someone else. The cursor's
 * reservation statement refuses a locked-out destination on its own, so a lockout never depends on
 * this thread; a pause moves the cursor itself, so only turns already granted depend on it.
 *
 * <p><b>Where no notification arrives, it polls.</b> Behind a pooler ({@link ServerSession#POOLED})
 * a {@code LISTEN} lands on whichever server connection runs it, which then serves other clients:
 * what is announced later reaches one of them, or nobody, never this session; and a {@code NOTIFY}
 * of its own would come back whenever it ran on that same server connection, proving nothing. So
 * behind a pooler the listener does not listen. Connected otherwise, it listens and then announces
 * a payload only it knows on its own channel: if that does not come back within a second, something
 * between it and the server keeps notifications from it, and it stops listening. Either way it then
 * reads, every poll interval, the holds of every destination it serves, in one statement that names
 * them all, and hands on what the rows say as it does after a notification. A turn granted
 * elsewhere before a pause then goes out if it begins within about one interval of the pause; the
 * rest are held as they are after a notification. It logs once for each cause that it polls, and
 * decides again at every connection.
 */
final class HoldListener implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(HoldListener.class);

  /** How long one wait for notifications lasts: also how soon a closed listener stops. */
  private static final int WAIT_MILLIS = 250;

  /** The least a listener whose connection failed waits before it connects again. */
  private static final long RETRY_MILLIS = 1000;

  /** How long a listener that has just listened waits for its own notification to come back. */
  private static final long OWN_NOTIFICATION_WAIT_MILLIS = 1000;

  private static final String UNDEFINED_TABLE = "42P01";

  private final CursorSql sql;
  private final OutagePolicy policy;
  private final Opener opener;
  private final long probeEveryNanos;
  private final int probeTimeoutMillis;
  private final long pollEveryNanos;
  private final Map<String, List<Cursor.Listener>> listeners = new ConcurrentHashMap<>();

  /** Destinations whose holds are to be read at the next wake-up; each at most once. */
  private final Set<String> unread = ConcurrentHashMap.newKeySet();

  /** Destinations whose row could not be read on this connection; read again at reconnection. */
  private final Set<String> unreadable = ConcurrentHashMap.newKeySet();

  private final Thread thread;
  private final CountDownLatch firstAttempt = new CountDownLatch(1);

  /** The causes of polling already logged; this thread's alone. */
  private final Set<Deafness> logged = EnumSet.noneOf(Deafness.class);

  /** What the server behind the connection keeps; this thread's alone, set at each connection. */
  private ServerSession server = ServerSession.OWN;

  private volatile boolean closed;

  /** Opens the listener's connection, and finds out what the server behind it keeps. */
  @FunctionalInterface
  interface Opener {
    ServerSession.Probed open() throws SQLException;
  }

  /** Why a connection hears no notification, and so polls. */
  private enum Deafness {
    BEHIND_A_POOLER,
    OWN_NOTIFICATION_LOST
  }

  /** How the listener learns of holds on one connection: listening, or polling. */
  private interface Watch {
    /** One wait, at most about {@link #WAIT_MILLIS} or one poll interval, and what it found. */
    void next() throws SQLException;
  }

  /**
   * @param probeEvery how long a connection may hear nothing before it is asked a {@code SELECT 1}
   * @param probeTimeout how long that {@code SELECT 1} (and any read) may take
   * @param pollEvery how often a connection that hears no notification reads the holds of every
   *     destination served
   */
  HoldListener(
      CursorSql sql,
      OutagePolicy policy,
      Opener opener,
      Duration probeEvery,
      Duration probeTimeout,
      Duration pollEvery) {
    this.sql = sql;
    this.policy = policy;
    this.opener = opener;
    this.probeEveryNanos = probeEvery.toNanos();
    this.probeTimeoutMillis =
        (int) Math.max(1, Math.min(Integer.MAX_VALUE, probeTimeout.toMillis()));
    this.pollEveryNanos = pollEvery.toNanos();
    this.thread = new Thread(this::run, "pacer-hold-listener");
    thread.setDaemon(true);
  }

  /**
   * Starts listening, and waits up to {@code timeout} for the first attempt to connect: a pause
   * announced after this returns is heard (unless the database could not be reached).
   */
  void start(Duration timeout) {
    thread.start();
    try {
      firstAttempt.await(timeout.toNanos(), TimeUnit.NANOSECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /**
   * Serves {@code listener} for the destination stored under {@code key}. Adding and {@link #remove
   * removing} are each one step on the key's entry, so that a listener added as the last one goes
   * is served, and read for.
   */
  void add(String key, Cursor.Listener listener) {
    listeners.compute(
        key,
        (k, served) -> {
          List<Cursor.Listener> those = served != null ? served : new CopyOnWriteArrayList<>();
          those.add(listener);
          unread.add(k);
          return those;
        });
  }

  /**
   * Stops serving {@code listener}; a destination left with none is forgotten: no longer read, and
   * its announcements no longer wake anyone.
   */
  void remove(String key, Cursor.Listener listener) {
    listeners.computeIfPresent(
        key,
        (k, served) -> {
          served.remove(listener);
          if (!served.isEmpty()) {
            return served;
          }
          unread.remove(k);
          unreadable.remove(k);
          return null;
        });
  }

  @Override
  public void close() {
    closed = true;
    thread.interrupt();
  }

  private void run() {
    Connection connection = null;
    Watch watch = null;
    while (!closed) {
      try {
        if (connection == null) {
          if (policy.refusesNow()) {
            firstAttempt.countDown();
            if (!pause(policy.untilNextAttempt().plusMillis(100).toMillis())) {
              break;
            }
            continue;
          }
          ServerSession.Probed opened = opener.open();
          connection = opened.connection();
          server = opened.server();
          connection.setAutoCommit(true);
          connection.setNetworkTimeout(Runnable::run, probeTimeoutMillis);
          unreadable.clear();
          unread.addAll(listeners.keySet());
          watch = watch(connection);
          firstAttempt.countDown();
        }
        watch.next();
      } catch (SQLException e) {
        firstAttempt.countDown();
        letGo(connection);
        connection = null;
        if (closed) {
          break;
        }
        log.debug("Hold listener: {} [SQLState {}]", e.getMessage(), e.getSQLState());
        // Its connection dropped, maybe with the database, before anyone told the policy: it
        // tries again after the next boundary, not sooner, so an outage costs one attempt per
        // boundary however soon this thread noticed it.
        if (!pause(Math.max(RETRY_MILLIS, policy.untilNextBoundary().plusMillis(100).toMillis()))) {
          break;
        }
      } catch (RuntimeException e) {
        firstAttempt.countDown();
        log.warn("Hold listener failed; starting again in 1 s", e);
        letGo(connection);
        connection = null;
        if (!pause(1000)) {
          break;
        }
      }
    }
    letGo(connection);
  }

  /**
   * How {@code c} is to learn of holds: by listening where its own notification comes back; by
   * polling behind a pooler, where its own coming back says nothing of anyone else's, and where its
   * own did not come back.
   */
  private Watch watch(Connection c) throws SQLException {
    if (server == ServerSession.POOLED) {
      return polling(c, Deafness.BEHIND_A_POOLER);
    }
    execute(c, "LISTEN " + quoted(sql.holds().channel()));
    if (ownNotificationComesBack(c)) {
      return listening(c);
    }
    execute(c, "UNLISTEN *");
    return polling(c, Deafness.OWN_NOTIFICATION_LOST);
  }

  /**
   * Announces on the channel a payload only this listener knows, and waits a bounded time for it;
   * whatever else arrives meanwhile is a wake-up, as ever. The payload names no destination, so
   * other listeners pass over it.
   */
  private boolean ownNotificationComesBack(Connection c) throws SQLException {
    String own = "probe\t" + UUID.randomUUID();
    try (PreparedStatement announce =
        server.prepare(c, "SELECT pg_notify(?, ?)", probeTimeoutMillis)) {
      announce.setString(1, sql.holds().channel());
      announce.setString(2, own);
      announce.executeQuery().close();
    }
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(OWN_NOTIFICATION_WAIT_MILLIS);
    boolean heard = false;
    for (long left = deadline - System.nanoTime();
        !heard && left > 0;
        left = deadline - System.nanoTime()) {
      // At least 1 ms: a wait of 0 would never end.
      PGNotification[] notifications =
          c.unwrap(PGConnection.class)
              .getNotifications((int) Math.max(1, TimeUnit.NANOSECONDS.toMillis(left)));
      for (PGNotification n : notifications != null ? notifications : new PGNotification[0]) {
        if (own.equals(n.getParameter())) {
          heard = true;
        } else {
          wakeUp(n.getParameter());
        }
      }
    }
    return heard;
  }

  /** Waits for notifications, and reads the destinations they name. */
  private Watch listening(Connection c) {
    long[] lastHeardNanos = {System.nanoTime()};
    return () -> {
      readUnread(c);
      PGNotification[] notifications = c.unwrap(PGConnection.class).getNotifications(WAIT_MILLIS);
      if (notifications != null && notifications.length > 0) {
        lastHeardNanos[0] = System.nanoTime();
        for (PGNotification n : notifications) {
          wakeUp(n.getParameter());
        }
      } else if (System.nanoTime() - lastHeardNanos[0] > probeEveryNanos) {
        probe(c);
        lastHeardNanos[0] = System.nanoTime();
      }
    };
  }

  /**
   * Reads the holds of every destination served, in one statement, every poll interval. A
   * connection that cannot deliver anything fails its next poll, so it needs no probe.
   */
  private Watch polling(Connection c, Deafness cause) throws SQLException {
    if (logged.add(cause)) {
      String instead =
          "; it reads the pauses and lockouts of every destination it serves every "
              + TimeUnit.NANOSECONDS.toMillis(pollEveryNanos)
              + " ms instead";
      if (cause == Deafness.BEHIND_A_POOLER) {
        log.info(
            "Hold listener: its connection goes through a pooler (the server process"
                + " announced at connect is not the one that answers), where LISTEN does not reach"
                + " this session{}",
            instead);
      } else {
        log.warn(
            "Hold listener: its own NOTIFY on {} did not come back within {} ms, so"
                + " notifications do not reach it{}",
            sql.holds().channel(),
            OWN_NOTIFICATION_WAIT_MILLIS,
            instead);
      }
    }
    PreparedStatement readAll =
        server.prepareForReuse(c, sql.holds().readAll(), probeTimeoutMillis);
    long[] nextPollNanos = {System.nanoTime()};
    return () -> {
      long wait = nextPollNanos[0] - System.nanoTime();
      if (wait > 0) {
        try {
          TimeUnit.NANOSECONDS.sleep(wait);
        } catch (InterruptedException e) {
          // Only close() interrupts this thread; the loop then ends.
        }
        return;
      }
      nextPollNanos[0] = System.nanoTime() + pollEveryNanos;
      readAll(c, readAll);
    };
  }

  /**
   * Waits on the wall clock, not the cursor's {@code TimeSource}: this is a background thread, and
   * a test's fake clock must move only when the test moves it.
   */
  private boolean pause(long millis) {
    try {
      Thread.sleep(Math.max(millis, WAIT_MILLIS));
      return true;
    } catch (InterruptedException e) {
      return false;
    }
  }

  private static void execute(Connection c, String statement) throws SQLException {
    try (Statement s = c.createStatement()) {
      s.execute(statement);
    }
  }

  /** A round trip, so that a connection that can no longer deliver anything fails. */
  private static void probe(Connection c) throws SQLException {
    try (Statement s = c.createStatement();
        ResultSet r = s.executeQuery("SELECT 1")) {
      r.next();
    }
  }

  /** The holds in force for destinations not yet read since they were added or named. */
  private void readUnread(Connection c) throws SQLException {
    for (Iterator<String> keys = unread.iterator(); keys.hasNext(); ) {
      String key = keys.next();
      keys.remove();
      try (PreparedStatement read = server.prepare(c, sql.holds().read(), probeTimeoutMillis)) {
        read.setString(1, key);
        read.setString(2, key);
        try (ResultSet row = read.executeQuery()) {
          if (row.next()) {
            handOn(key, row, 1);
          }
        }
      } catch (SQLException e) {
        if (UNDEFINED_TABLE.equals(e.getSQLState())) {
          // No table yet, so nothing recorded; the first hold recorded creates it, and wakes us.
          continue;
        }
        if (isDataError(e)) {
          if (unreadable.add(key)) {
            log.warn(
                "Could not read the holds of {}; passing over it until the listener"
                    + " reconnects: {} [SQLState {}]",
                key,
                e.getMessage(),
                e.getSQLState());
          }
          continue;
        }
        unread.add(key);
        throw e;
      }
    }
  }

  /**
   * The holds of every destination served but those that could not be read, in one statement. A row
   * no read can convert fails the statement; then each destination is read alone, and the one that
   * cannot be read is passed over as after a notification.
   */
  private void readAll(Connection c, PreparedStatement readAll) throws SQLException {
    unread.clear();
    List<String> keys = listeners.keySet().stream().filter(k -> !unreadable.contains(k)).toList();
    if (keys.isEmpty()) {
      return;
    }
    readAll.setArray(1, c.createArrayOf("text", keys.toArray()));
    try (ResultSet rows = readAll.executeQuery()) {
      while (rows.next()) {
        handOn(rows.getString(1), rows, 2);
      }
    } catch (SQLException e) {
      if (UNDEFINED_TABLE.equals(e.getSQLState())) {
        return;
      }
      if (!isDataError(e)) {
        throw e;
      }
      unread.addAll(keys);
      readUnread(c);
    }
  }

  /**
   * What one row of holds says, from column {@code first}: the pause's micros left (NULL if none),
   * then the lockout's reason (NULL if none), handed to the listeners of {@code key}.
   */
  private void handOn(String key, ResultSet row, int first) throws SQLException {
    long pauseMicros = row.getLong(first);
    if (!row.wasNull() && pauseMicros > 0) {
      paused(key, Duration.of(pauseMicros, ChronoUnit.MICROS));
    }
    String reason = row.getString(first + 1);
    if (reason != null) {
      lockedOut(key, reason);
    }
  }

  /** Class 22: the row holds a value the read cannot convert; the connection is fine. */
  private static boolean isDataError(SQLException e) {
    String state = e.getSQLState();
    return state != null && state.startsWith("22");
  }

  /**
   * One announcement: kind, key and value, tab-separated (see {@link CursorSql}). Only the key is
   * taken, and only a key this process serves; its holds are read from the tables.
   */
  private void wakeUp(String payload) {
    if (payload == null) {
      return;
    }
    String[] parts = payload.split("\t", 3);
    if (parts.length == 3 && listeners.containsKey(parts[1]) && !unreadable.contains(parts[1])) {
      unread.add(parts[1]);
    }
  }

  private void paused(String key, Duration left) {
    for (Cursor.Listener l : listeners.getOrDefault(key, List.of())) {
      l.paused(left);
    }
  }

  private void lockedOut(String key, String reason) {
    for (Cursor.Listener l : listeners.getOrDefault(key, List.of())) {
      l.lockedOut(reason);
    }
  }

  /** A channel name as LISTEN must be given it: quoted, so that it is not folded to lower case. */
  private static String quoted(String channel) {
    return '"' + channel.replace("\"", "\"\"") + '"';
  }

  /** Stops listening and closes the connection; a pool gets it back listening to nothing. */
  private static void letGo(Connection c) {
    if (c == null) {
      return;
    }
    try (Statement s = c.createStatement()) {
      s.execute("UNLISTEN *");
    } catch (SQLException | RuntimeException ignored) {
      // A connection that failed is closed below; a pool validates what it gets back.
    }
    try {
      c.close();
    } catch (SQLException | RuntimeException ignored) {
      // The connection is being given up; its close may fail the same way it did.
    }
  }
}
