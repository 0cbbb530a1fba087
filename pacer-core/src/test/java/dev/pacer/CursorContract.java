package dev.pacer;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

/**
 * The behaviour every {@link Cursor} must have, run against each implementation (as Bucket4j runs
 * one suite against every backend). Real clock, no sleeping: reservations only compute waits.
 */
public abstract class CursorContract {

  private static final Duration GAP = Duration.ofMillis(100);
  /** How much a wait may fall short of the ideal: the time the reservation itself took. */
  private static final long SLACK_MILLIS = 30;

  protected abstract Cursor cursor();

  protected String freshName() {
    return "contract-" + UUID.randomUUID().toString().substring(0, 8);
  }

  @Test
  void freshCursorAnswersZeroThenTheGap() {
    String name = freshName();
    assertThat(waitMillis(cursor().reserve(name, GAP))).isBetween(0L, 1L);
    assertThat(waitMillis(cursor().reserve(name, GAP))).isBetween(100 - SLACK_MILLIS, 100L);
    assertThat(waitMillis(cursor().reserve(name, GAP))).isBetween(200 - SLACK_MILLIS, 200L);
  }

  @Test
  void twoDestinationsDoNotShare() {
    String a = freshName();
    String b = freshName();
    cursor().reserve(a, GAP);
    cursor().reserve(a, GAP);
    assertThat(waitMillis(cursor().reserve(b, GAP))).isBetween(0L, 1L);
  }

  @Test
  void clearForgets() {
    String name = freshName();
    cursor().reserve(name, Duration.ofSeconds(10));
    cursor().clear(name);
    assertThat(waitMillis(cursor().reserve(name, GAP))).isBetween(0L, 1L);
  }

  @Test
  void aWidenedIntervalIsHonoured() {
    String name = freshName();
    assertThat(waitMillis(cursor().reserve(name, Duration.ofMillis(100)))).isBetween(0L, 1L);
    assertThat(waitMillis(cursor().reserve(name, Duration.ofMillis(800))))
        .isBetween(100 - SLACK_MILLIS, 100L);
    assertThat(waitMillis(cursor().reserve(name, Duration.ofMillis(100))))
        .isBetween(900 - SLACK_MILLIS, 900L);
    assertThat(waitMillis(cursor().reserve(name, Duration.ofMillis(100))))
        .isBetween(1000 - SLACK_MILLIS, 1000L);
  }

  @Test
  void tryReserveRefusesWithoutConsumingATurn() {
    String name = freshName();
    for (int i = 0; i < 3; i++) {
      cursor().reserve(name, GAP); // the next turn starts ~300 ms ahead
    }
    Reservation refused = cursor().tryReserve(name, GAP, Duration.ofMillis(200));
    assertThat(refused.isRefused()).as("refused: %s", refused).isTrue();
    assertThat(cursor().tryReserve(name, GAP, Duration.ofMillis(200)).isRefused()).isTrue();
    Reservation granted = cursor().tryReserve(name, GAP, Duration.ofSeconds(1));
    assertThat(waitMillis(granted))
        .as("the refusals left the cursor where it was").isBetween(300 - SLACK_MILLIS, 300L);
  }

  @Test
  void notBeforeOnlyPlacesACursorThatIsMissing() {
    String name = freshName();
    assertThat(waitMillis(cursor().reserve(name, GAP, Duration.ofMillis(500))))
        .as("a missing cursor starts at notBefore").isBetween(500 - SLACK_MILLIS, 500L);
    assertThat(waitMillis(cursor().reserve(name, GAP, Duration.ofMillis(900))))
        .as("an intact cursor ignores it").isBetween(600 - SLACK_MILLIS, 600L);
    cursor().clear(name);
    assertThat(waitMillis(cursor().reserve(name, GAP, Duration.ofMillis(700))))
        .as("a lost cursor does not hand out turns before it").isBetween(700 - SLACK_MILLIS, 700L);
    assertThat(cursor().tryReserve(freshName(), GAP, Duration.ofSeconds(2), Duration.ofSeconds(1))
        .isRefused()).as("it counts against maxWait").isTrue();
  }

  @Test
  void tryReserveOnAFreshCursorIsGrantedAtOnce() {
    assertThat(waitMillis(cursor().tryReserve(freshName(), GAP, Duration.ZERO))).isBetween(0L, 1L);
  }

  @Test
  void concurrentReservationsNeverShareATurn() throws Exception {
    String name = freshName();
    // A start is estimated as (time before the call + wait); a call may queue behind the other
    // threads' calls first, so estimates can be early by a few round trips. A gap of 200 ms
    // leaves room for that; a non-atomic cursor hands two callers the same turn (0 ms apart).
    Duration gap = Duration.ofMillis(200);
    int threads = 4;
    int each = 10;
    List<Long> starts = Collections.synchronizedList(new ArrayList<>());
    CountDownLatch go = new CountDownLatch(1);
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      List<Future<?>> done = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        done.add(pool.submit(() -> {
          go.await();
          for (int i = 0; i < each; i++) {
            long before = System.nanoTime();
            starts.add(before + cursor().reserve(name, gap).waitTime().toNanos());
          }
          return null;
        }));
      }
      go.countDown();
      for (Future<?> f : done) {
        f.get();
      }
    } finally {
      pool.shutdownNow();
    }
    Collections.sort(starts);
    assertThat(starts).hasSize(threads * each);
    for (int i = 1; i < starts.size(); i++) {
      assertThat((starts.get(i) - starts.get(i - 1)) / 1_000_000.0)
          .as("turn %d after turn %d", i, i - 1)
          .isGreaterThan(100.0);
    }
  }

  private static long waitMillis(Reservation r) {
    assertThat(r.isGranted()).as("granted: %s", r).isTrue();
    return Math.round(r.waitTime().toNanos() / 1e6);
  }
}
