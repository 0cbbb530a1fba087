package dev.pacer.cli.db;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.cli.model.HaltReason;
import dev.pacer.postgres.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The work queue's invariants on a real PostgreSQL. */
class WorkStateTest {

  private static final AtomicInteger UNIQUE = new AtomicInteger();
  private WorkState store;
  private String job;

  @BeforeEach
  void open() throws Exception {
    store = new WorkState(new Database(TestDatabase.jdbcUrl()));
    store.ensureSchema();
    job = "store-test-" + ProcessHandle.current().pid() + "-" + UNIQUE.incrementAndGet();
  }

  /** A new enqueue's or trip's key. */
  /** Four items of host a, at 1/s. */
  private void enqueueFourItems() throws Exception {
    store
        .jobs()
        .enqueue(
            fresh(),
            job,
            "a",
            1.0,
            List.of("http://a/1", "http://a/2", "http://a/3", "http://a/4"));
  }

  private static String fresh() {
    return UUID.randomUUID().toString();
  }

  @AfterEach
  void close() {
    store.close();
  }

  @Test
  void theSchemasLastStatementCreatesTheObjectThatStandsForIt() {
    assertThat(WorkState.SCHEMA[WorkState.SCHEMA.length - 1])
        .contains(" " + WorkState.LAST_OBJECT + " ");
  }

  @Test
  void enqueueingTheSameInputTwiceAddsNothing() throws Exception {
    List<String> urls = List.of("http://a/1", "http://a/2", "http://a/3");
    assertThat(store.jobs().enqueue(fresh(), job, "a", 1.0, urls)).isEqualTo(3);
    assertThat(store.jobs().enqueue(fresh(), job, "a", 1.0, urls)).isZero();
    assertThat(store.jobs().enqueue(fresh(), job, "a", 1.0, List.of("http://a/3", "http://a/4")))
        .isEqualTo(1);
    assertThat(store.items().counts(job).total()).isEqualTo(4);
  }

  @Test
  void aClaimedItemIsNotClaimedAgainUntilItsLeaseExpires() throws Exception {
    store.jobs().enqueue(fresh(), job, "a", 1.0, List.of("http://a/1"));
    ItemStore.Item first = store.items().claim(job, "w1", 60_000).orElseThrow();
    assertThat(store.items().claim(job, "w2", 60_000)).isEmpty();
    TestDatabase.execute(
        "UPDATE pacer_item SET lease_until = now() - interval '1 second'"
            + " WHERE job = '"
            + job
            + "'");
    ItemStore.Item taken = store.items().claim(job, "w2", 60_000).orElseThrow();
    assertThat(taken.url()).isEqualTo(first.url());
    assertThat(taken.token()).isNotEqualTo(first.token());

    // The first worker's lease was taken over: its record is refused, the item counted once; the
    // second's, made again (as after a lost answer), is answered as recorded, and counted once.
    assertThat(store.items().markDone(new ItemStore.Done(first, 200, "/x", 1))).isFalse();
    assertThat(store.items().markDone(new ItemStore.Done(taken, 200, "/x", 1))).isTrue();
    assertThat(store.items().markDone(new ItemStore.Done(taken, 200, "/x", 1))).isTrue();
    assertThat(store.items().markDone(new ItemStore.Done(first, 200, "/x", 1))).isFalse();
    assertThat(store.items().counts(job).done()).isEqualTo(1);
  }

  /**
   * A worker's full buffer is thousands of leases, asked about every beat: with them the
   * extension's plan must still find each item by its key, never read the table through.
   */
  @Test
  void theExtensionOfAFullBufferFindsEachItemByItsKey() throws Exception {
    List<String> urls = IntStream.range(0, 6000).mapToObj(i -> "http://a/" + i).toList();
    store.jobs().enqueue(fresh(), job, "a", 1.0, urls);
    List<String> tokens =
        IntStream.range(0, 2000).mapToObj(i -> ItemStore.newLeaseToken()).toList();
    List<ItemStore.Item> buffered =
        store.items().recordAndClaimMany(job, List.of(), "w1", tokens, 60_000, true).claimed();
    assertThat(buffered).hasSize(2000);
    TestDatabase.execute("ANALYZE pacer_item");
    StringBuilder plan = new StringBuilder();
    try (Connection c = TestDatabase.connect();
        PreparedStatement s =
            ItemStore.extension(
                c, "EXPLAIN ", "w1", buffered, Set.copyOf(tokens), 40_000, 60_000, true);
        ResultSet r = s.executeQuery()) {
      while (r.next()) {
        plan.append(r.getString(1)).append('\n');
      }
    }
    List<String> scans =
        plan.toString().lines().filter(l -> l.matches(".*Scan.* on pacer_item .*")).toList();
    assertThat(scans)
        .as("every read of pacer_item in%n%s", plan)
        .isNotEmpty()
        .allMatch(
            l -> l.contains("Index Scan using pacer_item_pkey on") || l.contains("Tid Scan on"));
  }

  @Test
  void afterAnOutageALapsedLeaseIsExtendedAndRecordedByItsWorkerUntilAnotherClaimsIt()
      throws Exception {
    store.jobs().enqueue(fresh(), job, "a", 1.0, List.of("http://a/1", "http://a/2"));
    ItemStore.RecordedAndClaimedMany ahead =
        store
            .items()
            .recordAndClaimMany(
                job,
                List.of(),
                "w1",
                List.of(ItemStore.newLeaseToken(), ItemStore.newLeaseToken()),
                60_000,
                true);
    assertThat(ahead.claimed()).hasSize(2);
    ItemStore.Item fetched = ahead.claimed().get(0);
    ItemStore.Item buffered = ahead.claimed().get(1);
    TestDatabase.execute(
        "UPDATE pacer_item SET lease_until = now() - interval '1 second'"
            + " WHERE job = '"
            + job
            + "'");
    // A worker back from an outage claims no lapsed item: their workers are back too.
    assertThat(
            store
                .items()
                .recordAndClaimMany(
                    job, List.of(), "w2", List.of(ItemStore.newLeaseToken()), 60_000, false)
                .claimed())
        .isEmpty();
    assertThat(store.items().extendedLeases("w1", List.of(buffered), 60_000, true).extended())
        .containsExactly(buffered.token());
    ItemStore.RecordedAndClaimedMany recorded =
        store
            .items()
            .recordAndClaimMany(
                job,
                List.of(new ItemStore.Done(fetched, 200, "/x", 1)),
                "w1",
                List.of(),
                60_000,
                false);
    assertThat(recorded.recorded()).containsExactly(fetched.token());
    assertThat(store.items().counts(job).done()).isEqualTo(1);
  }

  /**
   * A crash of the server forgets a worker's last claims and records (asynchronous commits): the
   * worker records again what it recorded lately, and takes back the items it holds, and until it
   * has reported since the server's start no other worker claims a pending item.
   */
  @Test
  void whatACrashForgotIsRecordedAgainAndTakenBackBeforeAnotherWorkerClaims() throws Exception {
    enqueueFourItems();
    List<ItemStore.Item> held = claim("w1", 3, true);
    ItemStore.Item recorded = held.get(0);
    ItemStore.Item buffered = held.get(1);
    ItemStore.Item kept = held.get(2);
    assertThat(store.items().markDone(new ItemStore.Done(recorded, 200, "/x", 1))).isTrue();
    // The crash: the record and the two first claims forgotten, the last claim kept.
    forget(recorded);
    forget(buffered);
    seen("w1", "pg_postmaster_start_time() - interval '1 second'");
    assertThat(claim("w2", 1, false)).as("w1 not back yet").isEmpty();

    ItemStore.Done done = new ItemStore.Done(recorded, 200, "/x", 1);
    ItemStore.Done keptDone = new ItemStore.Done(kept, 200, "/x", 1);
    assertThat(store.items().recordAgain(job, List.of(done))).as("forgotten").isEqualTo(1);
    assertThat(store.items().recordAgain(job, List.of(done))).as("recorded").isZero();
    ItemStore.Extension extension =
        store.items().extendedLeases("w1", List.of(buffered, kept), 60_000, true);
    assertThat(extension.extended()).containsExactlyInAnyOrder(buffered.token(), kept.token());
    assertThat(extension.takenBack()).isEqualTo(1);
    assertThat(store.items().recordAgain(job, List.of(keptDone))).isEqualTo(1);
    seen("w1", "now()");
    assertThat(claim("w2", 2, false))
        .as("w1 back: only the item nobody held")
        .extracting(ItemStore.Item::url)
        .containsExactly("http://a/4");
    assertThat(store.items().counts(job).done()).isEqualTo(2);
    assertThat(store.items().counts(job).leased()).isEqualTo(2);
  }

  /**
   * The heartbeat leaves a spared lease with more than its margin left as it was, answered fresh,
   * and writes every other: a spared one run down, one not spared, a forgotten claim taken back.
   */
  @Test
  void aSparedLeaseWithMoreThanItsMarginLeftIsLeftAsItWas() throws Exception {
    enqueueFourItems();
    List<ItemStore.Item> held = claim("w1", 4, true);
    ItemStore.Item untouched = held.get(0);
    ItemStore.Item runDown = held.get(1);
    ItemStore.Item notSpared = held.get(2);
    ItemStore.Item forgotten = held.get(3);
    TestDatabase.execute(
        "UPDATE pacer_item SET lease_until = now() + interval '20 seconds' WHERE job = '"
            + job
            + "' AND url_key = '"
            + runDown.key()
            + "'");
    forget(forgotten);
    Map<String, String> before = leasesUntil();

    ItemStore.Extension extension =
        store
            .items()
            .extendedLeases(
                "w1",
                held,
                Set.of(untouched.token(), runDown.token(), forgotten.token()),
                30_000,
                60_000,
                true);

    assertThat(extension.fresh()).containsExactly(untouched.token());
    assertThat(extension.extended())
        .containsExactlyInAnyOrder(runDown.token(), notSpared.token(), forgotten.token());
    assertThat(extension.takenBack()).isEqualTo(1);
    Map<String, String> after = leasesUntil();
    assertThat(after.get(untouched.key())).isEqualTo(before.get(untouched.key()));
    assertThat(after.get(runDown.key())).isNotEqualTo(before.get(runDown.key()));
    assertThat(after.get(notSpared.key())).isNotEqualTo(before.get(notSpared.key()));
    assertThat(store.items().counts(job).leased()).isEqualTo(4);
  }

  /** Each item of the job's lease end, by key, as PostgreSQL prints it. */
  private Map<String, String> leasesUntil() throws SQLException {
    Map<String, String> until = new java.util.HashMap<>();
    try (Connection c = TestDatabase.connect();
        PreparedStatement s =
            c.prepareStatement("SELECT url_key, lease_until::text FROM pacer_item WHERE job = ?")) {
      s.setString(1, job);
      try (ResultSet r = s.executeQuery()) {
        while (r.next()) {
          until.put(r.getString(1), r.getString(2));
        }
      }
    }
    return until;
  }

  @Test
  void anItemGivenBackByItsTokenIsNeitherTakenBackNorRecordedByIt() throws Exception {
    store.jobs().enqueue(fresh(), job, "a", 1.0, List.of("http://a/1"));
    ItemStore.Item given = store.items().claim(job, "w1", 60_000).orElseThrow();
    assertThat(store.items().release(given)).isTrue();
    assertThat(store.items().extendedLeases("w1", List.of(given), 60_000, true).extended())
        .isEmpty();
    assertThat(store.items().markDone(new ItemStore.Done(given, 200, "/x", 1))).isFalse();
    assertThat(store.items().counts(job).pending()).isEqualTo(1);
    // Without taking back (a heartbeat of a worker that stops), a forgotten claim is not retaken.
    ItemStore.Item claimed = store.items().claim(job, "w1", 60_000).orElseThrow();
    forget(claimed);
    assertThat(store.items().extendedLeases("w1", List.of(claimed), 60_000, false).extended())
        .isEmpty();
    assertThat(store.items().extendedLeases("w1", List.of(claimed), 60_000, true).extended())
        .containsExactly(claimed.token());
  }

  private List<ItemStore.Item> claim(String worker, int n, boolean settled) throws Exception {
    List<String> tokens = new java.util.ArrayList<>();
    for (int i = 0; i < n; i++) {
      tokens.add(ItemStore.newLeaseToken());
    }
    return store
        .items()
        .recordAndClaimMany(job, List.of(), worker, tokens, 60_000, settled)
        .claimed();
  }

  /** The item as a crash that forgot its claim leaves it: pending, its token gone. */
  private void forget(ItemStore.Item item) throws Exception {
    TestDatabase.execute(
        "UPDATE pacer_item SET state = 'pending', leased_by = NULL, lease_token = NULL,"
            + " lease_until = NULL, finished_at = NULL WHERE job = '"
            + job
            + "' AND url_key = '"
            + item.key()
            + "'");
  }

  /** {@code worker} of the job, running, last seen at {@code when} (an SQL expression). */
  private void seen(String worker, String when) throws Exception {
    TestDatabase.execute(
        "INSERT INTO pacer_worker (id, run_id, job, destination, host, pid, state, last_seen)"
            + " VALUES ('"
            + job
            + worker
            + "', 'r', '"
            + job
            + "', 'a', 'h', 1, 'running', "
            + when
            + ") ON CONFLICT (id) DO UPDATE SET last_seen = EXCLUDED.last_seen");
  }

  @Test
  void aRecordRidesOnTheNextClaimAndNeverClaimsTheItemItRecords() throws Exception {
    store.jobs().enqueue(fresh(), job, "a", 1.0, List.of("http://a/1", "http://a/2"));
    ItemStore.Item first = store.items().claim(job, "w1", 60_000).orElseThrow();
    // Its lease has run out, so a claim could take it again: not the one that records it.
    TestDatabase.execute(
        "UPDATE pacer_item SET lease_until = now() - interval '1 second'"
            + " WHERE job = '"
            + job
            + "'");

    ItemStore.RecordedAndClaimed both =
        store
            .items()
            .recordAndClaim(
                job,
                new ItemStore.Done(first, 200, "/1", 10),
                "w1",
                ItemStore.newLeaseToken(),
                60_000);
    assertThat(both.recorded()).isTrue();
    ItemStore.Item second = both.next().orElseThrow();
    assertThat(second.url()).isEqualTo("http://a/2");
    assertThat(store.items().counts(job).done()).isEqualTo(1);

    // Recorded already by its own lease (a record made again, its answer lost): answered as
    // recorded, and counted once; nothing left to claim.
    ItemStore.RecordedAndClaimed again =
        store
            .items()
            .recordAndClaim(
                job,
                new ItemStore.Done(first, 200, "/1", 10),
                "w1",
                ItemStore.newLeaseToken(),
                60_000);
    assertThat(again.recorded()).isTrue();
    assertThat(again.next()).isEmpty();
    assertThat(store.items().counts(job).done()).isEqualTo(1);

    assertThat(
            store
                .items()
                .recordAndClaim(
                    job,
                    new ItemStore.Done(second, 200, "/2", 10),
                    "w1",
                    ItemStore.newLeaseToken(),
                    60_000))
        .isEqualTo(new ItemStore.RecordedAndClaimed(true, java.util.Optional.empty()));
    ItemStore.Counts counts = store.items().counts(job);
    assertThat(counts.done()).isEqualTo(2);
    assertThat(counts.open()).isZero();
  }

  @Test
  void recordsAndClaimsWaitingTogetherShareOneStatementAndKeepTheirOrder() throws Exception {
    int callers = 12;
    List<String> urls = new java.util.ArrayList<>();
    for (int i = 0; i < 2 * callers; i++) {
      urls.add("http://a/" + i);
    }
    store.jobs().enqueue(fresh(), job, "a", 1.0, urls);
    List<ItemStore.Item> fetched = new java.util.ArrayList<>();
    for (int i = 0; i < callers; i++) {
      fetched.add(store.items().claim(job, "w1", 60_000).orElseThrow());
    }
    long statementsBefore = store.items().recordAndClaimStatements();
    java.util.concurrent.ExecutorService threads =
        java.util.concurrent.Executors.newFixedThreadPool(callers);
    try (java.sql.Connection holder = TestDatabase.connect()) {
      // The first fetched item's row, locked by another transaction, holds the first caller's
      // statement, and with it the lane, while the others queue behind it one by one.
      holder.setAutoCommit(false);
      try (java.sql.PreparedStatement lock =
          holder.prepareStatement(
              "SELECT 1 FROM pacer_item WHERE job = ? AND url_key = ? FOR UPDATE")) {
        lock.setString(1, job);
        lock.setString(2, fetched.get(0).key());
        lock.executeQuery().close();
      }
      List<java.util.concurrent.Future<ItemStore.RecordedAndClaimed>> answers =
          new java.util.ArrayList<>();
      for (int i = 0; i < callers; i++) {
        ItemStore.Done done = new ItemStore.Done(fetched.get(i), 200, "/" + i, i);
        answers.add(
            threads.submit(
                () ->
                    store
                        .items()
                        .recordAndClaim(job, done, "w1", ItemStore.newLeaseToken(), 60_000)));
        int queued = i;
        awaitTrue(
            () -> queued == 0 ? blockedOnALock(holder) : store.items().queuedCalls() == queued);
      }
      holder.commit();
      java.util.Set<String> tokens = new java.util.HashSet<>();
      for (int i = 0; i < callers; i++) {
        ItemStore.RecordedAndClaimed answer =
            answers.get(i).get(20, java.util.concurrent.TimeUnit.SECONDS);
        assertThat(answer.recorded()).as("caller %d's record", i).isTrue();
        ItemStore.Item next = answer.next().orElseThrow();
        assertThat(next.url())
            .as("caller %d's claim, in the order the callers queued", i)
            .isEqualTo("http://a/" + (callers + i));
        tokens.add(next.token());
      }
      assertThat(tokens).as("a lease token of its own for every item claimed").hasSize(callers);
    } finally {
      threads.shutdownNow();
    }
    assertThat(store.items().recordAndClaimStatements() - statementsBefore)
        .as("the first caller's statement, then one for all those that queued behind it")
        .isEqualTo(2);
    ItemStore.Counts counts = store.items().counts(job);
    assertThat(counts.done()).isEqualTo(callers);
    assertThat(counts.leased()).isEqualTo(callers);
    for (int i = 0; i < callers; i++) {
      ItemStore.Done again = new ItemStore.Done(fetched.get(i), 200, "/" + i, i);
      assertThat(store.items().markDone(again))
          .as("made again, answered as made, item %d", i)
          .isTrue();
    }
    assertThat(store.items().counts(job).done()).as("each recorded once").isEqualTo(callers);
  }

  /**
   * Whether a statement of another session is waiting for a lock {@code holder}'s session holds.
   */
  private static boolean blockedOnALock(java.sql.Connection holder) throws Exception {
    try (java.sql.Statement s = holder.createStatement();
        java.sql.ResultSet r =
            s.executeQuery(
                "SELECT count(*) FROM pg_stat_activity"
                    + " WHERE pg_backend_pid() = ANY (pg_blocking_pids(pid))")) {
      r.next();
      return r.getLong(1) > 0;
    }
  }

  private static void awaitTrue(Callable<Boolean> condition) throws Exception {
    long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(20);
    while (!condition.call()) {
      assertThat(System.nanoTime()).as("waited 20 s for the callers to queue").isLessThan(deadline);
      Thread.sleep(5);
    }
  }

  @Test
  void heartbeatsKeepALeaseAlive() throws Exception {
    store.jobs().enqueue(fresh(), job, "a", 1.0, List.of("http://a/1"));
    store.jobs().enqueue(fresh(), job, "a", 1.0, List.of("http://a/2"));
    ItemStore.Item kept = store.items().claim(job, "w1", 60_000).orElseThrow();
    ItemStore.Item lost = store.items().claim(job, "w1", 60_000).orElseThrow();
    TestDatabase.execute(
        "UPDATE pacer_item SET lease_until = now() - interval '1 second'"
            + " WHERE job = '"
            + job
            + "'");
    // Only claims a thread still works on are extended; one whose answer was lost lapses.
    assertThat(store.items().extendLeases("w1", List.of(kept), 60_000)).isEqualTo(1);
    assertThat(store.items().extendLeases("w2", List.of(kept), 60_000)).isZero();
    assertThat(store.items().claim(job, "w2", 60_000))
        .hasValueSatisfying(item -> assertThat(item.url()).isEqualTo(lost.url()));
    assertThat(store.items().claim(job, "w2", 60_000)).isEmpty();
  }

  @Test
  void throttledItemsWaitTheirRetryAndAreDeferredAfterTheLimit() throws Exception {
    store.jobs().enqueue(fresh(), job, "a", 1.0, List.of("http://a/1"));
    ItemStore.Item item = store.items().claim(job, "w1", 60_000).orElseThrow();
    assertThat(store.items().markThrottled(item, 429, 60_000, 2)).isTrue();
    assertThat(store.items().claim(job, "w1", 60_000)).as("not before its retry time").isEmpty();
    assertThat(store.items().counts(job).deferred()).isEqualTo(1);
    TestDatabase.execute("UPDATE pacer_item SET not_before = now() WHERE job = '" + job + "'");
    item = store.items().claim(job, "w1", 60_000).orElseThrow();
    assertThat(store.items().markThrottled(item, 429, 0, 2)).isTrue();
    ItemStore.Counts counts = store.items().counts(job);
    assertThat(counts.open()).isZero();
    assertThat(counts.deferred()).isEqualTo(1);
    assertThat(store.items().reviveDeferred(job)).isEqualTo(1);
    assertThat(store.items().claim(job, "w1", 60_000)).isPresent();
  }

  @Test
  void anItemFailsAfterItsLastAttemptWithItsStatus() throws Exception {
    store.jobs().enqueue(fresh(), job, "a", 1.0, List.of("http://a/1"));
    ItemStore.Item item = store.items().claim(job, "w1", 60_000).orElseThrow();
    assertThat(store.items().markFailed(item, 500, "HTTP 500", 0, 2)).isTrue();
    assertThat(store.items().counts(job).failed()).isZero();
    item = store.items().claim(job, "w1", 60_000).orElseThrow();
    assertThat(item.failures()).isEqualTo(1);
    assertThat(store.items().hasOpenItems(job)).isTrue();
    assertThat(store.items().markFailed(item, null, "network error", 0, 2)).isTrue();
    ItemStore.Counts counts = store.items().counts(job);
    assertThat(counts.failed()).isEqualTo(1);
    assertThat(counts.open()).isZero();
    assertThat(store.items().hasOpenItems(job)).isFalse();
  }

  /** A failure's message may name the URL it went to (a redirect's), credentials and all. */
  @Test
  void aFailureIsKeptWithoutTheCredentialsOfAUrlItsMessageNames() throws Exception {
    store.jobs().enqueue(fresh(), job, "a", 1.0, List.of("http://a/1"));
    ItemStore.Item item = store.items().claim(job, "w1", 60_000).orElseThrow();
    assertThat(
            store
                .items()
                .markFailed(item, 404, "HTTP 404 from https://user:Pw-in-redirect@b/x", 0, 2))
        .isTrue();
    try (java.sql.Connection c = TestDatabase.connect();
        java.sql.PreparedStatement s =
            c.prepareStatement("SELECT last_error FROM pacer_item WHERE job = ?")) {
      s.setString(1, job);
      try (java.sql.ResultSet r = s.executeQuery()) {
        r.next();
        assertThat(r.getString(1)).isEqualTo("HTTP 404 from https://***@b/x");
      }
    }
  }

  @Test
  void aTripRecordRetriedAfterItsAnswerWasLostRecordsOneTrip() throws Exception {
    // What a worker retries when the connection drops after the commit, before the answer.
    String key = UUID.randomUUID().toString();
    Callable<Long> record =
        () -> store.trips().recordTrip(key, job, HaltReason.RSS, "figures", "h", 42);
    long id = record.call();
    assertThat(record.call()).as("the retry's answer").isEqualTo(id);
    assertThat(store.trips().trips(job, false)).hasSize(1);
  }

  @Test
  void anEnqueueRetriedAfterItsAnswerWasLostReportsWhatItAdded() throws Exception {
    List<String> urls = List.of("http://a/1", "http://a/2", "http://a/3");
    String key = UUID.randomUUID().toString();
    Callable<Integer> enqueue = () -> store.jobs().enqueue(key, job, "a", 1.0, urls);
    assertThat(enqueue.call()).isEqualTo(3);
    assertThat(enqueue.call()).as("the retry's answer").isEqualTo(3);
    assertThat(store.items().counts(job).total()).isEqualTo(3);
    assertThat(store.jobs().enqueue(fresh(), job, "a", 1.0, urls)).as("a new enqueue").isZero();
  }

  @Test
  void tripsStayOpenUntilAcknowledged() throws Exception {
    long id =
        store
            .trips()
            .recordTrip(
                fresh(), job, HaltReason.RSS, "resident memory 3000 MiB above 2048 MiB", "h", 42);
    Optional<TripStore.Trip> open = store.trips().openTrip(job);
    assertThat(open).hasValueSatisfying(t -> assertThat(t.id()).isEqualTo(id));
    assertThat(store.trips().ackTrip(id, "raised the ceiling")).isPresent();
    assertThat(store.trips().ackTrip(id, "again")).isEmpty();
    assertThat(store.trips().openTrip(job)).isEmpty();
    assertThat(store.trips().trips(job, false))
        .singleElement()
        .satisfies(t -> assertThat(t.ackNote()).isEqualTo("raised the ceiling"));
  }
}
