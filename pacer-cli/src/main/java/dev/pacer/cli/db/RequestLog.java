package dev.pacer.cli.db;

import dev.pacer.postgres.DatabaseClock;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.OptionalDouble;
import java.util.UUID;

/**
 * Every request the fleet sent, one row per request (each redirect hop is one), stamped on
 * PostgreSQL's clock: the clock the fleet's turns are computed on. From these rows {@code pacer
 * status} and the run's summary judge the ceiling where the destination judges it, at its door,
 * without a packet capture: how many requests, the rate they achieved, the busiest sliding 1-s
 * window, and how late each request left after its turn.
 *
 * <p>Workers stamp a request on their monotonic clock when it is handed to the network and map it
 * onto the database's clock with {@link #databaseEpochMicros}, through the process's {@link
 * DatabaseClock}: fed by {@link #sampleClock} and by every per-host claim, it keeps the reading
 * with the shortest round trip, so across hosts it removes their clock skew to within half of that
 * trip. Rows are appended in batches, so recording costs one statement per heartbeat, not one per
 * request.
 *
 * <p>The log has no connection of its own: it is a part of the work state ({@link
 * WorkState#requestLog}) and runs on its connections. Its statements are few (an append per
 * heartbeat, a clock reading a minute, the figures once at a run's end) and short, so beside a
 * worker's claims they queue for milliseconds, and a connection of their own would be one more
 * server backend per process for nothing. A clock reading is timed from inside its call, after the
 * connection is taken, so waiting for one does not widen its round trip.
 */
public final class RequestLog {

  /** One request, stamped on the database's clock. */
  public record Sent(
      String destination,
      String job,
      String worker,
      long sentEpochMicros,
      long latenessMicros,
      int hop,
      int status) {}

  /**
   * What the destination saw in a stretch of time.
   *
   * @param requests requests sent, redirect hops included
   * @param spanSeconds from the first to the last
   * @param achievedRatePerSecond (requests - 1) ÷ span: the rate they were delivered at
   * @param busiestOneSecondWindow the most requests in any window [t, t + 1 s)
   * @param latenessP50Millis median time from a turn's start to its request leaving
   * @param latenessP99Millis 99th percentile of the same
   * @param latenessMaxMillis the latest request
   */
  public record DoorFigures(
      long requests,
      double spanSeconds,
      double achievedRatePerSecond,
      int busiestOneSecondWindow,
      double latenessP50Millis,
      double latenessP99Millis,
      double latenessMaxMillis) {

    public static final DoorFigures NONE = new DoorFigures(0, 0, 0, 0, 0, 0, 0);
  }

  /**
   * The figures of the requests selected by {@code where}, in one statement. The window is
   * half-open, [t, t + 1 s): timestamps have microsecond precision, so it ends 999,999 µs after t.
   */
  private static final String FIGURES =
      "WITH r AS (SELECT sent_at, lateness_us FROM pacer_request"
          + " WHERE %s)"
          + " SELECT count(*), coalesce(extract(epoch FROM max(sent_at) - min(sent_at)), 0),"
          + "   coalesce((SELECT max(n) FROM (SELECT count(*) OVER (ORDER BY sent_at RANGE BETWEEN"
          + "     CURRENT ROW AND interval '999999 microseconds' FOLLOWING) AS n FROM r) w), 0),"
          + "   coalesce(percentile_disc(0.5) WITHIN GROUP (ORDER BY lateness_us), 0),"
          + "   coalesce(percentile_disc(0.99) WITHIN GROUP (ORDER BY lateness_us), 0),"
          + "   coalesce(max(lateness_us), 0)"
          + " FROM r";

  private final StoreConnection connection;
  private final DatabaseClock clock;

  RequestLog(StoreConnection connection, DatabaseClock clock) {
    this.connection = connection;
    this.clock = clock;
  }

  /** Reads the database's clock once, a sample for the process's {@link DatabaseClock}. */
  public void sampleClock() throws SQLException {
    connection.call(
        c -> {
          try (PreparedStatement s = c.prepareStatement("SELECT clock_timestamp()")) {
            long asked = System.nanoTime();
            try (ResultSet r = s.executeQuery()) {
              r.next();
              long answered = System.nanoTime();
              Instant now = r.getTimestamp(1).toInstant();
              clock.sample(asked, answered, now.getEpochSecond() * 1_000_000_000L + now.getNano());
              return null;
            }
          }
        });
  }

  /**
   * The local instant {@code sentNanos} ({@link System#nanoTime()}) on the database's clock, in
   * epoch microseconds; {@code wallEpochMicros}, the same instant on this process's wall clock,
   * until the database's clock was read once.
   */
  public long databaseEpochMicros(long sentNanos, long wallEpochMicros) {
    return clock.known()
        ? Math.floorDiv(clock.databaseEpochNanos(sentNanos), 1000)
        : wallEpochMicros;
  }

  /** The database's clock now. */
  public Instant databaseNow() throws SQLException {
    return connection.call(
        c -> {
          try (PreparedStatement s = c.prepareStatement("SELECT clock_timestamp()");
              ResultSet r = s.executeQuery()) {
            r.next();
            return r.getTimestamp(1).toInstant();
          }
        });
  }

  /**
   * Appends the requests, all of one worker, in one statement, as batch {@code batch} of that
   * worker. Made again with the same batch (its answer lost after it committed), it appends
   * nothing: a request logged twice would show the door a busier window than it saw. Only the
   * worker's last batch is remembered, so a worker appends its next batch only once this one is
   * appended. Committed durably whatever the session's commit mode (a worker's commits
   * asynchronously, see {@link StoreConnection}): the rows are what the door figures judge the
   * ceiling by, and rows a server crash forgot would show the door a quieter window than it saw.
   *
   * @throws IllegalArgumentException if the requests are not all of one worker
   */
  public void append(UUID batch, List<Sent> requests) throws SQLException {
    if (requests.isEmpty()) {
      return;
    }
    String worker = requests.get(0).worker();
    if (requests.stream().anyMatch(r -> !r.worker().equals(worker))) {
      throw new IllegalArgumentException("a batch holds the requests of one worker, " + worker);
    }
    int n = requests.size();
    String[] destinations = new String[n];
    String[] jobs = new String[n];
    String[] workers = new String[n];
    Timestamp[] sentAt = new Timestamp[n];
    Long[] lateness = new Long[n];
    Integer[] hops = new Integer[n];
    Integer[] statuses = new Integer[n];
    for (int i = 0; i < n; i++) {
      Sent r = requests.get(i);
      destinations[i] = r.destination();
      jobs[i] = r.job();
      workers[i] = r.worker();
      sentAt[i] = Timestamp.from(Instant.EPOCH.plus(r.sentEpochMicros(), ChronoUnit.MICROS));
      lateness[i] = r.latenessMicros();
      hops[i] = r.hop();
      statuses[i] = r.status() < 0 ? null : r.status();
    }
    connection.durableTransaction(
        c -> {
          try (PreparedStatement s =
              c.prepareStatement(
                  "WITH mark AS (INSERT INTO pacer_request_batch AS b (worker, batch) VALUES (?, ?)"
                      + " ON CONFLICT (worker) DO UPDATE SET batch = excluded.batch WHERE b.batch"
                      + " <> excluded.batch RETURNING 1) INSERT INTO pacer_request (destination,"
                      + " job, worker, sent_at, lateness_us, hop, status) SELECT * FROM"
                      + " unnest(?::text[], ?::text[], ?::text[], ?::timestamptz[], ?::bigint[],"
                      + " ?::integer[], ?::integer[]) WHERE EXISTS (SELECT 1 FROM mark)")) {
            s.setString(1, worker);
            s.setObject(2, batch);
            s.setArray(3, c.createArrayOf("text", destinations));
            s.setArray(4, c.createArrayOf("text", jobs));
            s.setArray(5, c.createArrayOf("text", workers));
            s.setArray(6, c.createArrayOf("timestamptz", sentAt));
            s.setArray(7, c.createArrayOf("bigint", lateness));
            s.setArray(8, c.createArrayOf("integer", hops));
            s.setArray(9, c.createArrayOf("integer", statuses));
            return s.executeUpdate();
          }
        });
  }

  /**
   * Every request to {@code destination} from {@code from} on, by any job: the ceiling is the
   * destination's, so a run is judged with whatever else reached the destination meanwhile.
   */
  public DoorFigures destinationSince(String destination, Instant from) throws SQLException {
    return figures("destination = ? AND sent_at >= ?", destination, Timestamp.from(from));
  }

  /**
   * Every request to the job's destination while the job was sending (from its first request to its
   * last), by any job.
   */
  public DoorFigures duringJob(String job, String destination) throws SQLException {
    return figures(
        "destination = ? AND sent_at BETWEEN"
            + " (SELECT min(sent_at) FROM pacer_request WHERE job = ?)"
            + " AND (SELECT max(sent_at) FROM pacer_request WHERE job = ?)",
        destination,
        job,
        job);
  }

  /**
   * Every request of {@code job} from {@code from} on, whatever its destination (per-host mode).
   */
  public DoorFigures jobSince(String job, Instant from) throws SQLException {
    return figures("job = ? AND sent_at >= ?", job, Timestamp.from(from));
  }

  /** A host's busiest 1-s window at its ceiling for a per-host job. */
  public record HostWindow(String host, int busiestOneSecondWindow, double ceiling) {}

  /**
   * The host of a per-host job nearest to (or furthest past) its ceiling + 1 in its busiest 1-s
   * window since {@code from}, counting every job's requests to it.
   */
  public Optional<HostWindow> busiestHost(String job, Instant from) throws SQLException {
    return connection.call(
        c -> {
          try (PreparedStatement s =
              c.prepareStatement(
                  "WITH r AS (SELECT q.destination, q.sent_at FROM pacer_request q JOIN"
                      + " pacer_frontier f   ON f.job = ? AND f.host = q.destination WHERE"
                      + " q.sent_at >= ?), w AS (SELECT destination, count(*) OVER (PARTITION BY"
                      + " destination ORDER BY sent_at   RANGE BETWEEN CURRENT ROW AND interval"
                      + " '999999 microseconds' FOLLOWING) AS n   FROM r), b AS (SELECT"
                      + " destination, max(n) AS busiest FROM w GROUP BY destination) SELECT"
                      + " b.destination, b.busiest, f.rate FROM b JOIN pacer_frontier f   ON f.job"
                      + " = ? AND f.host = b.destination ORDER BY b.busiest - f.rate DESC,"
                      + " b.destination LIMIT 1")) {
            s.setString(1, job);
            s.setTimestamp(2, Timestamp.from(from));
            s.setString(3, job);
            try (ResultSet r = s.executeQuery()) {
              return r.next()
                  ? Optional.of(new HostWindow(r.getString(1), r.getInt(2), r.getDouble(3)))
                  : Optional.<HostWindow>empty();
            }
          }
        });
  }

  /**
   * A host's requests of the last seconds, its busiest 1-s window in them, and its ceiling for the
   * job.
   */
  public record HostTraffic(
      String host, long requests, int busiestOneSecondWindow, OptionalDouble ceiling) {}

  /**
   * The hosts a per-host job sent to in the last seconds, busiest first against their ceilings:
   * {@code top} of them, of {@code hosts}, {@code aboveCeiling} of which had a 1-s window above
   * their ceiling + 1; {@code requests} to all of them.
   */
  public record BusiestHosts(List<HostTraffic> top, int hosts, int aboveCeiling, long requests) {}

  /**
   * The hosts the job sent to in the last {@code seconds} (found on the index {@code (job,
   * sent_at)}), each judged on every job's requests to it in that time (read host by host on the
   * index {@code (destination, sent_at)}: a host's ceiling is its own, whoever sends), ordered by
   * their busiest 1-s window as a share of their ceiling, then by requests.
   */
  public BusiestHosts busiestHosts(String job, double seconds, int top) throws SQLException {
    return connection.call(
        c -> {
          try (PreparedStatement s = c.prepareStatement(BUSIEST_HOSTS)) {
            long micros = Math.round(seconds * 1e6);
            s.setString(1, job);
            s.setLong(2, micros);
            s.setLong(3, micros);
            s.setString(4, job);
            s.setInt(5, top);
            List<HostTraffic> rows = new ArrayList<>();
            int hosts = 0;
            int above = 0;
            long requests = 0;
            try (ResultSet r = s.executeQuery()) {
              while (r.next()) {
                double rate = r.getDouble(4);
                rows.add(
                    new HostTraffic(
                        r.getString(1),
                        r.getLong(2),
                        r.getInt(3),
                        r.wasNull() ? OptionalDouble.empty() : OptionalDouble.of(rate)));
                hosts = r.getInt(5);
                above = r.getInt(6);
                requests = r.getLong(7);
              }
            }
            return new BusiestHosts(rows, hosts, above, requests);
          }
        });
  }

  /**
   * The start of the last seconds (a parameter, in µs). On {@code now()}, the statement's start,
   * which the planner reads when it estimates how many rows follow it (it cannot read a value
   * computed in the statement, and would guess a third of the log, to read whole).
   */
  private static final String SINCE = "now() - ?::bigint * interval '1 microsecond'";

  /**
   * Parameters: job, seconds (µs), seconds (µs), job, top. A 1-s window is above the ceiling when
   * it holds more than floor(ceiling) + 1 requests, as {@code Summary} judges a run.
   */
  static final String BUSIEST_HOSTS =
      "WITH h AS MATERIALIZED (SELECT DISTINCT q.destination AS host FROM pacer_request q"
          + "   WHERE q.job = ? AND q.sent_at >= "
          + SINCE
          + "),"
          + " r AS (SELECT h.host, x.sent_at FROM h CROSS JOIN LATERAL (SELECT q.sent_at"
          + "   FROM pacer_request q WHERE q.destination = h.host AND q.sent_at >= "
          + SINCE
          // A subquery per host, on the index: joined whole, the log would be read whole (no
          // index leads with sent_at) for every job's requests of the last seconds.
          + "   OFFSET 0) x), w AS (SELECT host, count(*) OVER (PARTITION BY host ORDER BY sent_at"
          + " RANGE BETWEEN   CURRENT ROW AND interval '999999 microseconds' FOLLOWING) AS n FROM"
          + " r), b AS (SELECT w.host, count(*) AS requests, max(w.n) AS busiest FROM w GROUP BY"
          + " w.host), j AS (SELECT b.*, f.rate FROM b LEFT JOIN pacer_frontier f   ON f.job = ?"
          + " AND f.host = b.host) SELECT host, requests, busiest, rate, count(*) OVER (),  "
          + " count(*) FILTER (WHERE busiest > floor(rate) + 1) OVER (), sum(requests) OVER () FROM"
          + " j ORDER BY busiest / rate DESC NULLS LAST, requests DESC, host LIMIT ?";

  private DoorFigures figures(String where, Object... parameters) throws SQLException {
    return connection.call(
        c -> {
          try (PreparedStatement s = c.prepareStatement(String.format(FIGURES, where))) {
            for (int i = 0; i < parameters.length; i++) {
              s.setObject(i + 1, parameters[i]);
            }
            try (ResultSet r = s.executeQuery()) {
              r.next();
              long requests = r.getLong(1);
              if (requests == 0) {
                return DoorFigures.NONE;
              }
              double span = r.getDouble(2);
              return new DoorFigures(
                  requests,
                  span,
                  span > 0 ? (requests - 1) / span : 0,
                  r.getInt(3),
                  r.getLong(4) / 1000.0,
                  r.getLong(5) / 1000.0,
                  r.getLong(6) / 1000.0);
            }
          }
        });
  }
}
