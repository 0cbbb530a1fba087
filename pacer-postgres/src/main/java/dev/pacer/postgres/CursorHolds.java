package dev.pacer.postgres;

import dev.pacer.Destination;
import dev.pacer.postgres.internal.CursorSql;
import dev.pacer.spi.Cursor;
import dev.pacer.spi.CursorStoreException;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.time.temporal.ChronoUnit;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * {@link PostgresCursor}'s pauses and lockouts: each recorded and announced in one statement on the
 * cursor's connection, read back for an operator's tools, and heard from other processes through a
 * {@link HoldListener} on a connection of its own, started by the first {@link #listen}.
 */
final class CursorHolds {

  /** Runs work on the cursor's connection: false if it failed or the cursor is closed. */
  @FunctionalInterface
  interface Session {
    boolean run(String what, KeptConnection.Work<Boolean> work);
  }

  /**
   * The listener's connection is opened in the background, where nobody waits for it: it may take
   * as long as a cold start on a busy host needs.
   */
  private static final Duration LISTENER_CONNECT_TIMEOUT = Duration.ofSeconds(10);

  /** How long the listener's connection may hear nothing before it checks it can still hear. */
  private static final Duration LISTENER_PROBE_EVERY = Duration.ofSeconds(5);

  private final CursorSql sql;
  private final PostgresCursorConfig config;
  private final OutagePolicy policy;
  private final int timeoutMillis;
  private final Session session;

  /** What the server behind the cursor's connection keeps, read with the connection held. */
  private final Supplier<ServerSession> server;

  private volatile boolean closed;
  private HoldListener holdListener;

  CursorHolds(
      CursorSql sql,
      PostgresCursorConfig config,
      OutagePolicy policy,
      int timeoutMillis,
      Session session,
      Supplier<ServerSession> server) {
    this.sql = sql;
    this.config = config;
    this.policy = policy;
    this.timeoutMillis = timeoutMillis;
    this.session = session;
    this.server = server;
  }

  boolean pause(String name, Duration delay) {
    CursorSql.Holds holds = sql.holds();
    Duration held =
        delay.compareTo(Destination.LONGEST_RETRY_AFTER) > 0
            ? Destination.LONGEST_RETRY_AFTER
            : delay;
    return session.run(
        "pause " + name,
        c -> {
          try (PreparedStatement pause = server.get().prepare(c, holds.pause(), timeoutMillis)) {
            pause.setString(1, sql.key(name));
            pause.setLong(2, PostgresCursor.ceilMicros(held));
            if (holds.channel() != null) {
              pause.setString(3, holds.channel());
            }
            pause.executeQuery().close();
            return true;
          }
        });
  }

  boolean lockOut(String name, String reason) {
    CursorSql.Holds holds = sql.holds();
    if (!holds.recordsLockouts()) {
      return false;
    }
    return session.run(
        "lock out " + name,
        c -> {
          try (PreparedStatement lockOut =
              server.get().prepare(c, holds.lockOut(), timeoutMillis)) {
            lockOut.setString(1, sql.key(name));
            lockOut.setString(2, reason);
            lockOut.setString(3, holds.channel());
            lockOut.executeQuery().close();
            return true;
          }
        });
  }

  void clearLockout(String name) {
    String clearLockout = sql.holds().clearLockout();
    if (clearLockout == null) {
      return;
    }
    if (!session.run(
        "clear the lockout of " + name,
        c -> {
          try (PreparedStatement clear = server.get().prepare(c, clearLockout, timeoutMillis)) {
            clear.setString(1, sql.key(name));
            clear.executeUpdate();
            return true;
          }
        })) {
      throw new CursorStoreException("could not clear the lockout of " + name, null);
    }
  }

  void listen(String name, Cursor.Listener listener) {
    if (sql.holds().channel() == null) {
      return;
    }
    HoldListener started;
    synchronized (this) {
      if (closed) {
        return;
      }
      if (holdListener == null) {
        holdListener =
            new HoldListener(
                sql,
                policy,
                () ->
                    config.openProbed(
                        LISTENER_CONNECT_TIMEOUT.toNanos(),
                        PostgresCursorConfig.LISTENER_CONNECTION),
                LISTENER_PROBE_EVERY,
                config.operationTimeout(),
                config.holdPollInterval());
        holdListener.add(sql.key(name), listener);
        holdListener.start(config.operationTimeout());
        return;
      }
      started = holdListener;
    }
    started.add(sql.key(name), listener);
  }

  void unlisten(String name, Cursor.Listener listener) {
    HoldListener started;
    synchronized (this) {
      started = holdListener;
    }
    if (started != null) {
      started.remove(sql.key(name), listener);
    }
  }

  DestinationHolds inForce(String name) {
    if (sql.holds().read() == null) {
      return DestinationHolds.NONE;
    }
    DestinationHolds[] read = {DestinationHolds.NONE};
    boolean answered =
        session.run(
            "read the holds of " + name,
            c -> {
              try (PreparedStatement s =
                  server.get().prepare(c, sql.holds().read(), timeoutMillis)) {
                s.setString(1, sql.key(name));
                s.setString(2, sql.key(name));
                try (ResultSet row = s.executeQuery()) {
                  if (row.next()) {
                    long pauseMicros = Math.max(0, row.getLong(1));
                    read[0] =
                        new DestinationHolds(
                            Duration.of(pauseMicros, ChronoUnit.MICROS),
                            Optional.ofNullable(row.getString(2)));
                  }
                }
                return true;
              }
            });
    if (!answered) {
      throw new CursorStoreException("could not read the holds of " + name, null);
    }
    return read[0];
  }

  /** Stops the listener, if one was started; no later {@link #listen} starts one. */
  void close() {
    closed = true;
    HoldListener listener;
    synchronized (this) {
      listener = holdListener;
    }
    if (listener != null) {
      listener.close();
    }
  }
}
