package dev.pacer.cli.db;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.pacer.postgres.TcpProxy;
import dev.pacer.postgres.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Work-state statements that committed and whose answer was lost with the connection, on a real
 * PostgreSQL behind a {@link TcpProxy} that cuts the connection when the server's ReadyForQuery
 * for the statement arrives. What a restart or a cut network can do to any statement: the work was
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
    store = WorkState.forWorker(new Database("jdbc:postgresql://127.0.0.1:" + proxy.port()
        + "/postgres?user=postgres&sslmode=disable&gssEncMode=disable"), 1);
    store.ensureSchema();
    job = "lost-answer-" + UUID.randomUUID().toString().substring(0, 8);
    store.jobs().enqueue(UUID.randomUUID().toString(), job, "a", 1.0,
        List.of("http://a/1", "http://a/2", "http://a/3", "http://a/4"));
  }

  @AfterEach
  void close() throws Exception {
    store.close();
    proxy.close();
  }

  /** The job's items leased now, by url. */
  private List<String> leased() throws SQLException {
    List<String> urls = new ArrayList<>();
    try (Connection c = TestDatabase.connect(); PreparedStatement s = c.prepareStatement(
        "SELECT url FROM pacer_item WHERE job = ? AND state = 'leased' ORDER BY seq")) {
      s.setString(1, job);
      try (ResultSet r = s.executeQuery()) {
        while (r.next()) {
          urls.add(r.getString(1));
        }
      }
    }
    return urls;
  }

  @Test
  void aClaimWhoseAnswerWasLostAfterItCommittedLeasesOneItem() throws Exception {
    proxy.loseTheAnswerTo("picked AS");

    ItemStore.Item item = store.items().claim(job, "w1", 60_000).orElseThrow();

    assertThat(proxy.answersLost()).as("the claim's answer was lost").isEqualTo(1);
    assertThat(leased()).as("one item leased for one claim, none orphaned")
        .containsExactly(item.url());
  }

  @Test
  void aRecordAndClaimWhoseAnswerWasLostAfterItCommittedRecordsAndLeasesOnce() throws Exception {
    ItemStore.Item first = store.items().claim(job, "w1", 60_000).orElseThrow();
    proxy.loseTheAnswerTo("picked AS");

    ItemStore.RecordedAndClaimed made = store.items().recordAndClaim(job,
        new ItemStore.Done(first, 200, "/x", 1), "w1", ItemStore.newLeaseToken(), 60_000);

    assertThat(proxy.answersLost()).isEqualTo(1);
    assertThat(made.recorded()).as("recorded by the statement whose answer was lost").isTrue();
    assertThat(leased()).as("one item leased for one claim")
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

    awaitPolicyUp();
    ItemStore.RecordedAndClaimed again = store.items().recordAndClaim(job, done, "w1", token,
        60_000);
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
        .as("not 'the lease was lost'").isTrue();
    proxy.loseTheAnswerTo("throttles = throttles + 1");
    assertThat(store.items().markThrottled(throttled, 429, 60_000, 3)).isTrue();
    proxy.loseTheAnswerTo("state = 'pending'");
    assertThat(store.items().release(released)).isTrue();

    assertThat(proxy.answersLost()).isEqualTo(3);
    assertThat(leased()).isEmpty();
    try (Connection c = TestDatabase.connect(); PreparedStatement s = c.prepareStatement(
        "SELECT sum(failures), sum(throttles) FROM pacer_item WHERE job = ?")) {
      s.setString(1, job);
      try (ResultSet r = s.executeQuery()) {
        r.next();
        assertThat(r.getInt(1)).as("one failure counted").isEqualTo(1);
        assertThat(r.getInt(2)).as("one throttle counted").isEqualTo(1);
      }
    }
  }

  /** The call that failed told the outage policy; the next goes through once it is up again. */
  private void awaitPolicyUp() throws InterruptedException {
    dev.pacer.postgres.OutagePolicy policy = store.database().outagePolicy();
    long deadline = System.nanoTime() + 20_000_000_000L;
    while (policy.refusesNow() && System.nanoTime() < deadline) {
      Thread.sleep(50);
    }
    assertThat(policy.refusesNow()).isFalse();
  }
}
