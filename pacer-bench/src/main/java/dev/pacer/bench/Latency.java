package dev.pacer.bench;

import dev.pacer.Reservation;
import dev.pacer.postgres.PostgresCursor;
import dev.pacer.postgres.PostgresCursorConfig;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Arrays;
import org.postgresql.PGStatement;

/**
 * Round-trip latency from one thread: JDBC {@code SELECT 1} (prepared server-side, on one
 * connection with the same session settings as Pacer's) against one Pacer reservation on its own
 * dedicated connection. The two are measured in alternating rounds so that a change in the
 * machine's load during the measurement hits both alike.
 */
final class Latency {

  /** Microsecond percentiles of both. */
  record Result(double select1P50, double select1P99, double reserveP50, double reserveP99,
      int samplesEach) {

    double ratio() {
      return reserveP50 / select1P50;
    }
  }

  private Latency() {}

  static Result measure(Database.Target db, int rounds, int samples) throws SQLException {
    long[] select1 = new long[rounds * samples];
    long[] reserve = new long[rounds * samples];
    try (Connection c = db.connect();
        PostgresCursor cursor = new PostgresCursor(
            PostgresCursorConfig.forUrl(db.jdbcUrl(), db.properties()).build())) {
      try (Statement s = c.createStatement()) {
        s.execute("SET synchronous_commit = off");
      }
      try (PreparedStatement ping = c.prepareStatement("SELECT 1")) {
        ping.unwrap(PGStatement.class).setPrepareThreshold(1);
        String key = "bench-latency";
        for (int i = 0; i < Math.max(2_000, samples); i++) {
          ping(ping);
          reserve(cursor, key);
        }
        int k = 0;
        for (int r = 0; r < rounds; r++) {
          for (int i = 0; i < samples; i++) {
            long t0 = System.nanoTime();
            ping(ping);
            select1[k + i] = System.nanoTime() - t0;
          }
          for (int i = 0; i < samples; i++) {
            long t0 = System.nanoTime();
            reserve(cursor, key);
            reserve[k + i] = System.nanoTime() - t0;
          }
          k += samples;
        }
      }
    }
    Arrays.sort(select1);
    Arrays.sort(reserve);
    return new Result(
        percentileMicros(select1, 0.50), percentileMicros(select1, 0.99),
        percentileMicros(reserve, 0.50), percentileMicros(reserve, 0.99),
        select1.length);
  }

  private static void ping(PreparedStatement ping) throws SQLException {
    try (ResultSet r = ping.executeQuery()) {
      r.next();
    }
  }

  private static void reserve(PostgresCursor cursor, String key) {
    Reservation turn = cursor.reserve(key, Duration.ZERO);
    if (!turn.isGranted()) {
      throw new IllegalStateException("reservation was " + turn);
    }
  }

  /** Nearest-rank percentile of sorted nanoseconds, in microseconds. */
  static double percentileMicros(long[] sortedNanos, double p) {
    int rank = (int) Math.ceil(p * sortedNanos.length);
    return sortedNanos[Math.max(0, rank - 1)] / 1_000.0;
  }
}
