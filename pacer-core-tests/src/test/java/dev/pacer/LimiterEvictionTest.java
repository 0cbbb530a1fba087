package dev.pacer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.pacer.testing.FakeTime;
import java.lang.ref.WeakReference;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * What a registry lets go of when told to evict its idle limiters, and what a limiter made afresh
 * afterwards still honours; on a fake clock, nothing here sleeps.
 */
class LimiterEvictionTest {

  private static final Duration IDLE = Duration.ofSeconds(60);

  /**
   * The idle bound and a second: a turn here leaves the cursor an interval on, and the other
   * process may queue two more after it, 0.3 s in all.
   */
  private static final Duration PAST_IDLE = IDLE.plusSeconds(1);

  private final FakeTime time = new FakeTime();
  private final LocalCursor cursor = new LocalCursor(time);
  private final LimiterRegistry registry = new LimiterRegistry(cursor, time);
  private final Heard heard = new Heard();

  LimiterEvictionTest() {
    registry.addListener(heard);
  }

  /** 10/s, two requests at a time here, two processes: the fleet may queue 2 turns after ours. */
  private static Destination destination(String name) {
    return Destination.builder(name)
        .ratePerSecond(10)
        .maxConcurrency(2)
        .maxFetchingProcesses(2)
        .build();
  }

  @Test
  void evictsALimiterIdleForTheBoundAndKeepsOneUsedSince() throws Exception {
    DestinationLimiter idle = registry.limiter(destination("idle"));
    DestinationLimiter used = registry.limiter(destination("used"));
    idle.acquire().close();
    used.acquire().close();
    time.advance(Duration.ofSeconds(30));
    used.acquire().close();
    time.advance(PAST_IDLE.minusSeconds(30));

    assertThat(registry.evictIdle(IDLE)).isEqualTo(1);
    assertThat(heard.evicted).containsExactly("idle");
    time.advance(Duration.ofSeconds(30));
    assertThat(registry.evictIdle(IDLE)).isEqualTo(1);
    assertThat(heard.evicted).containsExactly("idle", "used");
    assertThat(registry.evictIdle(IDLE)).as("nothing is left").isZero();
  }

  @Test
  void keepsALimiterWithATurnHeldOrAPauseLockoutOrBackoffInForce() throws Exception {
    DestinationLimiter busy = registry.limiter(destination("busy"));
    DestinationLimiter paused = registry.limiter(destination("paused"));
    DestinationLimiter lockedOut = registry.limiter(destination("locked-out"));
    DestinationLimiter backedOff = registry.limiter(destination("backed-off"));
    Slot held = busy.acquire();
    paused.pause(Duration.ofSeconds(120));
    lockedOut.lockOut("HTTP 403 from https://locked-out/");
    backedOff.backoff();

    time.advance(Duration.ofSeconds(100));
    assertThat(registry.evictIdle(IDLE)).isZero();
    assertThat(heard.evicted).isEmpty();

    held.close();
    time.advance(Duration.ofSeconds(60));
    // The pause ended at 120 s, 40 s ago: idle time counts from its end.
    assertThat(registry.evictIdle(IDLE)).isEqualTo(1);
    assertThat(heard.evicted).containsExactly("busy");
    time.advance(Duration.ofSeconds(20));
    assertThat(registry.evictIdle(IDLE)).isEqualTo(1);
    assertThat(heard.evicted).containsExactly("busy", "paused");

    time.advance(Duration.ofHours(1));
    assertThat(registry.evictIdle(IDLE))
        .as("a lockout, and a backoff only this process keeps")
        .isZero();
    assertThat(backedOff.backoffMultiplier()).isEqualTo(2);
  }

  @Test
  void keepsALimiterWhileTheTurnsTheFleetMayHaveQueuedAfterItsLastLookAreToCome() throws Exception {
    Destination slow =
        Destination.builder("slow")
            .ratePerSecond(0.1)
            .maxConcurrency(2)
            .maxFetchingProcesses(3)
            .build();
    registry.limiter(slow).acquire().close();
    // The cursor it saw is 10 s on, and the 4 turns the other processes may hold 40 s after that.
    time.advance(Duration.ofSeconds(109));
    assertThat(registry.evictIdle(IDLE)).isZero();
    time.advance(Duration.ofSeconds(1));
    assertThat(registry.evictIdle(IDLE)).isEqualTo(1);
  }

  @Test
  void aLimiterMadeAfreshHonoursAPauseAndALockoutRecordedInTheCursorMeanwhile() throws Exception {
    WeakReference<DestinationLimiter> first = usedOnce(destination("paused"));
    usedOnce(destination("locked-out"));
    time.advance(PAST_IDLE);
    assertThat(registry.evictIdle(IDLE)).isEqualTo(2);
    awaitCollected(first);

    LimiterRegistry otherProcess = new LimiterRegistry(cursor, time);
    otherProcess.limiter(destination("paused")).pause(Duration.ofSeconds(30));
    otherProcess.limiter(destination("locked-out")).lockOut("HTTP 403 from https://locked-out/");

    DestinationLimiter afresh = registry.limiter(destination("paused"));
    assertThat(heard.created)
        .as("a second limiter for the name, made afresh")
        .containsExactly("paused", "locked-out", "paused");
    long asked = time.nanoTime();
    try (Slot slot = afresh.acquire()) {
      assertThat(slot.turnNanos() - asked).isEqualTo(Duration.ofSeconds(30).toNanos());
    }
    DestinationLimiter lockedOut = registry.limiter(destination("locked-out"));
    assertThatThrownBy(lockedOut::acquire)
        .isInstanceOf(LockedOutException.class)
        .hasMessageContaining("HTTP 403 from https://locked-out/");
  }

  @Test
  void anEvictedLimiterStillHeldComesBackAtItsNextCallAndIsTheOneHandedOut() throws Exception {
    DestinationLimiter kept = registry.limiter(destination("kept"));
    kept.acquire().close();
    time.advance(PAST_IDLE);
    assertThat(registry.evictIdle(IDLE)).isEqualTo(1);

    LimiterRegistry otherProcess = new LimiterRegistry(cursor, time);
    otherProcess.limiter(destination("kept")).pause(Duration.ofSeconds(5));
    assertThat(kept.pauseLeft()).as("evicted, it no longer listens to the cursor").isZero();

    long asked = time.nanoTime();
    try (Slot slot = kept.acquire()) {
      assertThat(slot.turnNanos() - asked)
          .as("the pause, from the cursor")
          .isEqualTo(Duration.ofSeconds(5).toNanos());
    }
    assertThat(registry.limiter(destination("kept"))).isSameAs(kept);
    assertThat(heard.created).containsExactly("kept", "kept");
    otherProcess.limiter(destination("kept")).pause(Duration.ofSeconds(5));
    assertThat(kept.pauseLeft())
        .as("taken back, it listens again")
        .isEqualTo(Duration.ofSeconds(5));

    time.advance(IDLE.plusSeconds(10));
    assertThat(registry.evictIdle(IDLE)).isEqualTo(1);
    assertThat(registry.limiter(destination("kept")))
        .as("asked for while still held")
        .isSameAs(kept);
    assertThat(registry.evictIdle(Duration.ZERO))
        .as("taken back, and idle again at once")
        .isEqualTo(1);
    assertThat(heard.evicted).containsExactly("kept", "kept", "kept");
  }

  /**
   * Two threads take turns through the registry while another evicts whatever is idle at that
   * instant, over and over: a destination never has two limiters with turns out at once (with two,
   * each would pace locally at the process's share while the cursor is away).
   */
  @Test
  void evictingWhileTurnsAreTakenNeverLeavesTwoLimitersInUse() throws Exception {
    // At 100,000/s a turn's cursor lies 10 us on: the evictor's clock steps leave it idle often.
    Destination d =
        Destination.builder("contended")
            .ratePerSecond(100_000)
            .maxConcurrency(2)
            .maxFetchingProcesses(2)
            .build();
    Map<DestinationLimiter, AtomicInteger> slotsOut = new ConcurrentHashMap<>();
    AtomicInteger overlaps = new AtomicInteger();
    AtomicBoolean taking = new AtomicBoolean(true);
    AtomicInteger evictions = new AtomicInteger();
    Thread evictor =
        new Thread(
            () -> {
              while (taking.get()) {
                time.advance(Duration.ofMillis(1));
                evictions.addAndGet(registry.evictIdle(Duration.ZERO));
              }
            });
    evictor.start();
    List<Thread> takers = new ArrayList<>();
    List<Throwable> failures = Collections.synchronizedList(new ArrayList<>());
    for (int t = 0; t < 2; t++) {
      Thread taker =
          new Thread(
              () -> {
                try {
                  for (int i = 0; i < 100_000 && evictions.get() < 100; i++) {
                    DestinationLimiter limiter = registry.limiter(d);
                    // The caller's own work before it asks for its turn, and after: an eviction may
                    // come
                    // in either.
                    spin();
                    try (Slot slot = limiter.acquire()) {
                      AtomicInteger mine =
                          slotsOut.computeIfAbsent(limiter, l -> new AtomicInteger());
                      mine.incrementAndGet();
                      for (Map.Entry<DestinationLimiter, AtomicInteger> e : slotsOut.entrySet()) {
                        if (e.getKey() != limiter && e.getValue().get() > 0) {
                          overlaps.incrementAndGet();
                        }
                      }
                      mine.decrementAndGet();
                    }
                    spin();
                  }
                } catch (Throwable e) {
                  failures.add(e);
                }
              });
      takers.add(taker);
      taker.start();
    }
    for (Thread taker : takers) {
      taker.join();
    }
    taking.set(false);
    evictor.join();
    assertThat(failures).isEmpty();
    assertThat(evictions.get()).as("evictions between the turns").isGreaterThanOrEqualTo(100);
    assertThat(overlaps.get())
        .as(
            "turns out at once on two limiters of one destination (%d" + " evictions)",
            evictions.get())
        .isZero();
  }

  @Test
  void aNegativeIdleTimeIsRefused() {
    assertThatThrownBy(() -> registry.evictIdle(Duration.ofSeconds(-1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("PT-1S");
  }

  /** A few microseconds of work, without sleeping. */
  private static void spin() {
    for (int i = ThreadLocalRandom.current().nextInt(2_000); i > 0; i--) {
      Thread.onSpinWait();
    }
  }

  /** The limiter of {@code d}, having taken one turn, held by nothing but a weak reference. */
  private WeakReference<DestinationLimiter> usedOnce(Destination d) throws Exception {
    DestinationLimiter limiter = registry.limiter(d);
    limiter.acquire().close();
    return new WeakReference<>(limiter);
  }

  private static void awaitCollected(WeakReference<?> ref) {
    for (int i = 0; i < 50 && ref.get() != null; i++) {
      System.gc();
    }
    assertThat(ref.get()).as("the evicted limiter, collected").isNull();
  }

  /** The names of the limiters created and evicted: holding no limiter, it keeps none alive. */
  private static final class Heard implements LimiterListener {
    final List<String> created = new ArrayList<>();
    final List<String> evicted = new ArrayList<>();

    @Override
    public void limiterCreated(DestinationLimiter limiter) {
      created.add(limiter.destination().name());
    }

    @Override
    public void limiterEvicted(DestinationLimiter limiter) {
      evicted.add(limiter.destination().name());
    }
  }
}
