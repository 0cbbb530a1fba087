package dev.pacer.micrometer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.pacer.Destination;
import dev.pacer.DestinationLimiter;
import dev.pacer.LimiterRegistry;
import dev.pacer.LocalCursor;
import dev.pacer.LockedOutException;
import dev.pacer.spi.Cursor;
import dev.pacer.spi.Reservation;
import dev.pacer.testing.FakeTime;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.lang.ref.WeakReference;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * Every meter, with its tags, driven by real limiters on a fake clock and a {@link LocalCursor}:
 * nothing here sleeps.
 */
class PacerMetricsTest {

  private final FakeTime time = new FakeTime();
  private final FlakyCursor cursor = new FlakyCursor(new LocalCursor(time));
  private final LimiterRegistry limiters = new LimiterRegistry(cursor, time);
  private final SimpleMeterRegistry meters = new SimpleMeterRegistry();

  private static Destination destination(String name) {
    return Destination.builder(name)
        .ratePerSecond(10)
        .maxConcurrency(1)
        .maxFetchingProcesses(3)
        .build();
  }

  @Test
  void everyMeterOfEveryLimiterIsThereTaggedWithItsDestination() {
    limiters.limiter(destination("before"));
    new PacerMetrics(limiters).bindTo(meters);
    limiters.limiter(destination("after"));

    for (String d : new String[] {"before", "after"}) {
      assertThat(meters.find("pacer.acquire.wait").tag("destination", d).timer()).isNotNull();
      for (String outcome : new String[] {"shared", "degraded", "refused"}) {
        assertThat(reservations(d, outcome)).as("%s %s", d, outcome).isZero();
      }
      assertThat(counter("pacer.throttled", d)).isZero();
      assertThat(counter("pacer.lockouts", d)).isZero();
      assertThat(gauge("pacer.backoff.multiplier", d)).isEqualTo(1.0);
      assertThat(gauge("pacer.degraded", d)).isZero();
      assertThat(gauge("pacer.cursor.latched", d)).isZero();
    }
    assertThat(
            meters.getMeters().stream().map(m -> m.getId().getName()).collect(Collectors.toSet()))
        .containsExactlyInAnyOrder(
            "pacer.acquire.wait",
            "pacer.reservations",
            "pacer.throttled",
            "pacer.lockouts",
            "pacer.backoff.multiplier",
            "pacer.degraded",
            "pacer.cursor.latched");
    assertThat(meters.getMeters())
        .as("7 meters, 3 reservation outcomes, 2 destinations")
        .hasSize(2 * 9);
  }

  @Test
  void sharedTurnsAreCountedAndTheirWaitsTimed() throws Exception {
    new PacerMetrics(limiters).bindTo(meters);
    DestinationLimiter limiter = limiters.limiter(destination("d"));
    for (int i = 0; i < 3; i++) {
      limiter.acquire().close();
    }
    assertThat(time.sleepsMillis()).containsExactly(0L, 100L, 100L);
    assertThat(reservations("d", "shared")).isEqualTo(3);
    assertThat(reservations("d", "degraded")).isZero();
    Timer wait = meters.get("pacer.acquire.wait").tag("destination", "d").timer();
    assertThat(wait.count()).isEqualTo(3);
    assertThat(wait.totalTime(TimeUnit.MILLISECONDS)).isEqualTo(200.0);
    assertThat(wait.max(TimeUnit.MILLISECONDS)).isEqualTo(100.0);
  }

  @Test
  void turnsPacedLocallyAreDegradedAndTheGaugeSaysSoUntilTheCursorAnswers() throws Exception {
    new PacerMetrics(limiters).bindTo(meters);
    DestinationLimiter limiter = limiters.limiter(destination("d"));
    cursor.available = false;
    limiter.acquire().close();
    limiter.acquire().close();
    // The first local turn waits for the turns the fleet may still hold on the lost cursor, which
    // this process never saw: the loss plus one interval, plus the other two processes' turns.
    assertThat(time.sleepsMillis()).as("10/s divided by 3 processes").containsExactly(300L, 300L);
    assertThat(reservations("d", "degraded")).isEqualTo(2);
    assertThat(reservations("d", "shared")).isZero();
    assertThat(gauge("pacer.degraded", "d")).isEqualTo(1.0);
    Timer wait = meters.get("pacer.acquire.wait").tag("destination", "d").timer();
    assertThat(wait.count()).isEqualTo(2);
    assertThat(wait.totalTime(TimeUnit.MILLISECONDS)).isEqualTo(600.0);

    cursor.available = true;
    limiter.acquire().close();
    assertThat(gauge("pacer.degraded", "d")).isZero();
    assertThat(reservations("d", "shared")).isEqualTo(1);
  }

  @Test
  void aTryAcquireThatFindsNoTurnInTimeIsRefused() throws Exception {
    new PacerMetrics(limiters).bindTo(meters);
    DestinationLimiter limiter = limiters.limiter(destination("d"));
    limiter.acquire().close();
    assertThat(limiter.tryAcquire(Duration.ofMillis(50))).isEmpty();
    assertThat(reservations("d", "refused")).isEqualTo(1);
    assertThat(meters.get("pacer.acquire.wait").tag("destination", "d").timer().count())
        .as("a refusal is no wait for a turn")
        .isEqualTo(1);
    limiter.tryAcquire(Duration.ofMillis(100)).orElseThrow().close();
    assertThat(reservations("d", "refused")).isEqualTo(1);
    assertThat(reservations("d", "shared")).isEqualTo(2);
  }

  @Test
  void rateAnswersAreCountedAndTheMultiplierShown() {
    new PacerMetrics(limiters).bindTo(meters);
    DestinationLimiter limiter = limiters.limiter(destination("d"));
    limiter.noteAnswer(429, null, "https://d/1");
    assertThat(counter("pacer.throttled", "d")).isEqualTo(1);
    assertThat(gauge("pacer.backoff.multiplier", "d")).isEqualTo(2.0);
    limiter.noteAnswer(503, null, "https://d/2");
    limiter.noteAnswer(200, null, "https://d/3");
    assertThat(counter("pacer.throttled", "d")).isEqualTo(2);
    assertThat(gauge("pacer.backoff.multiplier", "d")).isEqualTo(4.0);
  }

  @Test
  void aLockoutIsCountedOnceAndStopsTheTurns() {
    new PacerMetrics(limiters).bindTo(meters);
    DestinationLimiter limiter = limiters.limiter(destination("d"));
    limiter.noteAnswer(403, null, "https://d/1");
    limiter.noteAnswer(403, null, "https://d/2");
    assertThat(counter("pacer.lockouts", "d")).isEqualTo(1);
    assertThatThrownBy(limiter::acquire).isInstanceOf(LockedOutException.class);
    assertThat(reservations("d", "shared") + reservations("d", "refused")).isZero();
  }

  @Test
  void theLatchedGaugeReadsTheRegistrysCursor() {
    new PacerMetrics(limiters).bindTo(meters);
    limiters.limiter(destination("d"));
    cursor.latched = true;
    assertThat(gauge("pacer.cursor.latched", "d")).isEqualTo(1.0);
    cursor.latched = false;
    assertThat(gauge("pacer.cursor.latched", "d")).isZero();
  }

  @Test
  void boundTwiceToOneMeterRegistryCountsOnce() throws Exception {
    PacerMetrics metrics = new PacerMetrics(limiters);
    metrics.bindTo(meters);
    metrics.bindTo(meters);
    limiters.limiter(destination("d")).acquire().close();
    assertThat(reservations("d", "shared")).isEqualTo(1);
  }

  @Test
  void anEvictedLimiterTakesItsMetersAndTheOneMadeAfterItIsReadAfresh() throws Exception {
    new PacerMetrics(limiters).bindTo(meters);
    WeakReference<DestinationLimiter> first = usedAndDropped("d");
    time.advance(Duration.ofMinutes(2));
    assertThat(limiters.evictIdle(Duration.ofMinutes(1))).isEqualTo(1);
    assertThat(meters.getMeters()).as("meters of the evicted destination").isEmpty();
    for (int i = 0; i < 50 && first.get() != null; i++) {
      System.gc();
    }
    assertThat(first.get()).as("the evicted limiter, collected").isNull();

    DestinationLimiter afresh = limiters.limiter(destination("d"));
    afresh.backoff();
    assertThat(gauge("pacer.backoff.multiplier", "d"))
        .as("read from the new limiter")
        .isEqualTo(2.0);
    assertThat(counter("pacer.throttled", "d")).as("counted from its creation").isEqualTo(1);
    assertThat(meters.getMeters()).hasSize(9);
  }

  /** The limiter of {@code name}, having taken a turn, held by nothing but a weak reference. */
  private WeakReference<DestinationLimiter> usedAndDropped(String name) throws Exception {
    DestinationLimiter limiter = limiters.limiter(destination(name));
    limiter.acquire().close();
    limiter.backoff();
    assertThat(gauge("pacer.backoff.multiplier", name)).isEqualTo(2.0);
    for (int i = 0; i < 100; i++) {
      limiter.noteCleanResponse();
    }
    return new WeakReference<>(limiter);
  }

  @Test
  void theMetersKeepNoLimiterAlive() throws Exception {
    WeakReference<LimiterRegistry> dropped = bindAndDrop();
    for (int i = 0; i < 50 && dropped.get() != null; i++) {
      System.gc();
    }
    assertThat(dropped.get()).as("the limiter registry, once the application dropped it").isNull();
    assertThat(gauge("pacer.backoff.multiplier", "gone")).isNaN();
    assertThat(gauge("pacer.cursor.latched", "gone")).isNaN();
  }

  /** Binds a registry with one limiter that has taken a turn, and keeps only a weak reference. */
  private WeakReference<LimiterRegistry> bindAndDrop() throws Exception {
    LimiterRegistry registry = new LimiterRegistry(new LocalCursor(time), time);
    new PacerMetrics(registry).bindTo(meters);
    registry.limiter(destination("gone")).acquire().close();
    assertThat(gauge("pacer.backoff.multiplier", "gone")).isEqualTo(1.0);
    return new WeakReference<>(registry);
  }

  private double reservations(String destination, String outcome) {
    return meters
        .get("pacer.reservations")
        .tag("destination", destination)
        .tag("outcome", outcome)
        .counter()
        .count();
  }

  private double counter(String name, String destination) {
    return meters.get(name).tag("destination", destination).counter().count();
  }

  private double gauge(String name, String destination) {
    return meters.get(name).tag("destination", destination).gauge().value();
  }

  /** A cursor whose store can be made unreachable and latched, over a working one. */
  private static final class FlakyCursor implements Cursor {
    private final Cursor delegate;
    volatile boolean available = true;
    volatile boolean latched;

    FlakyCursor(Cursor delegate) {
      this.delegate = delegate;
    }

    @Override
    public Reservation reserve(String name, Duration interval, Duration notBefore) {
      return available ? delegate.reserve(name, interval, notBefore) : Reservation.unavailable();
    }

    @Override
    public Reservation tryReserve(
        String name, Duration interval, Duration notBefore, Duration maxWait) {
      return available
          ? delegate.tryReserve(name, interval, notBefore, maxWait)
          : Reservation.unavailable();
    }

    @Override
    public boolean lockOut(String name, String reason) {
      return delegate.lockOut(name, reason);
    }

    @Override
    public void listen(String name, Listener listener) {
      delegate.listen(name, listener);
    }

    @Override
    public void unlisten(String name, Listener listener) {
      delegate.unlisten(name, listener);
    }

    @Override
    public boolean isLatched() {
      return latched;
    }

    @Override
    public void clear(String name) {
      delegate.clear(name);
    }
  }
}
