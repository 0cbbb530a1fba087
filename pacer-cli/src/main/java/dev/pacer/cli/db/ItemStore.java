package dev.pacer.cli.db;

import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
import java.util.Collection;
import java.util.Optional;
import java.util.UUID;

/**
 * The items of jobs and their leases. An item moves
 * {@code pending → leased → done | failed | pending (retry) | deferred}, or {@code pending →
 * skipped} when the host's robots.txt disallows it ({@link RobotsStore}). A claim is
 * {@code FOR UPDATE SKIP LOCKED} with a lease that the claiming worker keeps extending while it
 * lives; an item whose lease has expired (its worker died) is claimable again. Every transition
 * out of {@code leased} names the claim's lease token, so a worker whose lease was taken over
 * cannot record the item a second time.
 */
public final class ItemStore {

  private final StoreConnection connection;

  ItemStore(StoreConnection connection) {
    this.connection = connection;
  }

  /** Deferred items of an earlier run become pending again. */
  public int reviveDeferred(String job) throws SQLException {
    return connection.call(c -> {
      try (PreparedStatement s = c.prepareStatement("UPDATE pacer_item SET state = 'pending',"
          + " throttles = 0, not_before = now() WHERE job = ? AND state = 'deferred'")) {
        s.setString(1, job);
        return s.executeUpdate();
      }
    });
  }

  /** A leased item. */
  public record Item(String job, String key, String url, int failures, int throttles, String token) {}

  /** A fetched item's outcome, to be recorded: its status, where its body is, its size. */
  public record Done(Item item, int status, String bodyPath, long bytes) {}

  /** What {@link #recordAndClaim} did: whether {@code done} was recorded, and the item claimed. */
  public record RecordedAndClaimed(boolean recorded, Optional<Item> next) {}

  /** The item leased by the claim's lease token: a transition out of {@code leased}. */
  private static final String LEASED_ITEM =
      " WHERE job = ? AND url_key = ? AND state = 'leased' AND lease_token = ?";
  /** A fetched item's outcome; its parameters: status, body path, bytes. */
  private static final String SET_DONE = "SET state = 'done', last_status = ?, last_error = NULL,"
      + " body_path = ?, bytes = ?, finished_at = now(), leased_by = NULL, lease_token = NULL,"
      + " lease_until = NULL";

  /**
   * One statement: records {@code done} (if given) and claims the job's next claimable item for
   * {@code workerId}. A fetch thread that has just fetched an item records it with its next claim,
   * so an item costs two round trips and two commits (this one and its turn on the cursor), not
   * three of each: the claims and records of {@code pacer fetch} are most of PostgreSQL's work
   * when no ceiling binds. The item being recorded is never the one claimed, even with its lease
   * run out. {@code recorded} is false, as {@link #markDone}'s answer, if the lease was lost.
   */
  public RecordedAndClaimed recordAndClaim(String job, Done done, String workerId,
      long leaseMillis) throws SQLException {
    String token = UUID.randomUUID().toString();
    return connection.call(c -> {
      try (PreparedStatement s = c.prepareStatement(
          "WITH done AS (UPDATE pacer_item " + SET_DONE + LEASED_ITEM + " RETURNING 1),"
              + " claimed AS (UPDATE pacer_item i SET state = 'leased', leased_by = ?,"
              + "   lease_token = ?, lease_until = now() + ? * interval '1 millisecond'"
              + "   WHERE (i.job, i.url_key) IN ("
              + "     SELECT job, url_key FROM pacer_item"
              + "     WHERE job = ? AND url_key IS DISTINCT FROM ?"
              + "       AND ((state = 'pending' AND not_before <= now())"
              + "         OR (state = 'leased' AND lease_until < now()))"
              + "     ORDER BY seq LIMIT 1 FOR UPDATE SKIP LOCKED)"
              + "   RETURNING i.url_key, i.url, i.failures, i.throttles)"
              + " SELECT (SELECT count(*) FROM done), n.url_key, n.url, n.failures, n.throttles"
              + " FROM (SELECT 1) one LEFT JOIN claimed n ON true")) {
        if (done == null) {
          s.setNull(1, Types.INTEGER);
          s.setNull(2, Types.VARCHAR);
          s.setNull(3, Types.BIGINT);
          s.setNull(4, Types.VARCHAR);
          s.setNull(5, Types.VARCHAR);
          s.setNull(6, Types.VARCHAR);
        } else {
          bindDone(s, done);
        }
        s.setString(7, workerId);
        s.setString(8, token);
        s.setLong(9, leaseMillis);
        s.setString(10, job);
        if (done == null) {
          s.setNull(11, Types.VARCHAR);
        } else {
          s.setString(11, done.item().key());
        }
        try (ResultSet r = s.executeQuery()) {
          r.next();
          boolean recorded = r.getLong(1) == 1;
          String key = r.getString(2);
          return new RecordedAndClaimed(recorded, key == null ? Optional.<Item>empty()
              : Optional.of(new Item(job, key, r.getString(3), r.getInt(4), r.getInt(5), token)));
        }
      }
    });
  }

  /** Claims the next claimable item of the job for {@code workerId}, if any. */
  public Optional<Item> claim(String job, String workerId, long leaseMillis)
      throws SQLException {
    return recordAndClaim(job, null, workerId, leaseMillis).next();
  }

  /**
   * Extends the leases of the given claims of {@code workerId}: only those its threads still work
   * on, so that a claim whose answer was lost on the way lapses and returns to the job.
   */
  public int extendLeases(String workerId, Collection<String> tokens,
      long leaseMillis) throws SQLException {
    if (tokens.isEmpty()) {
      return 0;
    }
    return connection.call(c -> {
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
  public boolean markDone(Done done) throws SQLException {
    return connection.call(c -> {
      try (PreparedStatement s = c.prepareStatement("UPDATE pacer_item " + SET_DONE + LEASED_ITEM)) {
        bindDone(s, done);
        return s.executeUpdate() == 1;
      }
    });
  }

  /**
   * Records a throttled attempt: retried after {@code retryMillis}, or left deferred for the next
   * run once it has been throttled {@code maxThrottles} times.
   */
  public boolean markThrottled(Item item, int status, long retryMillis,
      int maxThrottles) throws SQLException {
    return connection.call(c -> {
      try (PreparedStatement s = c.prepareStatement(
          "UPDATE pacer_item SET throttles = throttles + 1,"
              + " state = CASE WHEN throttles + 1 >= ? THEN 'deferred' ELSE 'pending' END,"
              + " not_before = now() + ? * interval '1 millisecond', last_status = ?,"
              + " last_error = 'throttled', leased_by = NULL, lease_token = NULL, lease_until = NULL"
              + LEASED_ITEM)) {
        s.setInt(1, maxThrottles);
        s.setLong(2, retryMillis);
        s.setInt(3, status);
        bindItem(s, 4, item);
        return s.executeUpdate() == 1;
      }
    });
  }

  /** Records an ordinary failure: retried after {@code retryMillis}, failed after maxAttempts. */
  public boolean markFailed(Item item, Integer status, String error,
      long retryMillis, int maxAttempts) throws SQLException {
    return connection.call(c -> {
      try (PreparedStatement s = c.prepareStatement(
          "UPDATE pacer_item SET failures = failures + 1,"
              + " state = CASE WHEN failures + 1 >= ? THEN 'failed' ELSE 'pending' END,"
              + " finished_at = CASE WHEN failures + 1 >= ? THEN now() END,"
              + " not_before = now() + ? * interval '1 millisecond', last_status = ?,"
              + " last_error = ?, leased_by = NULL, lease_token = NULL, lease_until = NULL"
              + LEASED_ITEM)) {
        s.setInt(1, maxAttempts);
        s.setInt(2, maxAttempts);
        s.setLong(3, retryMillis);
        if (status == null) {
          s.setNull(4, Types.INTEGER);
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
  public boolean release(Item item) throws SQLException {
    return connection.call(c -> {
      try (PreparedStatement s = c.prepareStatement(
          "UPDATE pacer_item SET state = 'pending', leased_by = NULL, lease_token = NULL,"
              + " lease_until = NULL" + LEASED_ITEM)) {
        bindItem(s, 1, item);
        return s.executeUpdate() == 1;
      }
    });
  }

  /** Whether the job has open (pending or leased) items: one index probe, however big the job. */
  public boolean hasOpenItems(String job) throws SQLException {
    return connection.call(c -> {
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
  public Optional<String> nextOpenUrl(String job) throws SQLException {
    return connection.call(c -> {
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
  public int releaseAll(String workerId) throws SQLException {
    return connection.call(c -> {
      try (PreparedStatement s = c.prepareStatement(
          "UPDATE pacer_item SET state = 'pending', leased_by = NULL, lease_token = NULL,"
              + " lease_until = NULL WHERE leased_by = ? AND state = 'leased'")) {
        s.setString(1, workerId);
        return s.executeUpdate();
      }
    });
  }

  /**
   * Item counts of a job. {@code open} is pending + leased: work some worker may still do; {@code
   * skipped}: kept from by robots.txt, for good.
   */
  public record Counts(long total, long done, long failed, long deferred, long pending,
      long leased, long open, long skipped) {}

  public Counts counts(String job) throws SQLException {
    return connection.call(c -> {
      try (PreparedStatement s = c.prepareStatement(
          "SELECT count(*),"
              + " count(*) FILTER (WHERE state = 'done'),"
              + " count(*) FILTER (WHERE state = 'failed'),"
              + " count(*) FILTER (WHERE state = 'deferred'"
              + "   OR (state IN ('pending', 'leased') AND throttles > 0)),"
              + " count(*) FILTER (WHERE state IN ('pending', 'leased') AND throttles = 0),"
              + " count(*) FILTER (WHERE state = 'leased'),"
              + " count(*) FILTER (WHERE state IN ('pending', 'leased')),"
              + " count(*) FILTER (WHERE state = 'skipped')"
              + " FROM pacer_item WHERE job = ?")) {
        s.setString(1, job);
        try (ResultSet r = s.executeQuery()) {
          r.next();
          return new Counts(r.getLong(1), r.getLong(2), r.getLong(3), r.getLong(4), r.getLong(5),
              r.getLong(6), r.getLong(7), r.getLong(8));
        }
      }
    });
  }

  /** Parameters 1 to 6: {@link #SET_DONE}'s, then {@link #LEASED_ITEM}'s. */
  private static void bindDone(PreparedStatement s, Done done) throws SQLException {
    s.setInt(1, done.status());
    s.setString(2, done.bodyPath());
    s.setLong(3, done.bytes());
    bindItem(s, 4, done.item());
  }

  private static void bindItem(PreparedStatement s, int from, Item item) throws SQLException {
    s.setString(from, item.job());
    s.setString(from + 1, item.key());
    s.setString(from + 2, item.token());
  }
}
