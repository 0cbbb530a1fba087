package dev.pacer.postgres;

import dev.pacer.Cursor;
import dev.pacer.postgres.internal.CursorSql;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
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
 * <p>The statements that record a pause or a lockout announce it in the same statement
 * ({@code pg_notify}), so PostgreSQL delivers it when it commits, to every listening session at
 * once. Checking the row before each send would cost every request a round trip, and still miss
 * a turn whose thread was asleep when the pause began; a notification costs nothing until one is
 * sent, and the limiter then checks each waking turn against the pause in memory.
 *
 * <p>The listener follows the database's {@link OutagePolicy} but never decides it: while the policy
 * holds the database down it does not connect, and it comes back after the policy's next boundary;
 * its own failures (a slow first connection on a busy host, a dropped session) are not reported as
 * an outage, because the reservations, which the fleet's pacing depends on, already do that. Whenever it (re)connects it reads
 * the holds in force for every destination it serves, so that nothing announced while it was away
 * is missed; a destination added later is read at the listener's next wake-up. The cursor's
 * reservation statement refuses a locked-out destination on its own, so a lockout never depends
 * on this thread; a pause moves the cursor itself, so only turns already granted depend on it.
 */
final class HoldListener implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(HoldListener.class);
  /** How long one wait for notifications lasts: also how soon a closed listener stops. */
  private static final int WAIT_MILLIS = 250;
  /** The least a listener whose connection failed waits before it connects again. */
  private static final long RETRY_MILLIS = 1000;

  private final CursorSql sql;
  private final OutagePolicy policy;
  private final KeptConnection.Opener opener;
  private final Map<String, List<Cursor.Listener>> listeners = new ConcurrentHashMap<>();
  private final Queue<String> unread = new ConcurrentLinkedQueue<>();
  private final Thread thread;
  private final CountDownLatch firstAttempt = new CountDownLatch(1);
  private volatile boolean closed;

  HoldListener(CursorSql sql, OutagePolicy policy, KeptConnection.Opener opener) {
    this.sql = sql;
    this.policy = policy;
    this.opener = opener;
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

  /** Serves {@code listener} for the destination stored under {@code key}. */
  void add(String key, Cursor.Listener listener) {
    listeners.computeIfAbsent(key, k -> new CopyOnWriteArrayList<>()).add(listener);
    unread.add(key);
  }

  @Override
  public void close() {
    closed = true;
    thread.interrupt();
  }

  private void run() {
    Connection connection = null;
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
          connection = opener.open();
          connection.setAutoCommit(true);
          try (Statement listen = connection.createStatement()) {
            listen.execute("LISTEN " + sql.holds().channel());
          }
          firstAttempt.countDown();
          unread.addAll(listeners.keySet());
        }
        readUnread(connection);
        PGNotification[] notifications =
            connection.unwrap(PGConnection.class).getNotifications(WAIT_MILLIS);
        if (notifications != null) {
          for (PGNotification n : notifications) {
            deliver(n.getParameter());
          }
        }
      } catch (SQLException e) {
        firstAttempt.countDown();
        closeQuietly(connection);
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
        closeQuietly(connection);
        connection = null;
        if (!pause(1000)) {
          break;
        }
      }
    }
    closeQuietly(connection);
  }

  /**
   * Waits on the wall clock, not the cursor's {@code TimeSource}: this is a background thread, and a
   * test's fake clock must move only when the test moves it.
   */
  private boolean pause(long millis) {
    try {
      Thread.sleep(Math.max(millis, WAIT_MILLIS));
      return true;
    } catch (InterruptedException e) {
      return false;
    }
  }

  /** The holds in force for destinations not yet read since the listener (re)connected. */
  private void readUnread(Connection c) throws SQLException {
    String key;
    while ((key = unread.poll()) != null) {
      try (PreparedStatement read = c.prepareStatement(sql.holds().read())) {
        read.setString(1, key);
        read.setString(2, key);
        try (ResultSet row = read.executeQuery()) {
          if (!row.next()) {
            continue;
          }
          long pauseMicros = row.getLong(1);
          if (!row.wasNull() && pauseMicros > 0) {
            paused(key, pauseMicros);
          }
          String reason = row.getString(2);
          if (reason != null) {
            lockedOut(key, reason);
          }
        }
      } catch (SQLException e) {
        unread.add(key);
        throw e;
      }
    }
  }

  /** One announcement: kind, key and value, tab-separated (see {@link CursorSql}). */
  private void deliver(String payload) {
    String[] parts = payload == null ? new String[0] : payload.split("\t", 3);
    if (parts.length != 3) {
      log.debug("Ignoring a malformed hold announcement: {}", payload);
      return;
    }
    switch (parts[0]) {
      case "P" -> {
        try {
          paused(parts[1], Long.parseLong(parts[2]));
        } catch (NumberFormatException e) {
          log.debug("Ignoring a pause with no length: {}", payload);
        }
      }
      case "L" -> lockedOut(parts[1], parts[2]);
      default -> log.debug("Ignoring a hold announcement of unknown kind: {}", payload);
    }
  }

  private void paused(String key, long micros) {
    Duration left = Duration.ofNanos(micros * 1000);
    for (Cursor.Listener l : listeners.getOrDefault(key, List.of())) {
      l.paused(left);
    }
  }

  private void lockedOut(String key, String reason) {
    for (Cursor.Listener l : listeners.getOrDefault(key, List.of())) {
      l.lockedOut(reason);
    }
  }

  private static void closeQuietly(Connection c) {
    if (c == null) {
      return;
    }
    try {
      c.close();
    } catch (SQLException | RuntimeException ignored) {
      // The connection is being given up; its close may fail the same way it did.
    }
  }
}
