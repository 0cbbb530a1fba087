package dev.pacer.cli.db;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.pacer.postgres.KeptConnection;
import dev.pacer.postgres.TcpProxy;
import dev.pacer.postgres.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Work-state statements that committed and whose answer was lost with the connection, on a real
 * PostgreSQL behind a {@link TcpProxy} that cuts the connection when the server's ReadyForQuery for
 * the statement arrives. What a restart or a cut network can do to any statement: the work was
 * done, the caller does not know it, and the statement is made again.
 */
class LostAnswerTest {

  private TcpProxy proxy;
  private WorkState store;
  private String job;

  @BeforeEach
  void open() throws Exception {
    proxy = new TcpProxy(TestDatabase.port());
    // One connection, so that each call after the first runs on a reused one: the case where a
    // statement whose connection was lost quickly is made again in the same call.
    store =
        WorkState.forWorker(
            new Database(
                "jdbc:postgresql://127.0.0.1:"
                    + proxy.port()
                    + "/postgres?user=postgres&sslmode=disable&gssEncMode=disable"),
            1);
    store.ensureSchema();
    job = "lost-answer-" + UUID.randomUUID().toString().substring(0, 8);
    store
        .jobs()
        .enqueue(
            UUID.randomUUID().toString(),
            job,
            "a",
            1.0,
            List.of("http://a/1", "http://a/2", "http://a/3", "http://a/4"));
  }

  @AfterEach
  void close() throws Exception {
    store.close();
    proxy.close();
  }

  /** The job's items leased now, by url. */
  private List<String> leased() throws SQLException {
    return leasedItems("url");
  }

  /** {@code column} (one of pacer_item's, named by the test) of the job's items leased now. */
  private List<String> leasedItems(String column) throws SQLException {
    List<String> values = new ArrayList<>();
    try (Connection c = TestDatabase.connect();
        PreparedStatement s =
            c.prepareStatement(
                "SELECT "
                    + column
                    + " FROM pacer_item WHERE job = ? AND state = 'leased' ORDER BY seq")) {
      s.setString(1, job);
      try (ResultSet r = s.executeQuery()) {
        while (r.next()) {
          values.add(r.getString(1));
        }
      }
    }
    return values;
  }

  @Test
  void aClaimWhoseAnswerWasLostAfterItCommittedLeasesOneItem() throws Exception {
    proxy.loseTheAnswerTo("picked AS");

    ItemStore.Item item = store.items().claim(job, "w1", 60_000).orElseThrow();

    assertThat(proxy.answersLost()).as("the claim's answer was lost").isEqualTo(1);
    assertThat(leased())
        .as("one item leased for one claim, none orphaned")
        .containsExactly(item.url());
  }

  @Test
  void aRecordAndClaimWhoseAnswerWasLostAfterItCommittedRecordsAndLeasesOnce() throws Exception {
    ItemStore.Item first = store.items().claim(job, "w1", 60_000).orElseThrow();
    proxy.loseTheAnswerTo("picked AS");

    ItemStore.RecordedAndClaimed made =
        store
            .items()
            .recordAndClaim(
                job,
                new ItemStore.Done(first, 200, "/x", 1),
                "w1",
                ItemStore.newLeaseToken(),
                60_000);

    assertThat(proxy.answersLost()).isEqualTo(1);
    assertThat(made.recorded()).as("recorded by the statement whose answer was lost").isTrue();
    assertThat(leased())
        .as("one item leased for one claim")
        .containsExactly(made.next().orElseThrow().url());
    assertThat(store.items().counts(job).done()).isEqualTo(1);
  }

  /**
   * The worker's own retry after a failure: the connection lost in a call's first statement is not
   * replaced in the call, and the call fails. Made again with the same claim token and record, it
   * answers what the first did.
   */
  @Test
  void aRecordAndClaimMadeAgainWithItsTokenAfterItFailedAnswersWhatItsFirstRunDid()
      throws Exception {
    ItemStore.Item first = store.items().claim(job, "w1", 60_000).orElseThrow();
    ItemStore.Done done = new ItemStore.Done(first, 200, "/x", 1);
    String token = ItemStore.newLeaseToken();
    store.close(); // its next call opens a connection: a loss there fails the call
    proxy.loseTheAnswerTo("picked AS");
    assertThatThrownBy(() -> store.items().recordAndClaim(job, done, "w1", token, 60_000))
        .isInstanceOf(SQLException.class);
    assertThat(proxy.answersLost()).isEqualTo(1);
    List<String> leasedByTheLostRun = leased();
    assertThat(leasedByTheLostRun).hasSize(1);

    ItemStore.RecordedAndClaimed again =
        madeAgainOnceUp(() -> store.items().recordAndClaim(job, done, "w1", token, 60_000));
    assertThat(again.recorded()).isTrue();
    assertThat(again.next().orElseThrow().url()).isEqualTo(leasedByTheLostRun.get(0));
    assertThat(again.next().orElseThrow().token()).isEqualTo(token);
    assertThat(leased()).as("one item leased for one claim").isEqualTo(leasedByTheLostRun);
    assertThat(store.items().counts(job).done()).isEqualTo(1);
  }

  @Test
  void aFailureAThrottleOrAReleaseWhoseAnswerWasLostIsAnsweredAsMade() throws Exception {
    ItemStore.Item failed = store.items().claim(job, "w1", 60_000).orElseThrow();
    ItemStore.Item throttled = store.items().claim(job, "w1", 60_000).orElseThrow();
    ItemStore.Item released = store.items().claim(job, "w1", 60_000).orElseThrow();

    proxy.loseTheAnswerTo("failures = failures + 1");
    assertThat(store.items().markFailed(failed, 500, "HTTP 500", 60_000, 3))
        .as("not 'the lease was lost'")
        .isTrue();
    proxy.loseTheAnswerTo("throttles = throttles + 1");
    assertThat(store.items().markThrottled(throttled, 429, 60_000, 3)).isTrue();
    proxy.loseTheAnswerTo("state = 'pending'");
    assertThat(store.items().release(released)).isTrue();

    assertThat(proxy.answersLost()).isEqualTo(3);
    assertThat(leased()).isEmpty();
    try (Connection c = TestDatabase.connect();
        PreparedStatement s =
            c.prepareStatement(
                "SELECT sum(failures), sum(throttles) FROM pacer_item WHERE job = ?")) {
      s.setString(1, job);
      try (ResultSet r = s.executeQuery()) {
        r.next();
        assertThat(r.getInt(1)).as("one failure counted").isEqualTo(1);
        assertThat(r.getInt(2)).as("one throttle counted").isEqualTo(1);
      }
    }
  }

  /**
   * A per-host claim takes its host's turn and leases an item in one statement, and so is made at
   * most once: its answer lost, the item it leased stays leased (to nobody) until the worker
   * settles the claim, which gives it back; the caller then claims afresh.
   */
  @Test
  void aPerHostClaimWhoseAnswerWasLostIsGivenBackWhenSettled() throws Exception {
    job = job + "-per-host";
    Map<String, FrontierStore.HostCeiling> ceilings = new LinkedHashMap<>();
    List<String> urls = new ArrayList<>();
    for (String label : List.of("a", "b")) {
      String host = label + "." + job + ".test";
      ceilings.put(host, new FrontierStore.HostCeiling(10, 4));
      urls.add("http://" + host + "/1");
    }
    store.jobs().enqueue(UUID.randomUUID().toString(), job, "per-host", 10, urls);
    store.frontier().plan(job, ceilings);
    lostClaim();
    assertThat(leased()).as("the lost claim's item").hasSize(1);

    assertThat(madeAgainOnceUp(() -> settle(Map.of()))).as("items given back").isEqualTo(1);
    assertThat(leased()).isEmpty();
    assertThat(store.frontier().hasUnsettledLeases()).isFalse();
    assertThat(store.frontier().settleLostLeases(job, Map.of()))
        .as("settled again: nothing left")
        .isZero();
    FrontierStore.Claim again = store.frontier().claim(job, "w1", "w1/t1", 60_000);
    assertThat(again).isInstanceOf(FrontierStore.Claim.Claimed.class);
    assertThat(leased()).containsExactly(((FrontierStore.Claim.Claimed) again).item().url());
  }

  @Test
  void aPerHostClaimOfABufferedItemLostWithItsGiveBackIsSettledToTheBuffersToken()
      throws Exception {
    ItemStore.Item buffered = planOneHost().get(0);
    lostClaim();
    assertThat(leasedItems("lease_token"))
        .as("the lost claim took the buffered item under a token of its own")
        .hasSize(1)
        .doesNotContain(buffered.token());
    assertThat(
            madeAgainOnceUp(
                () -> store.items().markDone(new ItemStore.Done(buffered, 200, "/x", 1))))
        .as("a record under the buffer's token before the claim is settled")
        .isFalse();

    assertThat(madeAgainOnceUp(() -> settle(Map.of(buffered.key(), buffered.token()))))
        .as("items given back")
        .isZero();
    assertThat(store.frontier().hasUnsettledLeases()).isFalse();
    assertThat(store.items().markDone(new ItemStore.Done(buffered, 200, "/x", 1)))
        .as("the record of the item fetched from the buffer")
        .isTrue();
    assertThat(store.items().counts(job).done()).isEqualTo(1);
  }

  /**
   * Makes the job (its name suffixed) a per-host job of one item on one host, at 10/s; answers the
   * host.
   */
  private String planOneItemPerHostJob(String suffix) throws SQLException {
    job = job + suffix;
    String host = "a." + job + ".test";
    store
        .jobs()
        .enqueue(
            UUID.randomUUID().toString(), job, "per-host", 10, List.of("http://" + host + "/1"));
    store.frontier().plan(job, Map.of(host, new FrontierStore.HostCeiling(10, 4)));
    return host;
  }

  /** A per-host job of one host and one item, leased ahead by w1: the buffered item. */
  private List<ItemStore.Item> planOneHost() throws SQLException {
    planOneItemPerHostJob("-per-host");
    List<ItemStore.Item> buffered =
        store
            .frontier()
            .leaseAhead(job, "w1", List.of(ItemStore.newLeaseToken()), 60_000, 10)
            .stream()
            .map(FrontierStore.Ahead::item)
            .toList();
    assertThat(buffered).hasSize(1);
    return buffered;
  }

  /** w1 claims, and the claim's answer is lost. */
  private void lostClaim() {
    proxy.loseTheAnswerTo("pick AS MATERIALIZED");
    assertThatThrownBy(() -> store.frontier().claim(job, "w1", "w1/t1", List.of(), true, 60_000))
        .isInstanceOf(SQLException.class)
        .satisfies(e -> assertOutcomeUnknown((SQLException) e));
    assertThat(proxy.answersLost()).isEqualTo(1);
    assertThat(store.frontier().hasUnsettledLeases()).isTrue();
  }

  private int settle(Map<String, String> tokensByKey) throws SQLException {
    Map<String, FrontierStore.Holding> holding = new LinkedHashMap<>();
    tokensByKey.forEach((key, token) -> holding.put(key, new FrontierStore.Holding(token, false)));
    return store.frontier().settleLostLeases(job, holding);
  }

  @Test
  void aRobotsTxtClaimWhoseAnswerWasLostLeasesOneHost() throws Exception {
    planRobots();
    proxy.loseTheAnswerTo("UPDATE pacer_robots r SET state = 'fetching'");

    RobotsStore.Work work =
        store.robots().claim(job, "w1", UUID.randomUUID().toString(), 60_000).orElseThrow();

    assertThat(proxy.answersLost()).isEqualTo(1);
    assertThat(fetchingHosts())
        .as("one host's robots.txt leased for one claim")
        .containsExactly(work.host());
  }

  @Test
  void aRobotsTxtAttemptWhoseAnswerWasLostIsCountedOnce() throws Exception {
    planRobots();
    RobotsStore.Work work =
        store.robots().claim(job, "w1", UUID.randomUUID().toString(), 60_000).orElseThrow();
    proxy.loseTheAnswerTo("verdict = $2"); // the driver numbers the parameters

    store.robots().retry(work, "HTTP 500", java.time.Duration.ofMinutes(1));

    assertThat(proxy.answersLost()).isEqualTo(1);
    assertThat(count("SELECT sum(attempts) FROM pacer_robots WHERE job = ?")).isEqualTo(1);
  }

  /** Two hosts of a per-host job, each with an item, behind their robots.txt. */
  private void planRobots() throws SQLException {
    job = job + "-robots";
    Map<String, FrontierStore.HostCeiling> ceilings = new LinkedHashMap<>();
    List<String> urls = new ArrayList<>();
    for (String label : List.of("a", "b")) {
      String host = label + "." + job + ".test";
      ceilings.put(host, new FrontierStore.HostCeiling(10, 4));
      urls.add("http://" + host + "/1");
    }
    store.jobs().enqueue(UUID.randomUUID().toString(), job, "per-host", 10, urls);
    store.frontier().plan(job, ceilings);
    store.robots().plan(job);
  }

  private List<String> fetchingHosts() throws SQLException {
    List<String> hosts = new ArrayList<>();
    try (Connection c = TestDatabase.connect();
        PreparedStatement s =
            c.prepareStatement(
                "SELECT host FROM pacer_robots WHERE job = ? AND state = 'fetching' ORDER BY"
                    + " host")) {
      s.setString(1, job);
      try (ResultSet r = s.executeQuery()) {
        while (r.next()) {
          hosts.add(r.getString(1));
        }
      }
    }
    return hosts;
  }

  @Test
  void aTripAcknowledgedWhoseAnswerWasLostIsAnsweredAsAcknowledged() throws Exception {
    long id =
        store
            .trips()
            .recordTrip(
                UUID.randomUUID().toString(),
                job,
                dev.pacer.cli.model.HaltReason.DESTINATION_LOCKOUT,
                "403 x 3",
                "host",
                1);
    proxy.loseTheAnswerTo("ack_note = $");

    assertThat(store.trips().ackTrip(id, "spoke to them")).as("not 'no open trip'").isPresent();
    assertThat(proxy.answersLost()).isEqualTo(1);
    assertThat(store.trips().openTrip(job)).isEmpty();
  }

  @Test
  void anAppendToTheRequestLogWhoseAnswerWasLostIsNotAppendedAgain() throws Exception {
    RequestLog log = store.requestLog();
    log.sampleClock();
    proxy.loseTheAnswerTo("INSERT INTO pacer_request");
    long now = System.currentTimeMillis() * 1000;
    List<RequestLog.Sent> sent =
        List.of(
            new RequestLog.Sent("a", job, "w1", now, 0, 0, 200),
            new RequestLog.Sent("a", job, "w1", now + 100_000, 0, 0, 200));
    UUID batch = UUID.randomUUID();
    log.append(batch, sent);
    assertThat(proxy.answersLost()).isEqualTo(1);
    assertThat(count("SELECT count(*) FROM pacer_request WHERE job = ?"))
        .as("each request logged once")
        .isEqualTo(2);
    log.append(batch, sent); // as the worker's next flush would, had the call failed
    assertThat(count("SELECT count(*) FROM pacer_request WHERE job = ?")).isEqualTo(2);
  }

  @Test
  void hostItemsWhoseCountWasLostAreNotCountedAgain() throws Exception {
    String host = planOneItemPerHostJob("-bar");
    proxy.loseTheAnswerTo("bar_items = CASE"); // in a transaction: lost with its commit's answer
    SQLException failure =
        failureOf(
            () ->
                store
                    .frontier()
                    .countItems(
                        job, Map.of(host, new FrontierStore.HostItems(3, 1, "HTTP 500")), 20, 10));
    assertThat(proxy.answersLost()).isEqualTo(1);
    assertThat(count("SELECT bar_items FROM pacer_frontier WHERE job = ?"))
        .as("each item counted once")
        .isEqualTo(3);
    assertOutcomeUnknown(failure);
  }

  /** A call that may fail. */
  private interface SqlCall {
    void run() throws SQLException;
  }

  private static SQLException failureOf(SqlCall call) {
    try {
      call.run();
      return null;
    } catch (SQLException e) {
      return e;
    }
  }

  private static void assertOutcomeUnknown(SQLException failure) {
    assertThat((Object) failure).as("the caller is told the outcome is unknown").isNotNull();
    assertThat(KeptConnection.isOutcomeUnknown(failure)).as(failure.toString()).isTrue();
  }

  private long count(String sql) throws SQLException {
    try (Connection c = TestDatabase.connect();
        PreparedStatement s = c.prepareStatement(sql)) {
      s.setString(1, job);
      try (ResultSet r = s.executeQuery()) {
        r.next();
        return r.getLong(1);
      }
    }
  }

  /** A call that may fail while the database is held down. */
  private interface StoreCall<T> {
    T call() throws SQLException;
  }

  /**
   * Makes {@code call} once the outage policy lets an attempt through, as a worker does: a boundary
   * lets one attempt through, and another user of the policy may take it first, in which case the
   * call is refused and made again at the next boundary.
   */
  private <T> T madeAgainOnceUp(StoreCall<T> call) throws Exception {
    long deadline = System.nanoTime() + 20_000_000_000L;
    while (true) {
      awaitPolicyUp();
      try {
        return call.call();
      } catch (SQLException e) {
        if (!store.database().outagePolicy().isDown() || System.nanoTime() > deadline) {
          throw e;
        }
      }
    }
  }

  private void awaitPolicyUp() throws InterruptedException {
    dev.pacer.postgres.OutagePolicy policy = store.database().outagePolicy();
    long deadline = System.nanoTime() + 20_000_000_000L;
    while (policy.refusesNow() && System.nanoTime() < deadline) {
      Thread.sleep(50);
    }
    assertThat(policy.refusesNow()).isFalse();
  }
}
