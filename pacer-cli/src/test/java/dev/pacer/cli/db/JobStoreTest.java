package dev.pacer.cli.db;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.postgres.TestDatabase;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The work queue's invariants on a real PostgreSQL. */
class JobStoreTest {

  private static final AtomicInteger UNIQUE = new AtomicInteger();
  private JobStore store;
  private String job;

  @BeforeEach
  void open() throws Exception {
    store = new JobStore(new Database(TestDatabase.jdbcUrl()));
    store.ensureSchema();
    job = "store-test-" + ProcessHandle.current().pid() + "-" + UNIQUE.incrementAndGet();
  }

  @AfterEach
  void close() {
    store.close();
  }

  @Test
  void enqueueingTheSameInputTwiceAddsNothing() throws Exception {
    List<String> urls = List.of("http://a/1", "http://a/2", "http://a/3");
    assertThat(store.enqueue(job, "a", 1.0, urls)).isEqualTo(3);
    assertThat(store.enqueue(job, "a", 1.0, urls)).isZero();
    assertThat(store.enqueue(job, "a", 1.0, List.of("http://a/3", "http://a/4"))).isEqualTo(1);
    assertThat(store.counts(job).total()).isEqualTo(4);
  }

  @Test
  void aClaimedItemIsNotClaimedAgainUntilItsLeaseExpires() throws Exception {
    store.enqueue(job, "a", 1.0, List.of("http://a/1"));
    JobStore.Item first = store.claim(job, "w1", 60_000).orElseThrow();
    assertThat(store.claim(job, "w2", 60_000)).isEmpty();
    TestDatabase.execute("UPDATE pacer_item SET lease_until = now() - interval '1 second'"
        + " WHERE job = '" + job + "'");
    JobStore.Item taken = store.claim(job, "w2", 60_000).orElseThrow();
    assertThat(taken.url()).isEqualTo(first.url());
    assertThat(taken.token()).isNotEqualTo(first.token());

    // The first worker's lease was taken over: its record is refused, the item counted once.
    assertThat(store.markDone(first, 200, "/x", 1)).isFalse();
    assertThat(store.markDone(taken, 200, "/x", 1)).isTrue();
    assertThat(store.markDone(taken, 200, "/x", 1)).isFalse();
    assertThat(store.counts(job).done()).isEqualTo(1);
  }

  @Test
  void heartbeatsKeepALeaseAlive() throws Exception {
    store.enqueue(job, "a", 1.0, List.of("http://a/1"));
    store.enqueue(job, "a", 1.0, List.of("http://a/2"));
    JobStore.Item kept = store.claim(job, "w1", 60_000).orElseThrow();
    JobStore.Item lost = store.claim(job, "w1", 60_000).orElseThrow();
    TestDatabase.execute("UPDATE pacer_item SET lease_until = now() - interval '1 second'"
        + " WHERE job = '" + job + "'");
    // Only claims a thread still works on are extended; one whose answer was lost lapses.
    assertThat(store.extendLeases("w1", List.of(kept.token()), 60_000)).isEqualTo(1);
    assertThat(store.extendLeases("w2", List.of(kept.token()), 60_000)).isZero();
    assertThat(store.claim(job, "w2", 60_000)).hasValueSatisfying(
        item -> assertThat(item.url()).isEqualTo(lost.url()));
    assertThat(store.claim(job, "w2", 60_000)).isEmpty();
  }

  @Test
  void throttledItemsWaitTheirRetryAndAreDeferredAfterTheLimit() throws Exception {
    store.enqueue(job, "a", 1.0, List.of("http://a/1"));
    JobStore.Item item = store.claim(job, "w1", 60_000).orElseThrow();
    assertThat(store.markThrottled(item, 429, 60_000, 2)).isTrue();
    assertThat(store.claim(job, "w1", 60_000)).as("not before its retry time").isEmpty();
    assertThat(store.counts(job).deferred()).isEqualTo(1);
    TestDatabase.execute("UPDATE pacer_item SET not_before = now() WHERE job = '" + job + "'");
    item = store.claim(job, "w1", 60_000).orElseThrow();
    assertThat(store.markThrottled(item, 429, 0, 2)).isTrue();
    JobStore.Counts counts = store.counts(job);
    assertThat(counts.open()).isZero();
    assertThat(counts.deferred()).isEqualTo(1);
    assertThat(store.reviveDeferred(job)).isEqualTo(1);
    assertThat(store.claim(job, "w1", 60_000)).isPresent();
  }

  @Test
  void anItemFailsAfterItsLastAttemptWithItsStatus() throws Exception {
    store.enqueue(job, "a", 1.0, List.of("http://a/1"));
    JobStore.Item item = store.claim(job, "w1", 60_000).orElseThrow();
    assertThat(store.markFailed(item, 500, "HTTP 500", 0, 2)).isTrue();
    assertThat(store.counts(job).failed()).isZero();
    item = store.claim(job, "w1", 60_000).orElseThrow();
    assertThat(item.failures()).isEqualTo(1);
    assertThat(store.hasOpenItems(job)).isTrue();
    assertThat(store.markFailed(item, null, "network error", 0, 2)).isTrue();
    JobStore.Counts counts = store.counts(job);
    assertThat(counts.failed()).isEqualTo(1);
    assertThat(counts.open()).isZero();
    assertThat(store.hasOpenItems(job)).isFalse();
  }

  @Test
  void tripsStayOpenUntilAcknowledged() throws Exception {
    long id = store.recordTrip(job, "RSS", "resident memory 3000 MiB above 2048 MiB", "h", 42);
    Optional<JobStore.Trip> open = store.openTrip(job);
    assertThat(open).hasValueSatisfying(t -> assertThat(t.id()).isEqualTo(id));
    assertThat(store.ackTrip(id, "raised the ceiling")).isTrue();
    assertThat(store.ackTrip(id, "again")).isFalse();
    assertThat(store.openTrip(job)).isEmpty();
    assertThat(store.trips(job, false)).singleElement()
        .satisfies(t -> assertThat(t.ackNote()).isEqualTo("raised the ceiling"));
  }
}
