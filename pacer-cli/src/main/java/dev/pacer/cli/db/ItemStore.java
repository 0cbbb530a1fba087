package dev.pacer.cli.db;

import dev.pacer.cli.model.Secrets;
import dev.pacer.postgres.StatementLane;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The items of jobs and their leases. An item moves {@code pending → leased → done | failed |
 * pending (retry) | deferred}, or {@code pending → skipped} when the host's robots.txt disallows it
 * ({@link RobotsStore}). A claim is {@code FOR UPDATE SKIP LOCKED} with a lease that the claiming
 * worker keeps extending while it lives; an item whose lease has expired (its worker died) is
 * claimable again. Every transition out of {@code leased} names the claim's lease token, so a
 * worker whose lease was taken over cannot record the item a second time.
 *
 * <p><b>Every statement may be made twice.</b> A statement whose answer was lost with its
 * connection after it committed is made again, by {@code KeptConnection#call} or by the worker's
 * retry, and must then answer what its first run did rather than do it again. The lease token is
 * chosen by the claimant before its claim is made, and a claim made again with it answers the item
 * it leased instead of leasing another, which would stay leased, to nobody who knows it, until its
 * lease ran out. The token stays on the item after the transition out of {@code leased} that it
 * made, so that a record, a failure, a throttle or a release made again answers that it was made,
 * not that the lease was lost.
 *
 * <p><b>A crash of the server.</b> A worker's statements commit asynchronously ({@link
 * StoreConnection}'s commit mode), so a crash may forget the last few hundred milliseconds of
 * claims and records that their workers saw answered. An item whose record was forgotten is leased
 * again to the worker that believes it recorded, and one whose claim was forgotten is pending, to
 * be claimed by anyone, while the worker that claimed it fetches it. Three rules keep either from
 * being fetched twice. A worker records again, with the first heartbeat after an outage, the
 * outcomes it recorded in the last few seconds before it ({@code RecordedLately}): a record already
 * there is answered as such and changes nothing. A record or a heartbeat's extension takes an item
 * back by its token when nobody holds it and that token did not give it back (pending, its token
 * another or none). And for a while after an outage a claim takes no pending item until every
 * worker of the job seen within a lease before the server's last start has reported since, which
 * each does only after its heartbeat has recorded again and taken its items back; a worker that
 * died meanwhile holds the claims back for that while ({@code QueuedClaims.RETURN_GRACE_NANOS}) at
 * most.
 */
public final class ItemStore {

  private final StoreConnection connection;

  /** The calls of {@link #recordAndClaim}, those of one job, worker and lease made together. */
  private final StatementLane<Ask, Answer> lane =
      new StatementLane<>(
          Ask::sharesAStatementWith, this::makeTogether, e -> Answer.failed(new SQLException(e)));

  private final AtomicLong recordAndClaimStatements = new AtomicLong();

  /**
   * Claim tokens sent in a statement that was not answered: it may have committed, and the claim
   * made again with them must find the items they leased. Every other token is new, chosen by its
   * claimant ({@link #newLeaseToken}), and holds no item.
   */
  private final Set<String> unanswered = ConcurrentHashMap.newKeySet();

  ItemStore(StoreConnection connection) {
    this.connection = connection;
  }

  /** Deferred items of an earlier run become pending again. */
  public int reviveDeferred(String job) throws SQLException {
    return connection.call(
        c -> {
          try (PreparedStatement s =
              c.prepareStatement(
                  "UPDATE pacer_item SET state = 'pending', throttles = 0, not_before = now() WHERE"
                      + " job = ? AND state = 'deferred'")) {
            s.setString(1, job);
            return s.executeUpdate();
          }
        });
  }

  /** A leased item. */
  public record Item(
      String job, String key, String url, int failures, int throttles, String token) {}

  /**
   * A fetched item's outcome, to be recorded: its status, where its body is, its size and SHA-256
   * (hex), and whether its body is durable already (forced before it is recorded) or waits for the
   * worker's next durable point ({@link #markDurable}).
   */
  public record Done(
      Item item, int status, String bodyPath, long bytes, String sha256, boolean durable) {

    /** An outcome whose body was made durable before it is recorded, its digest not kept. */
    public Done(Item item, int status, String bodyPath, long bytes) {
      this(item, status, bodyPath, bytes, null, true);
    }
  }

  /** What {@link #recordAndClaim} did: whether {@code done} was recorded, and the item claimed. */
  public record RecordedAndClaimed(boolean recorded, Optional<Item> next) {}

  /**
   * What {@link #recordAndClaimMany} did: the lease tokens of the outcomes recorded, and the items
   * claimed, in the order of the claim tokens that leased them.
   */
  public record RecordedAndClaimedMany(Set<String> recorded, List<Item> claimed) {}

  /**
   * A transition of one item out of {@code leased} by its claim's lease token, {@code set} saying
   * what else it changes, that answers whether the item left its lease by that token: now, or in an
   * earlier run of the same transition whose answer was lost (the token stays on the row; see the
   * class comment). False: the lease was lost. Parameters: those of {@code set}, then the item
   * ({@link #bindItem}) twice.
   */
  private static String leavingLease(String set) {
    String item = " WHERE job = ? AND url_key = ? AND state %s 'leased' AND lease_token = ?";
    return "WITH moved AS (UPDATE pacer_item SET "
        + set
        + ", leased_by = NULL, lease_until = NULL"
        + String.format(item, "=")
        + " RETURNING 1)"
        + " SELECT EXISTS (SELECT 1 FROM moved)"
        + " OR EXISTS (SELECT 1 FROM pacer_item"
        + String.format(item, "<>")
        + ")";
  }

  /** Runs a {@link #leavingLease} statement whose item is bound from {@code from} on. */
  private static boolean leftLease(PreparedStatement s, int from, Item item) throws SQLException {
    bindItem(s, from, item);
    bindItem(s, from + 3, item);
    try (ResultSet r = s.executeQuery()) {
      r.next();
      return r.getBoolean(1);
    }
  }

  /**
   * Records {@code done} (if given) and claims the job's next claimable item for {@code workerId}
   * under the lease token {@code claimToken}, in one statement shared with every other call waiting
   * meanwhile. Made again with the same {@code claimToken} and {@code done} (its answer lost), it
   * answers the item that token leased and that {@code done} is recorded, and changes nothing more.
   * A fetch thread that has just fetched an item records it with its next claim, so an item costs a
   * share of one statement, not a round trip and a commit of its own to record and another to
   * claim: the claims and records of {@code pacer fetch} are most of PostgreSQL's work when no
   * ceiling binds. No item recorded is ever the one claimed, even with its lease run out. {@code
   * recorded} is false, as {@link #markDone}'s answer, if the lease was lost.
   *
   * <p><b>Calls waiting together</b> (a {@link StatementLane}). One such statement runs at a time;
   * the calls that arrive while it runs queue, and whichever of them takes the lane next makes them
   * all in one statement: every outcome recorded, and as many items claimed as there are claim
   * tokens, handed out in the order the calls queued. Each caller gets the answer its own statement
   * would have given, with the same lease and the same order of items. A failure fails every call
   * of the statement, and each caller decides whether to retry. On a busy worker the statements
   * grow with the load; an idle one makes each call alone, as it arrives.
   */
  public RecordedAndClaimed recordAndClaim(
      String job, Done done, String workerId, String claimToken, long leaseMillis)
      throws SQLException {
    RecordedAndClaimedMany made =
        recordAndClaimMany(
            job,
            done == null ? List.of() : List.of(done),
            workerId,
            List.of(claimToken),
            leaseMillis,
            true);
    return new RecordedAndClaimed(
        done != null && made.recorded().contains(done.item().token()),
        made.claimed().stream().findFirst());
  }

  /**
   * {@link #recordAndClaim} for several outcomes and several claims at once: records every one of
   * {@code dones} whose lease token still holds its item (a lease run out included, as long as no
   * other claim has taken the item since) or whose item nobody holds (see the class comment), and
   * claims an item for each of {@code claimTokens}: if {@code settled} (no outage lately), a
   * pending one or one whose lease ran out; otherwise a pending one once the fleet is back (see the
   * class comment). Made again with the same tokens and outcomes, it answers the same items and
   * outcomes, and changes nothing more.
   */
  public RecordedAndClaimedMany recordAndClaimMany(
      String job,
      List<Done> dones,
      String workerId,
      List<String> claimTokens,
      long leaseMillis,
      boolean settled)
      throws SQLException {
    Answer answer =
        lane.call(
                new Ask(
                    job,
                    List.copyOf(dones),
                    workerId,
                    List.copyOf(claimTokens),
                    leaseMillis,
                    settled))
            .orElseThrow(
                () -> new SQLException("interrupted while waiting to claim an item", "57014"));
    if (answer.failure() != null) {
      // Thrown in the thread that made the statement; a copy here names this caller's stack too.
      throw new SQLException(
          answer.failure().getMessage(), answer.failure().getSQLState(), answer.failure());
    }
    return answer.made();
  }

  /** What a call of {@link #recordAndClaimMany} asks. */
  private record Ask(
      String job,
      List<Done> dones,
      String workerId,
      List<String> claimTokens,
      long leaseMillis,
      boolean settled) {
    boolean sharesAStatementWith(Ask other) {
      return job.equals(other.job)
          && workerId.equals(other.workerId)
          && leaseMillis == other.leaseMillis
          && settled == other.settled;
    }
  }

  /**
   * What a call of {@link #recordAndClaimMany} is answered: what its statement made, or why not.
   */
  private record Answer(RecordedAndClaimedMany made, SQLException failure) {
    static Answer failed(SQLException failure) {
      return new Answer(null, failure);
    }
  }

  /** One statement for {@code together} (one job, worker and lease), an answer for each call. */
  private List<Answer> makeTogether(List<Ask> together) {
    Ask first = together.get(0);
    List<Done> dones = new ArrayList<>();
    List<String> claimTokens = new ArrayList<>();
    for (Ask ask : together) {
      dones.addAll(ask.dones());
      claimTokens.addAll(ask.claimTokens());
    }
    List<Answer> answers = new ArrayList<>(together.size());
    try {
      recordAndClaimStatements.incrementAndGet();
      Made made =
          recordAndClaimTogether(
              first.job(),
              dones,
              first.workerId(),
              first.leaseMillis(),
              claimTokens,
              first.settled());
      for (Ask ask : together) {
        Set<String> recorded = new HashSet<>();
        for (Done done : ask.dones()) {
          if (made.recorded().contains(done.item().token())) {
            recorded.add(done.item().token());
          }
        }
        List<Item> claimed = new ArrayList<>();
        for (String token : ask.claimTokens()) {
          Item item = made.claimed().get(token);
          if (item != null) {
            claimed.add(item);
          }
        }
        answers.add(new Answer(new RecordedAndClaimedMany(recorded, claimed), null));
      }
    } catch (SQLException e) {
      answers.clear();
      together.forEach(ask -> answers.add(Answer.failed(e)));
    }
    return answers;
  }

  /** What one shared statement did: the lease tokens recorded, and the items claimed by token. */
  record Made(Set<String> recorded, Map<String, Item> claimed, int recordedNow) {}

  /**
   * {@link RecordAndClaimStatement#run} on the store's connection. The statement looks for items
   * its tokens leased already only when one of them may have leased one: it is made again in this
   * call (its answer lost), or a token was in a statement that failed ({@link #unanswered}).
   */
  private Made recordAndClaimTogether(
      String job,
      List<Done> dones,
      String workerId,
      long leaseMillis,
      List<String> claimTokens,
      boolean settled)
      throws SQLException {
    boolean[] made = {claimTokens.stream().anyMatch(unanswered::contains)};
    boolean answered = false;
    try {
      Made answer =
          connection.call(
              c -> {
                boolean again = made[0];
                made[0] = true;
                return RecordAndClaimStatement.run(
                    c, job, dones, workerId, leaseMillis, claimTokens, again, settled);
              });
      answered = true;
      return answer;
    } finally {
      if (answered) {
        claimTokens.forEach(unanswered::remove);
      } else {
        unanswered.addAll(claimTokens);
      }
    }
  }

  /** Calls of {@link #recordAndClaim} queued for the lane now. */
  int queuedCalls() {
    return lane.queued();
  }

  /** Statements {@link #recordAndClaim} has made so far, shared or not. */
  long recordAndClaimStatements() {
    return recordAndClaimStatements.get();
  }

  /** Claims the next claimable item of the job for {@code workerId}, if any. */
  public Optional<Item> claim(String job, String workerId, long leaseMillis) throws SQLException {
    return recordAndClaim(job, null, workerId, newLeaseToken(), leaseMillis).next();
  }

  /** A lease token for a claim, chosen before the claim is made (see the class comment). */
  public static String newLeaseToken() {
    return UUID.randomUUID().toString();
  }

  /**
   * Extends the leases of the given claims of {@code workerId}: only those its threads still work
   * on, so that a claim whose answer was lost on the way lapses and returns to the job.
   */
  public int extendLeases(String workerId, Collection<Item> items, long leaseMillis)
      throws SQLException {
    return extendedLeases(workerId, items, leaseMillis, false).extended().size();
  }

  /**
   * What {@link #extendedLeases} did: the tokens whose leases it extended, how many of them it took
   * back (their items pending, their claims forgotten), and the tokens that hold their items still
   * with leases long enough to be left as they were ({@code fresh}).
   */
  public record Extension(Set<String> extended, int takenBack, Set<String> fresh) {
    public Extension {
      extended = Set.copyOf(extended);
      fresh = Set.copyOf(fresh);
    }
  }

  /**
   * {@link #extendLeases}, answering the tokens whose leases it extended: a lease run out is
   * extended too, as long as no other claim has taken its item since. With {@code takeBack}, an
   * item nobody holds (pending, and not given back by this token: a crash of the server forgot its
   * claim) is leased by its token again. A token it does not answer holds its item no more.
   */
  public Extension extendedLeases(
      String workerId, Collection<Item> items, long leaseMillis, boolean takeBack)
      throws SQLException {
    return extendedLeases(workerId, items, Set.of(), 0, leaseMillis, takeBack);
  }

  /**
   * {@link #extendedLeases(String, Collection, long, boolean)}, but the lease of an item of {@code
   * spare} that this worker holds by its token with more than {@code spareAboveMillis} left is not
   * written: it is answered {@linkplain Extension#fresh fresh}. Every other item is extended or
   * taken back as there. A lease is one row written, with every index over it: the heartbeat of a
   * worker holding thousands of items ahead rewrites only those whose leases have run down.
   */
  public Extension extendedLeases(
      String workerId,
      Collection<Item> items,
      Set<String> spare,
      long spareAboveMillis,
      long leaseMillis,
      boolean takeBack)
      throws SQLException {
    if (items.isEmpty()) {
      return new Extension(Set.of(), 0, Set.of());
    }
    return connection.call(
        c -> {
          try (PreparedStatement s =
              extension(c, "", workerId, items, spare, spareAboveMillis, leaseMillis, takeBack)) {
            Set<String> extended = new HashSet<>();
            Set<String> fresh = new HashSet<>();
            int takenBack = 0;
            try (ResultSet r = s.executeQuery()) {
              while (r.next()) {
                (r.getBoolean(3) ? fresh : extended).add(r.getString(1));
                takenBack += r.getBoolean(2) ? 1 : 0;
              }
            }
            return new Extension(extended, takenBack, fresh);
          }
        });
  }

  /**
   * {@link #EXTEND_LEASES} after {@code prefix} (an {@code EXPLAIN}, for a test of its plan),
   * prepared on {@code c} with the arguments of {@link #extendedLeases(String, Collection, Set,
   * long, long, boolean)}.
   */
  static PreparedStatement extension(
      Connection c,
      String prefix,
      String workerId,
      Collection<Item> items,
      Set<String> spare,
      long spareAboveMillis,
      long leaseMillis,
      boolean takeBack)
      throws SQLException {
    int n = items.size();
    List<String> jobs = new ArrayList<>(n);
    List<String> keys = new ArrayList<>(n);
    List<String> tokens = new ArrayList<>(n);
    // A lease is left alone while more than this is left of it: never, for an item not spared.
    List<Long> leaveAbove = new ArrayList<>(n);
    for (Item item : items) {
      jobs.add(item.job());
      keys.add(item.key());
      tokens.add(item.token());
      leaveAbove.add(spare.contains(item.token()) ? spareAboveMillis : leaseMillis + 1);
    }
    PreparedStatement s = c.prepareStatement(prefix + EXTEND_LEASES);
    try {
      s.setString(1, workerId);
      s.setArray(2, c.createArrayOf("text", jobs.toArray()));
      s.setArray(3, c.createArrayOf("text", keys.toArray()));
      s.setArray(4, c.createArrayOf("text", tokens.toArray()));
      s.setArray(5, c.createArrayOf("int8", leaveAbove.toArray()));
      s.setLong(6, leaseMillis);
      s.setString(7, workerId);
      s.setString(8, workerId);
      s.setBoolean(9, takeBack);
      return s;
    } catch (SQLException | RuntimeException e) {
      s.close();
      throw e;
    }
  }

  /**
   * The heartbeat's extension. Each token's item is found by one descent of the primary key and
   * written where that descent found it (its {@code ctid}, looked up as a list): with thousands of
   * tokens (a full buffer) a plain join is planned as a hash over every item of the table, or over
   * every leased and pending one, once a beat. The {@code LIMIT} keeps each descent a subquery of
   * its own (the key is unique: it limits nothing). A row another statement writes between the two
   * (its item recorded, say) is left, and its token answered not extended, as the state it was
   * written to would have it.
   */
  private static final String EXTEND_LEASES =
      "WITH d AS (SELECT d.job, d.url_key, d.token, q.row_id, q.state = 'pending' AS back,"
          + "   q.state = 'leased' AND q.leased_by = ? AND q.lease_token = d.token"
          + "     AND q.lease_until > now() + d.leave_above * interval '1 millisecond' AS fresh"
          + "   FROM unnest(?::text[], ?::text[], ?::text[], ?::bigint[])"
          + "     AS d(job, url_key, token, leave_above)"
          + "   CROSS JOIN LATERAL (SELECT ctid AS row_id, state, leased_by, lease_token,"
          + "       lease_until FROM pacer_item q"
          + "     WHERE q.job = d.job AND q.url_key = d.url_key LIMIT 1) q),"
          + " extended AS (UPDATE pacer_item p"
          + "   SET lease_until = now() + ? * interval '1 millisecond',"
          + "     state = 'leased', leased_by = ?, lease_token = d.token"
          + "   FROM d WHERE p.ctid = ANY (ARRAY(SELECT row_id FROM d WHERE NOT fresh))"
          + "     AND NOT d.fresh AND p.ctid = d.row_id AND p.job = d.job AND p.url_key = d.url_key"
          + "     AND ((p.state = 'leased' AND p.leased_by = ? AND p.lease_token = d.token)"
          + "       OR (?::boolean AND p.state = 'pending'"
          + "         AND p.lease_token IS DISTINCT FROM d.token))"
          + "   RETURNING d.token, d.back)"
          + " SELECT token, back, false FROM extended"
          + " UNION ALL SELECT token, false, true FROM d WHERE fresh";

  /**
   * Records again outcomes recorded before an outage, which a crash of the server may have
   * forgotten (see the class comment); one whose record is there is left as it is. Answers how many
   * had been forgotten and are recorded now.
   */
  public int recordAgain(String job, List<Done> dones) throws SQLException {
    if (dones.isEmpty()) {
      return 0;
    }
    return recordAndClaimTogether(job, dones, null, 0, List.of(), false).recordedNow();
  }

  /** Records a fetched item on its own. False if the lease was lost: another worker owns it now. */
  public boolean markDone(Done done) throws SQLException {
    return recordAndClaimTogether(done.item().job(), List.of(done), null, 0, List.of(), false)
        .recorded()
        .contains(done.item().token());
  }

  /**
   * Marks durable the items of {@code job} recorded done by these outcomes (their lease tokens),
   * once a durable point has covered their bodies; an item fetched again since (a verification
   * found its body damaged) is left alone. Made again, it changes nothing more. Answers how many it
   * marked.
   */
  public int markDurable(String job, Collection<Done> dones) throws SQLException {
    List<String> keys = new ArrayList<>();
    List<String> tokens = new ArrayList<>();
    for (Done done : dones) {
      keys.add(done.item().key());
      tokens.add(done.item().token());
    }
    return updateNotDurable(job, keys, tokens, "durable = true");
  }

  /** A done item whose body no durable point was seen to cover: what its record says of it. */
  public record Unverified(String key, String token, String bodyPath, long bytes, String sha256) {}

  /**
   * The job's items recorded done more than {@code olderThanMillis} ago whose bodies no durable
   * point was seen to cover: the worker that recorded them stopped uncleanly, since a live one
   * marks them within about a second. Younger ones may be a live worker's, on another machine.
   */
  public List<Unverified> notDurable(String job, long olderThanMillis) throws SQLException {
    return connection.call(
        c -> {
          try (PreparedStatement s =
              c.prepareStatement(
                  "SELECT url_key, lease_token, body_path, bytes, sha256 FROM pacer_item"
                      + " WHERE job = ? AND state = 'done' AND NOT durable"
                      + "   AND finished_at < now() - ? * interval '1 millisecond'"
                      + " ORDER BY finished_at")) {
            s.setString(1, job);
            s.setLong(2, olderThanMillis);
            List<Unverified> out = new ArrayList<>();
            try (ResultSet r = s.executeQuery()) {
              while (r.next()) {
                out.add(
                    new Unverified(
                        r.getString(1),
                        r.getString(2),
                        r.getString(3),
                        r.getLong(4),
                        r.getString(5)));
              }
            }
            return out;
          }
        });
  }

  /**
   * Marks durable the verified items whose bodies were found whole, once a durable point has
   * covered them. Answers how many it marked.
   */
  public int markVerified(String job, Collection<Unverified> whole) throws SQLException {
    return markUnverified(job, whole, "durable = true");
  }

  /**
   * Returns to the job, to be fetched again, the verified items whose bodies were found missing or
   * damaged. An item marked or returned by someone else meanwhile is left alone.
   */
  public int fetchAgain(String job, Collection<Unverified> damaged) throws SQLException {
    return markUnverified(
        job,
        damaged,
        "state = 'pending', not_before = now(), body_path = NULL, bytes = NULL,"
            + " sha256 = NULL, finished_at = NULL,"
            + " last_error = 'body missing or damaged after an unclean stop; fetched again'");
  }

  private int markUnverified(String job, Collection<Unverified> items, String set)
      throws SQLException {
    List<String> keys = new ArrayList<>();
    List<String> tokens = new ArrayList<>();
    for (Unverified u : items) {
      keys.add(u.key());
      tokens.add(u.token());
    }
    return updateNotDurable(job, keys, tokens, set);
  }

  /**
   * Sets {@code set} on the items of {@code job} named by {@code keys} that are done, not yet
   * durable, and still under the lease tokens {@code tokens} they were recorded with; answers how
   * many.
   */
  private int updateNotDurable(String job, List<String> keys, List<String> tokens, String set)
      throws SQLException {
    if (keys.isEmpty()) {
      return 0;
    }
    return connection.call(
        c -> {
          try (PreparedStatement s =
              c.prepareStatement(
                  "UPDATE pacer_item p SET "
                      + set
                      + " FROM unnest(?::text[], ?::text[]) AS d(url_key, token)"
                      + " WHERE p.job = ? AND p.url_key = d.url_key AND p.lease_token = d.token"
                      + "   AND p.state = 'done' AND NOT p.durable")) {
            s.setArray(1, c.createArrayOf("text", keys.toArray()));
            s.setArray(2, c.createArrayOf("text", tokens.toArray()));
            s.setString(3, job);
            return s.executeUpdate();
          }
        });
  }

  /**
   * Records a throttled attempt: retried after {@code retryMillis}, or left deferred for the next
   * run once it has been throttled {@code maxThrottles} times.
   */
  public boolean markThrottled(Item item, int status, long retryMillis, int maxThrottles)
      throws SQLException {
    return connection.call(
        c -> {
          try (PreparedStatement s =
              c.prepareStatement(
                  leavingLease(
                      "throttles = throttles + 1, state = CASE WHEN throttles + 1 >= ? THEN"
                          + " 'deferred' ELSE 'pending' END, not_before = now() + ? * interval '1"
                          + " millisecond', last_status = ?, last_error = 'throttled'"))) {
            s.setInt(1, maxThrottles);
            s.setLong(2, retryMillis);
            s.setInt(3, status);
            return leftLease(s, 4, item);
          }
        });
  }

  /**
   * Records an ordinary failure: retried after {@code retryMillis}, failed after maxAttempts.
   * {@code error} is kept redacted ({@link Secrets#redact}): a failure's message may name a URL it
   * was sent to, credentials and all.
   */
  public boolean markFailed(
      Item item, Integer status, String error, long retryMillis, int maxAttempts)
      throws SQLException {
    return connection.call(
        c -> {
          try (PreparedStatement s =
              c.prepareStatement(
                  leavingLease(
                      "failures = failures + 1,"
                          + " state = CASE WHEN failures + 1 >= ? THEN 'failed' ELSE 'pending' END,"
                          + " finished_at = CASE WHEN failures + 1 >= ? THEN now() END,"
                          + " not_before = now() + ? * interval '1 millisecond', last_status = ?,"
                          + " last_error = ?"))) {
            s.setInt(1, maxAttempts);
            s.setInt(2, maxAttempts);
            s.setLong(3, retryMillis);
            if (status == null) {
              s.setNull(4, Types.INTEGER);
            } else {
              s.setInt(4, status);
            }
            s.setString(5, Secrets.redact(error));
            return leftLease(s, 6, item);
          }
        });
  }

  /** Gives a claimed item back untouched (a halt or lockout stopped it before it was fetched). */
  public boolean release(Item item) throws SQLException {
    return connection.call(
        c -> {
          try (PreparedStatement s = c.prepareStatement(leavingLease("state = 'pending'"))) {
            return leftLease(s, 1, item);
          }
        });
  }

  /** Whether the job has open (pending or leased) items: one index probe, however big the job. */
  public boolean hasOpenItems(String job) throws SQLException {
    return connection.call(
        c -> {
          try (PreparedStatement s =
              c.prepareStatement(
                  "SELECT EXISTS (SELECT 1 FROM pacer_item"
                      + " WHERE job = ? AND state IN ('pending', 'leased'))")) {
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
    return connection.call(
        c -> {
          try (PreparedStatement s =
              c.prepareStatement(
                  "SELECT url FROM pacer_item"
                      + " WHERE job = ? AND state IN ('pending', 'leased') ORDER BY seq LIMIT 1")) {
            s.setString(1, job);
            try (ResultSet r = s.executeQuery()) {
              return r.next() ? Optional.of(r.getString(1)) : Optional.<String>empty();
            }
          }
        });
  }

  /**
   * Gives back every item {@code workerId} holds (it is shutting down). Each keeps its token, as
   * {@link #release} leaves it, so that no extension by it takes the item back.
   */
  public int releaseAll(String workerId) throws SQLException {
    return connection.call(
        c -> {
          try (PreparedStatement s =
              c.prepareStatement(
                  "UPDATE pacer_item SET state = 'pending', leased_by = NULL,"
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
  public record Counts(
      long total,
      long done,
      long failed,
      long deferred,
      long pending,
      long leased,
      long open,
      long skipped) {}

  public Counts counts(String job) throws SQLException {
    return connection.call(
        c -> {
          try (PreparedStatement s =
              c.prepareStatement(
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
              return new Counts(
                  r.getLong(1),
                  r.getLong(2),
                  r.getLong(3),
                  r.getLong(4),
                  r.getLong(5),
                  r.getLong(6),
                  r.getLong(7),
                  r.getLong(8));
            }
          }
        });
  }

  private static void bindItem(PreparedStatement s, int from, Item item) throws SQLException {
    s.setString(from, item.job());
    s.setString(from + 1, item.key());
    s.setString(from + 2, item.token());
  }
}
