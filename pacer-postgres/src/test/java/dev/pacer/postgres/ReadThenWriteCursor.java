package dev.pacer.postgres;

import dev.pacer.TimeSource;
import dev.pacer.spi.Cursor;
import dev.pacer.spi.Reservation;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;

/**
 * A cursor that is not atomic, to prove the contract can fail one: it reads the row's next in one
 * statement and writes {@code max(now, next) + interval} in another, each on its own, with no lock,
 * so that two callers who read the same next are handed the same turn (the lost update). Callers at
 * once take connections of their own, opened beforehand, as separate processes would. Its clock is
 * mapped as the real cursor's is, through a {@link DatabaseClock}, so that only the atomicity
 * differs.
 */
final class ReadThenWriteCursor implements Cursor, AutoCloseable {

  private static final String TABLE = "read_then_write_cursor";

  private final TimeSource time;
  private final DatabaseClock databaseClock = new DatabaseClock();
  private final List<Connection> opened = new ArrayList<>();
  private final BlockingQueue<Connection> idle = new LinkedBlockingQueue<>();

  /**
   * A cursor with {@code connections} connections, for as many callers at once, on {@code time}.
   */
  ReadThenWriteCursor(TimeSource time, int connections) throws SQLException {
    this.time = time;
    TestDatabase.execute(
        "CREATE TABLE IF NOT EXISTS "
            + TABLE
            + " (name text PRIMARY KEY, next_micros bigint NOT NULL)");
    for (int i = 0; i < connections; i++) {
      Connection c = TestDatabase.connect();
      c.setAutoCommit(true);
      opened.add(c);
      idle.add(c);
    }
  }

  @Override
  public Reservation reserve(String name, Duration interval, Duration notBefore) {
    return reserveWithin(name, interval, notBefore, null);
  }

  @Override
  public Reservation tryReserve(
      String name, Duration interval, Duration notBefore, Duration maxWait) {
    return reserveWithin(name, interval, notBefore, maxWait);
  }

  private Reservation reserveWithin(
      String name, Duration interval, Duration notBefore, Duration maxWait) {
    Connection c;
    try {
      c = idle.take();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return Reservation.unavailable();
    }
    try {
      long asked = time.nanoTime();
      long nowMicros;
      Long nextMicros = null;
      try (PreparedStatement read =
          c.prepareStatement(
              "SELECT (extract(epoch FROM"
                  + " clock_timestamp()) * 1000000)::bigint, (SELECT next_micros FROM "
                  + TABLE
                  + " WHERE name = ?)")) {
        read.setString(1, name);
        try (ResultSet row = read.executeQuery()) {
          row.next();
          nowMicros = row.getLong(1);
          long next = row.getLong(2);
          if (!row.wasNull()) {
            nextMicros = next;
          }
        }
      }
      long answered = time.nanoTime();
      long startMicros =
          nextMicros == null
              ? nowMicros + notBefore.toNanos() / 1000
              : Math.max(nowMicros, nextMicros);
      long waitMicros = startMicros - nowMicros;
      if (maxWait != null && waitMicros * 1000 > maxWait.toNanos()) {
        return Reservation.refused();
      }
      try (PreparedStatement write =
          c.prepareStatement(
              "INSERT INTO "
                  + TABLE
                  + " (name, next_micros) VALUES (?, ?) ON CONFLICT (name) DO UPDATE"
                  + " SET next_micros = excluded.next_micros")) {
        write.setString(1, name);
        write.setLong(2, startMicros + interval.toNanos() / 1000);
        write.executeUpdate();
      }
      long turnAt =
          answered
              + databaseClock.waitFromAnswer(asked, answered, nowMicros * 1000, waitMicros * 1000);
      return Reservation.grantedNanos(turnAt - time.nanoTime());
    } catch (SQLException e) {
      return Reservation.unavailable();
    } finally {
      idle.add(c);
    }
  }

  @Override
  public void clear(String name) {
    try (Connection c = TestDatabase.connect();
        PreparedStatement delete = c.prepareStatement("DELETE FROM " + TABLE + " WHERE name = ?")) {
      delete.setString(1, name);
      delete.executeUpdate();
    } catch (SQLException e) {
      throw new IllegalStateException("cannot clear " + name, e);
    }
  }

  @Override
  public void close() throws SQLException {
    for (Connection c : opened) {
      c.close();
    }
  }
}
