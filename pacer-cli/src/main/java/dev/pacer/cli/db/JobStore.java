package dev.pacer.cli.db;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Optional;
import java.util.OptionalDouble;

/**
 * Jobs, their items, trips and live workers, in PostgreSQL. Every statement is parameterised; the
 * only identifiers are this class's own constant table names.
 *
 * <p>An item moves {@code pending → leased → done | failed | pending (retry) | deferred}. A claim
 * is {@code FOR UPDATE SKIP LOCKED} with a lease that the claiming worker keeps extending while it
 * lives; an item whose lease has expired (its worker died) is claimable again. Every transition
 * out of {@code leased} names the claim's lease token, so a worker whose lease was taken over
 * cannot record the item a second time.
 *
 * <p>One connection per store, shared by the calling threads in turn; after a failure it is
 * discarded and the next call reconnects. Failures are thrown as {@link SQLException}: callers
 * decide whether to retry.
 */
public final class JobStore implements AutoCloseable {

  /** The schema, created idempotently under an advisory lock (concurrent creators serialise). */
  static final String[] SCHEMA = {
    "CREATE TABLE IF NOT EXISTS pacer_job (\n"
        + "  name        text        PRIMARY KEY,\n"
        + "  destination text        NOT NULL,\n"
        + "  created_at  timestamptz NOT NULL DEFAULT now(),\n"
        + "  ceiling     double precision)  -- the latest run's --rate",
    // A schema from before the ceiling was kept gains it. Only then: ALTER TABLE takes an
    // exclusive lock even when the column exists, and two invocations starting together (one
    // here, one enqueueing) would deadlock on it.
    "DO $$ BEGIN\n"
        + "  IF NOT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = 'pacer_job'::regclass\n"
        + "                 AND attname = 'ceiling' AND NOT attisdropped) THEN\n"
        + "    ALTER TABLE pacer_job ADD COLUMN ceiling double precision;\n"
        + "  END IF;\n"
        + "END $$",
    "CREATE TABLE IF NOT EXISTS pacer_item (\n"
        + "  job         text        NOT NULL REFERENCES pacer_job (name),\n"
        + "  url_key     text        NOT NULL,  -- SHA-256 of the URL: the idempotency key\n"
        + "  url         text        NOT NULL,\n"
        + "  seq         bigserial   NOT NULL,  -- claim order: input order\n"
        + "  state       text        NOT NULL DEFAULT 'pending'\n"
        + "              CHECK (state IN ('pending', 'leased', 'done', 'failed', 'deferred')),\n"
        + "  not_before  timestamptz NOT NULL DEFAULT now(),\n"
        + "  leased_by   text,\n"
        + "  lease_token text,\n"
        + "  lease_until timestamptz,\n"
        + "  failures    integer     NOT NULL DEFAULT 0,\n"
        + "  throttles   integer     NOT NULL DEFAULT 0,\n"
        + "  last_status integer,\n"
        + "  last_error  text,\n"
        + "  body_path   text,\n"
        + "  bytes       bigint,\n"
        + "  finished_at timestamptz,\n"
        + "  PRIMARY KEY (job, url_key))",
    "CREATE INDEX IF NOT EXISTS pacer_item_open ON pacer_item (job, seq)"
        + " WHERE state IN ('pending', 'leased')",
    "CREATE TABLE IF NOT EXISTS pacer_request (\n"
        + "  destination text        NOT NULL,\n"
        + "  job         text        NOT NULL,\n"
        + "  worker      text        NOT NULL,\n"
        + "  sent_at     timestamptz NOT NULL,  -- handed to the network, on PostgreSQL's clock\n"
        + "  lateness_us bigint      NOT NULL,  -- from the turn's start to sent_at\n"
        + "  hop         integer     NOT NULL,  -- 0: the item's URL; 1..: redirect hops\n"
        + "  status      integer)               -- null: no answer",
    "CREATE INDEX IF NOT EXISTS pacer_request_destination ON pacer_request (destination, sent_at)",
    "CREATE INDEX IF NOT EXISTS pacer_request_job ON pacer_request (job, sent_at)",
    "CREATE TABLE IF NOT EXISTS pacer_trip (\n"
        + "  id         bigserial   PRIMARY KEY,\n"
        + "  job        text        NOT NULL,\n"
        + "  bar        text        NOT NULL,\n"
        + "  figures    text        NOT NULL,\n"
        + "  host       text        NOT NULL,\n"
        + "  pid        bigint      NOT NULL,\n"
        + "  tripped_at timestamptz NOT NULL DEFAULT now(),\n"
        + "  acked_at   timestamptz,\n"
        + "  ack_note   text)",
    "CREATE TABLE IF NOT EXISTS pacer_worker (\n"
        + "  id          text        PRIMARY KEY,\n"
        + "  run_id      text        NOT NULL,\n"
        + "  job         text        NOT NULL,\n"
        + "  destination text        NOT NULL,\n"
        + "  host        text        NOT NULL,\n"
        + "  pid         bigint      NOT NULL,\n"
        + "  started_at  timestamptz NOT NULL DEFAULT now(),\n"
        + "  last_seen   timestamptz NOT NULL DEFAULT now(),\n"
        + "  state       text        NOT NULL,\n"
        + "  requests    bigint      NOT NULL DEFAULT 0,\n"
        + "  throttled   bigint      NOT NULL DEFAULT 0,\n"
        + "  degraded    boolean     NOT NULL DEFAULT false,\n"
        + "  backoff     integer     NOT NULL DEFAULT 1,\n"
        + "  rate        double precision NOT NULL DEFAULT 0)",
  };

  private static final long SCHEMA_LOCK = 0x7061636572L; // "pacer"

  private final StoreConnection connection;

  public JobStore(Database database) {
    this.connection = new StoreConnection(database);
  }

  public Database database() {
    return connection.database();
  }

  /** Connects (or reconnects) and creates the schema if missing. */
  public synchronized void ensureSchema() throws SQLException {
    call(c -> {
      c.setAutoCommit(false);
      try (Statement s = c.createStatement()) {
        s.execute("SELECT pg_advisory_xact_lock(" + SCHEMA_LOCK + ")");
        for (String ddl : SCHEMA) {
          s.execute(ddl);
        }
      }
      c.commit();
      c.setAutoCommit(true);
      return null;
    });
  }

  // ---------------------------------------------------------------- jobs and items

  /** The destination a job was created for, if the job exists. */
  public synchronized Optional<String> jobDestination(String job) throws SQLException {
    return call(c -> {
      try (PreparedStatement s = c.prepareStatement("SELECT destination FROM pacer_job WHERE name = ?")) {
        s.setString(1, job);
        try (ResultSet r = s.executeQuery()) {
          return r.next() ? Optional.of(r.getString(1)) : Optional.<String>empty();
        }
      }
    });
  }

  /**
   * Adds the URLs to the job, creating the job if needed; URLs already in it are skipped.
   *
   * @return how many were new
   */
  public synchronized int enqueue(String job, String destination, double ceiling,
      List<String> urls) throws SQLException {
    return call(c -> {
      c.setAutoCommit(false);
      try {
        try (PreparedStatement s = c.prepareStatement(
            "INSERT INTO pacer_job (name, destination, ceiling) VALUES (?, ?, ?)"
                + " ON CONFLICT (name) DO UPDATE SET ceiling = excluded.ceiling")) {
          s.setString(1, job);
          s.setString(2, destination);
          s.setDouble(3, ceiling);
          s.executeUpdate();
        }
        int added = 0;
        try (PreparedStatement s = c.prepareStatement(
            "INSERT INTO pacer_item (job, url_key, url) VALUES (?, ?, ?) ON CONFLICT DO NOTHING")) {
          int batched = 0;
          for (String url : urls) {
            s.setString(1, job);
            s.setString(2, UrlKeys.key(url));
            s.setString(3, url);
            s.addBatch();
            if (++batched == 1000) {
              added += sum(s.executeBatch());
              batched = 0;
            }
          }
          if (batched > 0) {
            added += sum(s.executeBatch());
          }
        }
        c.commit();
        return added;
      } catch (SQLException e) {
        c.rollback();
        throw e;
      } finally {
        c.setAutoCommit(true);
      }
    });
  }

  /** Deferred items of an earlier run become pending again. */
  public synchronized int reviveDeferred(String job) throws SQLException {
    return update("UPDATE pacer_item SET state = 'pending', throttles = 0, not_before = now()"
        + " WHERE job = ? AND state = 'deferred'", job);
  }

  /** A leased item. */
  public record Item(String job, String key, String url, int failures, int throttles, String token) {}

  /** Claims the next claimable item of the job for {@code workerId}, if any. */
  public synchronized Optional<Item> claim(String job, String workerId, long leaseMillis)
      throws SQLException {
    String token = java.util.UUID.randomUUID().toString();
    return call(c -> {
      try (PreparedStatement s = c.prepareStatement(
          "UPDATE pacer_item i SET state = 'leased', leased_by = ?, lease_token = ?,"
              + " lease_until = now() + ? * interval '1 millisecond'"
              + " WHERE (i.job, i.url_key) IN ("
              + "   SELECT job, url_key FROM pacer_item"
              + "   WHERE job = ? AND ((state = 'pending' AND not_before <= now())"
              + "                   OR (state = 'leased' AND lease_until < now()))"
              + "   ORDER BY seq LIMIT 1 FOR UPDATE SKIP LOCKED)"
              + " RETURNING i.url_key, i.url, i.failures, i.throttles")) {
        s.setString(1, workerId);
        s.setString(2, token);
        s.setLong(3, leaseMillis);
        s.setString(4, job);
        try (ResultSet r = s.executeQuery()) {
          if (!r.next()) {
            return Optional.<Item>empty();
          }
          return Optional.of(new Item(job, r.getString(1), r.getString(2), r.getInt(3),
              r.getInt(4), token));
        }
      }
    });
  }

  /**
   * Extends the leases of the given claims of {@code workerId}: only those its threads still work
   * on, so that a claim whose answer was lost on the way lapses and returns to the job.
   */
  public synchronized int extendLeases(String workerId, Collection<String> tokens,
      long leaseMillis) throws SQLException {
    if (tokens.isEmpty()) {
      return 0;
    }
    return call(c -> {
      try (PreparedStatement s = c.prepareStatement(
          "UPDATE pacer_item SET lease_until = now() + ? * interval '1 millisecond'"
              + " WHERE leased_by = ? AND state = 'leased' AND lease_token = ANY (?)")) {
        s.setLong(1, leaseMillis);
        s.setString(2, workerId);
        s.setArray(3, c.createArrayOf("text", tokens.toArray()));
        return s.executeUpdate();
      }
    });
  }

  /** Records a fetched item. False if the lease was lost: another worker owns it now. */
  public synchronized boolean markDone(Item item, int status, String bodyPath, long bytes)
      throws SQLException {
    return call(c -> {
      try (PreparedStatement s = c.prepareStatement(
          "UPDATE pacer_item SET state = 'done', last_status = ?, last_error = NULL,"
              + " body_path = ?, bytes = ?, finished_at = now(), leased_by = NULL,"
              + " lease_token = NULL, lease_until = NULL"
              + " WHERE job = ? AND url_key = ? AND state = 'leased' AND lease_token = ?")) {
        s.setInt(1, status);
        s.setString(2, bodyPath);
        s.setLong(3, bytes);
        bindItem(s, 4, item);
        return s.executeUpdate() == 1;
      }
    });
  }

  /**
   * Records a throttled attempt: retried after {@code retryMillis}, or left deferred for the next
   * run once it has been throttled {@code maxThrottles} times.
   */
  public synchronized boolean markThrottled(Item item, int status, long retryMillis,
      int maxThrottles) throws SQLException {
    return call(c -> {
      try (PreparedStatement s = c.prepareStatement(
          "UPDATE pacer_item SET throttles = throttles + 1,"
              + " state = CASE WHEN throttles + 1 >= ? THEN 'deferred' ELSE 'pending' END,"
              + " not_before = now() + ? * interval '1 millisecond', last_status = ?,"
              + " last_error = 'throttled', leased_by = NULL, lease_token = NULL, lease_until = NULL"
              + " WHERE job = ? AND url_key = ? AND state = 'leased' AND lease_token = ?")) {
        s.setInt(1, maxThrottles);
        s.setLong(2, retryMillis);
        s.setInt(3, status);
        bindItem(s, 4, item);
        return s.executeUpdate() == 1;
      }
    });
  }

  /** Records an ordinary failure: retried after {@code retryMillis}, failed after maxAttempts. */
  public synchronized boolean markFailed(Item item, Integer status, String error,
      long retryMillis, int maxAttempts) throws SQLException {
    return call(c -> {
      try (PreparedStatement s = c.prepareStatement(
          "UPDATE pacer_item SET failures = failures + 1,"
              + " state = CASE WHEN failures + 1 >= ? THEN 'failed' ELSE 'pending' END,"
              + " finished_at = CASE WHEN failures + 1 >= ? THEN now() END,"
              + " not_before = now() + ? * interval '1 millisecond', last_status = ?,"
              + " last_error = ?, leased_by = NULL, lease_token = NULL, lease_until = NULL"
              + " WHERE job = ? AND url_key = ? AND state = 'leased' AND lease_token = ?")) {
        s.setInt(1, maxAttempts);
        s.setInt(2, maxAttempts);
        s.setLong(3, retryMillis);
        if (status == null) {
          s.setNull(4, java.sql.Types.INTEGER);
        } else {
          s.setInt(4, status);
        }
        s.setString(5, error);
        bindItem(s, 6, item);
        return s.executeUpdate() == 1;
      }
    });
  }

  /** Gives a claimed item back untouched (a halt or lockout stopped it before it was fetched). */
  public synchronized boolean release(Item item) throws SQLException {
    return call(c -> {
      try (PreparedStatement s = c.prepareStatement(
          "UPDATE pacer_item SET state = 'pending', leased_by = NULL, lease_token = NULL,"
              + " lease_until = NULL WHERE job = ? AND url_key = ? AND state = 'leased'"
              + " AND lease_token = ?")) {
        bindItem(s, 1, item);
        return s.executeUpdate() == 1;
      }
    });
  }

  /** Whether the job has open (pending or leased) items: one index probe, however big the job. */
  public synchronized boolean hasOpenItems(String job) throws SQLException {
    return call(c -> {
      try (PreparedStatement s = c.prepareStatement(
          "SELECT EXISTS (SELECT 1 FROM pacer_item WHERE job = ? AND state IN ('pending', 'leased'))")) {
        s.setString(1, job);
        try (ResultSet r = s.executeQuery()) {
          r.next();
          return r.getBoolean(1);
        }
      }
    });
  }

  /** The URL of the job's next open item, if any: a sample of what the job fetches. */
  public synchronized Optional<String> nextOpenUrl(String job) throws SQLException {
    return call(c -> {
      try (PreparedStatement s = c.prepareStatement("SELECT url FROM pacer_item"
          + " WHERE job = ? AND state IN ('pending', 'leased') ORDER BY seq LIMIT 1")) {
        s.setString(1, job);
        try (ResultSet r = s.executeQuery()) {
          return r.next() ? Optional.of(r.getString(1)) : Optional.<String>empty();
        }
      }
    });
  }

  /** Gives back every item {@code workerId} holds (it is shutting down). */
  public synchronized int releaseAll(String workerId) throws SQLException {
    return call(c -> {
      try (PreparedStatement s = c.prepareStatement(
          "UPDATE pacer_item SET state = 'pending', leased_by = NULL, lease_token = NULL,"
              + " lease_until = NULL WHERE leased_by = ? AND state = 'leased'")) {
        s.setString(1, workerId);
        return s.executeUpdate();
      }
    });
  }

  /** Item counts of a job. {@code open} is pending + leased: work some worker may still do. */
  public record Counts(long total, long done, long failed, long deferred, long pending,
      long leased, long open) {}

  public synchronized Counts counts(String job) throws SQLException {
    return call(c -> {
      try (PreparedStatement s = c.prepareStatement(
          "SELECT count(*),"
              + " count(*) FILTER (WHERE state = 'done'),"
              + " count(*) FILTER (WHERE state = 'failed'),"
              + " count(*) FILTER (WHERE state = 'deferred'"
              + "   OR (state IN ('pending', 'leased') AND throttles > 0)),"
              + " count(*) FILTER (WHERE state IN ('pending', 'leased') AND throttles = 0),"
              + " count(*) FILTER (WHERE state = 'leased'),"
              + " count(*) FILTER (WHERE state IN ('pending', 'leased'))"
              + " FROM pacer_item WHERE job = ?")) {
        s.setString(1, job);
        try (ResultSet r = s.executeQuery()) {
          r.next();
          return new Counts(r.getLong(1), r.getLong(2), r.getLong(3), r.getLong(4), r.getLong(5),
              r.getLong(6), r.getLong(7));
        }
      }
    });
  }

  /** A job's counts, for {@code pacer status}. */
  /** A job; {@code ceiling} is its latest run's fleet-wide ceiling, if one was recorded. */
  public record JobRow(String name, String destination, OptionalDouble ceiling, Counts counts) {}

  public synchronized List<JobRow> jobs(String onlyJob) throws SQLException {
    record Named(String name, String destination, OptionalDouble ceiling) {}
    List<Named> named = call(c -> {
      try (PreparedStatement s = c.prepareStatement(
          "SELECT name, destination, ceiling FROM pacer_job WHERE (?::text IS NULL OR name = ?)"
              + " ORDER BY created_at, name")) {
        s.setString(1, onlyJob);
        s.setString(2, onlyJob);
        List<Named> out = new ArrayList<>();
        try (ResultSet r = s.executeQuery()) {
          while (r.next()) {
            double ceiling = r.getDouble(3);
            out.add(new Named(r.getString(1), r.getString(2),
                r.wasNull() ? OptionalDouble.empty() : OptionalDouble.of(ceiling)));
          }
        }
        return out;
      }
    });
    List<JobRow> rows = new ArrayList<>();
    for (Named j : named) {
      rows.add(new JobRow(j.name(), j.destination(), j.ceiling(), counts(j.name())));
    }
    return rows;
  }

  // ---------------------------------------------------------------- trips

  /** A recorded envelope breach. */
  public record Trip(long id, String job, String bar, String figures, String host, long pid,
      Instant trippedAt, Instant ackedAt, String ackNote) {}

  public synchronized long recordTrip(String job, String bar, String figures, String host,
      long pid) throws SQLException {
    return call(c -> {
      try (PreparedStatement s = c.prepareStatement(
          "INSERT INTO pacer_trip (job, bar, figures, host, pid) VALUES (?, ?, ?, ?, ?)"
              + " RETURNING id")) {
        s.setString(1, job);
        s.setString(2, bar);
        s.setString(3, figures);
        s.setString(4, host);
        s.setLong(5, pid);
        try (ResultSet r = s.executeQuery()) {
          r.next();
          return r.getLong(1);
        }
      }
    });
  }

  /** The oldest unacknowledged trip of the job, if any. */
  public synchronized Optional<Trip> openTrip(String job) throws SQLException {
    List<Trip> trips = trips(job, true);
    return trips.isEmpty() ? Optional.empty() : Optional.of(trips.get(0));
  }

  /** Trips, oldest first; of one job or all ({@code job} null); only open ones if asked. */
  public synchronized List<Trip> trips(String job, boolean openOnly) throws SQLException {
    return call(c -> {
      try (PreparedStatement s = c.prepareStatement(
          "SELECT id, job, bar, figures, host, pid, tripped_at, acked_at, ack_note FROM pacer_trip"
              + " WHERE (?::text IS NULL OR job = ?) AND (NOT ? OR acked_at IS NULL) ORDER BY id")) {
        s.setString(1, job);
        s.setString(2, job);
        s.setBoolean(3, openOnly);
        List<Trip> out = new ArrayList<>();
        try (ResultSet r = s.executeQuery()) {
          while (r.next()) {
            Timestamp acked = r.getTimestamp(8);
            out.add(new Trip(r.getLong(1), r.getString(2), r.getString(3), r.getString(4),
                r.getString(5), r.getLong(6), r.getTimestamp(7).toInstant(),
                acked == null ? null : acked.toInstant(), r.getString(9)));
          }
        }
        return out;
      }
    });
  }

  /** Acknowledges an open trip. False if there is no open trip with that id. */
  public synchronized boolean ackTrip(long id, String note) throws SQLException {
    return call(c -> {
      try (PreparedStatement s = c.prepareStatement(
          "UPDATE pacer_trip SET acked_at = now(), ack_note = ? WHERE id = ? AND acked_at IS NULL")) {
        s.setString(1, note);
        s.setLong(2, id);
        return s.executeUpdate() == 1;
      }
    });
  }

  // ---------------------------------------------------------------- workers

  /** What a worker process reports about itself each heartbeat. */
  public record WorkerRow(String id, String runId, String job, String destination, String host,
      long pid, String state, long requests, long throttled, boolean degraded, int backoff,
      double rate) {}

  public synchronized void upsertWorker(WorkerRow w) throws SQLException {
    call(c -> {
      try (PreparedStatement s = c.prepareStatement(
          "INSERT INTO pacer_worker (id, run_id, job, destination, host, pid, state, requests,"
              + " throttled, degraded, backoff, rate) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
              + " ON CONFLICT (id) DO UPDATE SET last_seen = now(), state = EXCLUDED.state,"
              + " requests = EXCLUDED.requests, throttled = EXCLUDED.throttled,"
              + " degraded = EXCLUDED.degraded, backoff = EXCLUDED.backoff, rate = EXCLUDED.rate")) {
        s.setString(1, w.id());
        s.setString(2, w.runId());
        s.setString(3, w.job());
        s.setString(4, w.destination());
        s.setString(5, w.host());
        s.setLong(6, w.pid());
        s.setString(7, w.state());
        s.setLong(8, w.requests());
        s.setLong(9, w.throttled());
        s.setBoolean(10, w.degraded());
        s.setInt(11, w.backoff());
        s.setDouble(12, w.rate());
        return s.executeUpdate();
      }
    });
  }

  /** Workers of one run ({@code runId}), or every worker seen within {@code maxAgeSeconds}. */
  public synchronized List<WorkerRow> workers(String runId, double maxAgeSeconds)
      throws SQLException {
    return call(c -> {
      try (PreparedStatement s = c.prepareStatement(
          "SELECT id, run_id, job, destination, host, pid, state, requests, throttled, degraded,"
              + " backoff, rate FROM pacer_worker"
              + " WHERE (?::text IS NULL OR run_id = ?)"
              + " AND (?::text IS NOT NULL OR last_seen > now() - ? * interval '1 second')"
              + " ORDER BY started_at, id")) {
        s.setString(1, runId);
        s.setString(2, runId);
        s.setString(3, runId);
        s.setDouble(4, maxAgeSeconds);
        List<WorkerRow> out = new ArrayList<>();
        try (ResultSet r = s.executeQuery()) {
          while (r.next()) {
            out.add(new WorkerRow(r.getString(1), r.getString(2), r.getString(3), r.getString(4),
                r.getString(5), r.getLong(6), r.getString(7), r.getLong(8), r.getLong(9),
                r.getBoolean(10), r.getInt(11), r.getDouble(12)));
          }
        }
        return out;
      }
    });
  }

  // ---------------------------------------------------------------- cursors (for status)

  /** A destination's cursor: how far its next turn is ahead of the database clock. */
  public record CursorRow(String name, double aheadSeconds, double idleSeconds) {}

  public synchronized List<CursorRow> cursors() throws SQLException {
    return call(c -> {
      List<CursorRow> out = new ArrayList<>();
      try (PreparedStatement s = c.prepareStatement(
          "SELECT name, extract(epoch FROM next_at - clock_timestamp()),"
              + " extract(epoch FROM clock_timestamp() - updated_at) FROM pacer_cursor ORDER BY name");
          ResultSet r = s.executeQuery()) {
        while (r.next()) {
          out.add(new CursorRow(r.getString(1), r.getDouble(2), r.getDouble(3)));
        }
      } catch (SQLException e) {
        if ("42P01".equals(e.getSQLState())) {
          return out; // no reservation was ever made: the table does not exist yet
        }
        throw e;
      }
      return out;
    });
  }

  // ---------------------------------------------------------------- plumbing

  private <T> T call(StoreConnection.SqlCall<T> body) throws SQLException {
    return connection.call(body);
  }

  private int update(String sql, String job) throws SQLException {
    return call(c -> {
      try (PreparedStatement s = c.prepareStatement(sql)) {
        s.setString(1, job);
        return s.executeUpdate();
      }
    });
  }

  private static void bindItem(PreparedStatement s, int from, Item item) throws SQLException {
    s.setString(from, item.job());
    s.setString(from + 1, item.key());
    s.setString(from + 2, item.token());
  }

  private static int sum(int[] counts) {
    int n = 0;
    for (int c : counts) {
      n += Math.max(0, c);
    }
    return n;
  }

  @Override
  public void close() {
    connection.close();
  }
}
