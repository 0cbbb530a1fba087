package dev.pacer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The real sleeper, {@link TimeSource#SYSTEM}: a sleep never ends before its deadline, and an
 * interrupt ends it as it ends {@link Thread#sleep}. The only tests here that sleep: what is tested
 * is the sleep itself (tens of milliseconds in all).
 */
class TimeSourceTest {

  @Test
  void aSleepNeverEndsBeforeItsDeadline() throws InterruptedException {
    for (int k = 0; k < 20; k++) {
      long nanos = 1_000_000 + k * 37_000;
      long start = System.nanoTime();
      TimeSource.SYSTEM.sleepNanos(nanos);
      assertThat(System.nanoTime() - start)
          .as("sleep of %d ns", nanos)
          .isGreaterThanOrEqualTo(nanos);
    }
  }

  @Test
  void nothingToSleepReturnsAtOnce() throws InterruptedException {
    TimeSource.SYSTEM.sleepNanos(0);
    TimeSource.SYSTEM.sleepNanos(-5);
  }

  @Test
  void aPendingInterruptEndsTheSleepAtOnceAndIsCleared() {
    Thread.currentThread().interrupt();
    assertThatThrownBy(() -> TimeSource.SYSTEM.sleepNanos(TimeUnit.MINUTES.toNanos(10)))
        .isInstanceOf(InterruptedException.class);
    assertThat(Thread.interrupted()).as("interrupt status after the throw").isFalse();
  }

  @Test
  void anInterruptDuringTheSleepEndsIt() throws Exception {
    CompletableFuture<Throwable> ended = new CompletableFuture<>();
    Thread sleeper =
        new Thread(
            () -> {
              try {
                TimeSource.SYSTEM.sleepNanos(TimeUnit.MINUTES.toNanos(10));
                ended.complete(null);
              } catch (Throwable t) {
                ended.complete(t);
              }
            });
    sleeper.start();
    while (sleeper.getState() != Thread.State.TIMED_WAITING) {
      Thread.onSpinWait();
    }
    sleeper.interrupt();
    assertThat(ended.get(30, TimeUnit.SECONDS)).isInstanceOf(InterruptedException.class);
    sleeper.join();
  }
}
