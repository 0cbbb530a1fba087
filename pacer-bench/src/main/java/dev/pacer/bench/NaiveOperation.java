package dev.pacer.bench;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;

/**
 * The pacer cursor as one would write it by hand: in a transaction, take an advisory lock on the
 * key, read the cursor and the database clock, compute {@code max(now, next) + gap} in Java, write
 * it back, commit. Four round trips (the BEGIN rides with the first statement).
 */
final class NaiveOperation implements Operation {

  private final Connection connection;
  private final PreparedStatement lock;
  private final PreparedStatement select;
  private final PreparedStatement update;
  private final String[] keys;
  private final long[] lockIds;
  private int next;

  NaiveOperation(Database.Target db, boolean synchronousCommit, String[] keys) throws SQLException {
    this.connection = db.connect();
    this.keys = keys.clone();
    this.lockIds = new long[keys.length];
    for (int i = 0; i < keys.length; i++) {
      lockIds[i] = Database.numericKey(keys[i]);
    }
    if (!synchronousCommit) {
      try (Statement s = connection.createStatement()) {
        s.execute("SET synchronous_commit = off");
      }
    }
    try (PreparedStatement seed =
        connection.prepareStatement(
            "INSERT INTO "
                + Contender.NAIVE_TABLE
                + " (name, next_at_micros) VALUES (?, 0)"
                + " ON CONFLICT (name) DO NOTHING")) {
      for (String key : keys) {
        seed.setString(1, key);
        seed.executeUpdate();
      }
    }
    connection.setAutoCommit(false);
    lock = connection.prepareStatement("SELECT pg_advisory_xact_lock(?)");
    select =
        connection.prepareStatement(
            "SELECT next_at_micros, (extract(epoch FROM clock_timestamp()) * 1000000)::bigint"
                + " FROM "
                + Contender.NAIVE_TABLE
                + " WHERE name = ?");
    update =
        connection.prepareStatement(
            "UPDATE " + Contender.NAIVE_TABLE + " SET next_at_micros = ? WHERE name = ?");
  }

  @Override
  public void perform() throws SQLException {
    int k = next;
    next = next + 1 == keys.length ? 0 : next + 1;
    try {
      lock.setLong(1, lockIds[k]);
      try (ResultSet r = lock.executeQuery()) {
        r.next();
      }
      select.setString(1, keys[k]);
      long cursor;
      long now;
      try (ResultSet r = select.executeQuery()) {
        if (!r.next()) {
          throw new IllegalStateException("naive cursor row missing for " + keys[k]);
        }
        cursor = r.getLong(1);
        now = r.getLong(2);
      }
      long gapMicros = 0;
      update.setLong(1, Math.max(now, cursor) + gapMicros);
      update.setString(2, keys[k]);
      update.executeUpdate();
      connection.commit();
    } catch (SQLException | RuntimeException e) {
      connection.rollback();
      throw e;
    }
  }

  @Override
  public void close() throws SQLException {
    connection.close();
  }
}
