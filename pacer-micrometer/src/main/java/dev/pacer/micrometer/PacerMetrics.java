package dev.pacer.micrometer;

import dev.pacer.DestinationLimiter;
import dev.pacer.LimiterListener;
import dev.pacer.LimiterRegistry;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.binder.MeterBinder;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.WeakHashMap;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Micrometer meters for every limiter of one {@link LimiterRegistry}: those it has handed out when
 * bound and those it hands out later.
 *
 * <pre>{@code
 * new PacerMetrics(limiters).bindTo(meterRegistry);
 * }</pre>
 *
 * <p>Every meter is tagged {@code destination} (the destination's name):
 *
 * <table>
 *   <caption>Pacer's meters</caption>
 *   <tr><th>meter</th><th>type</th><th>what it shows</th></tr>
 *   <tr><td>{@code pacer.acquire.wait}</td><td>timer</td><td>how long each {@code acquire} or
 *       {@code tryAcquire} that got a turn waited for it, from the call until the slot was handed
 *       over: the concurrency permit, the fleet slot and the turn itself</td></tr>
 *   <tr><td>{@code pacer.reservations}</td><td>counter, tagged {@code outcome}</td><td>calls for a
 *       turn by how they ended: {@code shared} (a turn on the shared cursor), {@code degraded}
 *       (paced locally, at the ceiling divided by {@code maxFetchingProcesses}, or by the processes
 *       the cursor saw taking turns if more, because the shared cursor was unavailable), {@code
 *       refused} (a {@code tryAcquire} that found no turn within its {@code maxWait})</td></tr>
 *   <tr><td>{@code pacer.backoff.multiplier}</td><td>gauge</td><td>the multiplier on the
 *       interval: 1, 2, 4, 8 or 16 (under {@code BackoffScope.FLEET}, the fleet's as last
 *       seen)</td></tr>
 *   <tr><td>{@code pacer.degraded}</td><td>gauge</td><td>1 while the limiter's last reservation
 *       was paced locally, else 0</td></tr>
 *   <tr><td>{@code pacer.throttled}</td><td>counter</td><td>rate-pressure answers (429, 503)
 *       heard by this process; each doubled the backoff</td></tr>
 *   <tr><td>{@code pacer.lockouts}</td><td>counter</td><td>lockouts the limiter learnt of, here
 *       or from another process: at most 1, since a lockout is irreversible in a limiter</td></tr>
 *   <tr><td>{@code pacer.cursor.latched}</td><td>gauge</td><td>1 while the shared cursor is
 *       latched as unavailable (for the PostgreSQL cursor: its outage policy holds the database
 *       down until a retry boundary), else 0; the registry's one cursor, shown beside each
 *       destination</td></tr>
 * </table>
 *
 * <p>The counters and the timer count from the moment of binding; the gauges read the limiter (or
 * the registry) when scraped, and hold it only weakly, so a registry dropped by the application is
 * not kept alive by its meters (its gauges then read NaN). A binder bound twice to one meter
 * registry counts once. Events reach the meters through {@link LimiterListener}, on the thread that
 * caused them: a counter increment or a timer record, nothing that blocks.
 *
 * <p>A limiter the registry evicts ({@link LimiterRegistry#evictIdle}) takes its destination's
 * meters with it, so that a process meeting many hosts keeps meters only for those it is busy with;
 * when the destination's limiter comes back, its meters are registered again and count from there
 * (a monitoring system reads that as a counter reset).
 */
public final class PacerMetrics implements MeterBinder {

  private final LimiterRegistry limiters;
  private final Set<MeterRegistry> bound = Collections.newSetFromMap(new WeakHashMap<>());

  /**
   * Meters for the limiters of {@code limiters}, once bound to a meter registry.
   *
   * @param limiters the registry whose limiters, present and future, are measured
   */
  public PacerMetrics(LimiterRegistry limiters) {
    this.limiters = Objects.requireNonNull(limiters, "limiters");
  }

  @Override
  public void bindTo(MeterRegistry registry) {
    Objects.requireNonNull(registry, "registry");
    synchronized (bound) {
      if (!bound.add(registry)) {
        return;
      }
    }
    limiters.addListener(new Meters(registry, limiters));
  }

  /** The meters of one destination that are counted rather than read. */
  private record Counted(
      Timer acquireWait,
      Counter shared,
      Counter degraded,
      Counter refused,
      Counter throttled,
      Counter lockouts) {

    List<Meter> meters() {
      return List.of(acquireWait, shared, degraded, refused, throttled, lockouts);
    }

    static Counted register(MeterRegistry registry, String destination) {
      Tags tags = Tags.of("destination", destination);
      return new Counted(
          Timer.builder("pacer.acquire.wait")
              .description("How long acquire waited for its turn")
              .tags(tags)
              .register(registry),
          reservations(registry, tags, "shared"),
          reservations(registry, tags, "degraded"),
          reservations(registry, tags, "refused"),
          Counter.builder("pacer.throttled")
              .description("Rate-pressure answers (429, 503) heard by this process")
              .tags(tags)
              .register(registry),
          Counter.builder("pacer.lockouts")
              .description("Lockouts of the destination this process learnt of")
              .tags(tags)
              .register(registry));
    }

    private static Counter reservations(MeterRegistry registry, Tags tags, String outcome) {
      return Counter.builder("pacer.reservations")
          .description("Calls for a turn, by outcome: shared, degraded (paced locally), refused")
          .tags(tags)
          .tag("outcome", outcome)
          .register(registry);
    }
  }

  /** One meter registry's view of the limiters: registers their meters and counts their events. */
  private static final class Meters implements LimiterListener {
    private final MeterRegistry registry;
    private final LimiterRegistry limiters;
    private final Map<String, Counted> counted = new ConcurrentHashMap<>();
    private final Map<String, List<Gauge>> read = new ConcurrentHashMap<>();

    Meters(MeterRegistry registry, LimiterRegistry limiters) {
      this.registry = registry;
      this.limiters = limiters;
    }

    @Override
    public void limiterCreated(DestinationLimiter limiter) {
      String destination = limiter.destination().name();
      counted(destination);
      Tags tags = Tags.of("destination", destination);
      read.put(
          destination,
          List.of(
              Gauge.builder(
                      "pacer.backoff.multiplier", limiter, DestinationLimiter::backoffMultiplier)
                  .description("The backoff multiplier on the destination's interval (1 to 16)")
                  .tags(tags)
                  .register(registry),
              Gauge.builder("pacer.degraded", limiter, l -> l.isDegraded() ? 1 : 0)
                  .description(
                      "1 while the limiter paces locally because the shared cursor is"
                          + " unavailable")
                  .tags(tags)
                  .register(registry),
              Gauge.builder("pacer.cursor.latched", limiters, r -> r.isCursorLatched() ? 1 : 0)
                  .description("1 while the shared cursor is latched as unavailable")
                  .tags(tags)
                  .register(registry)));
    }

    /**
     * Removes the destination's meters: its gauges would go on reading the evicted limiter (a gauge
     * registered again under the same name and tags is the old one), and its counters would stay
     * for a host this process may never meet again.
     */
    @Override
    public void limiterEvicted(DestinationLimiter limiter) {
      String destination = limiter.destination().name();
      List<Gauge> gauges = read.remove(destination);
      if (gauges != null) {
        gauges.forEach(registry::remove);
      }
      Counted meters = counted.remove(destination);
      if (meters != null) {
        meters.meters().forEach(registry::remove);
      }
    }

    @Override
    public void turn(Turn turn) {
      Counted meters = counted(turn.destination());
      switch (turn.outcome()) {
        case SHARED -> {
          meters.shared().increment();
          meters.acquireWait().record(turn.waited());
        }
        case DEGRADED -> {
          meters.degraded().increment();
          meters.acquireWait().record(turn.waited());
        }
        case REFUSED -> meters.refused().increment();
      }
    }

    @Override
    public void throttled(String destination, int multiplier) {
      counted(destination).throttled().increment();
    }

    @Override
    public void lockedOut(String destination, String reason) {
      counted(destination).lockouts().increment();
    }

    private Counted counted(String destination) {
      return counted.computeIfAbsent(destination, d -> Counted.register(registry, d));
    }

    @Override
    public String toString() {
      return "PacerMetrics on " + registry;
    }
  }
}
