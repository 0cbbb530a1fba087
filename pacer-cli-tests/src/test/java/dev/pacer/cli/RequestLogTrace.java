package dev.pacer.cli;

import dev.pacer.postgres.DatabaseClock;
import dev.pacer.testing.Request;
import dev.pacer.testing.TurnTrace;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * A CLI run's requests followed from turn to door ({@link TurnTrace}), read from the request log:
 * each worker records when it handed each request to its HTTP client and how late that was after
 * the request's turn, on the database's clock, which this JVM maps onto its own {@link
 * System#nanoTime()} (one machine, one clock: the mapping's error is half the shortest of a few
 * round trips, {@link DatabaseClock}). Each worker's stamps carry its own mapping's error too, a
 * few milliseconds, so the trace's checks of the turns (half a turn apart at least) suit rates
 * whose half a turn is well above that. The log names no request target, so a worker's k-th request
 * in the log is matched with its k-th arrival at the door (its process id, {@code X-Pacer-Worker});
 * a worker whose counts differ (a request that failed before reaching the door) is left untraced,
 * which excuses nothing.
 */
final class RequestLogTrace {

  private final TurnTrace trace;
  private final List<dev.pacer.testing.Arrival> keyed;

  private RequestLogTrace(TurnTrace trace, List<dev.pacer.testing.Arrival> keyed) {
    this.trace = trace;
    this.keyed = keyed;
  }

  /** The trace of {@code job}'s requests at {@code rate}, from the log in {@code jdbcUrl}. */
  static RequestLogTrace of(
      String jdbcUrl, String job, List<TestDestination.Arrival> arrivals, double rate)
      throws SQLException {
    Map<String, List<long[]>> sends = new TreeMap<>();
    try (Connection c = DriverManager.getConnection(jdbcUrl)) {
      long offset = databaseMinusNanoTime(c);
      try (PreparedStatement s =
          c.prepareStatement(
              "SELECT worker, (extract(epoch FROM sent_at) * 1000000)::bigint, lateness_us"
                  + " FROM pacer_request WHERE job = ? ORDER BY sent_at")) {
        s.setString(1, job);
        try (ResultSet r = s.executeQuery()) {
          while (r.next()) {
            String[] id = r.getString(1).split(":");
            long sent = r.getLong(2) * 1000 - offset;
            sends
                .computeIfAbsent(id.length > 1 ? id[1] : id[0], w -> new ArrayList<>())
                .add(new long[] {sent - r.getLong(3) * 1000, sent});
          }
        }
      }
    }
    Map<String, List<TestDestination.Arrival>> byWorker = new TreeMap<>();
    arrivals.stream()
        .sorted(Comparator.comparingLong(TestDestination.Arrival::nanos))
        .forEach(a -> byWorker.computeIfAbsent(a.worker(), w -> new ArrayList<>()).add(a));
    TurnTrace trace = new TurnTrace(rate);
    List<dev.pacer.testing.Arrival> keyed = new ArrayList<>();
    byWorker.forEach(
        (worker, atTheDoor) -> {
          List<long[]> sent = sends.get(worker);
          boolean traced = sent != null && sent.size() == atTheDoor.size();
          for (int k = 0; k < atTheDoor.size(); k++) {
            String target = "/" + worker + "/" + k;
            if (traced) {
              trace.sent(target, sent.get(k)[0], sent.get(k)[1]);
            }
            TestDestination.Arrival a = atTheDoor.get(k);
            keyed.add(
                new dev.pacer.testing.Arrival(
                    a.nanos(),
                    new Request("GET", target, Map.of(), new byte[0]),
                    false,
                    a.status()));
          }
        });
    return new RequestLogTrace(trace, keyed);
  }

  /** The traced turns, sends and door stamps. */
  TurnTrace trace() {
    return trace;
  }

  /** The arrivals, each under the target its send was traced under. */
  List<dev.pacer.testing.Arrival> arrivals() {
    return keyed;
  }

  /**
   * The database's clock less this JVM's nanoTime, through {@link DatabaseClock}, which keeps the
   * reading of the shortest of five round trips.
   */
  private static long databaseMinusNanoTime(Connection c) throws SQLException {
    DatabaseClock clock = new DatabaseClock();
    try (PreparedStatement s =
        c.prepareStatement("SELECT (extract(epoch FROM clock_timestamp()) * 1000000)::bigint")) {
      for (int i = 0; i < 5; i++) {
        long asked = System.nanoTime();
        try (ResultSet r = s.executeQuery()) {
          r.next();
          clock.sample(asked, System.nanoTime(), r.getLong(1) * 1000);
        }
      }
    }
    return clock.databaseEpochNanos(0);
  }
}
