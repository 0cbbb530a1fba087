package dev.pacer;

import java.util.Collection;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The listeners of one {@link LimiterRegistry}, told as one: each event goes to every listener in
 * the order they were added, and a listener that throws is logged once, at WARN, and told of later
 * events as before, so that metrics never break a reservation.
 */
final class Listeners implements LimiterListener {

  private static final Logger log = LoggerFactory.getLogger(Listeners.class);

  /** A listener and whether its failure has been logged. */
  private record Entry(LimiterListener listener, AtomicBoolean failed) {}

  private final List<Entry> entries = new CopyOnWriteArrayList<>();

  /** Adds {@code listener}, and tells it of the limiters handed out before it came. */
  void add(LimiterListener listener, Collection<DestinationLimiter> existing) {
    Entry entry = new Entry(listener, new AtomicBoolean());
    entries.add(entry);
    for (DestinationLimiter limiter : existing) {
      tell(entry, l -> l.limiterCreated(limiter));
    }
  }

  @Override
  public void limiterCreated(DestinationLimiter limiter) {
    tell(l -> l.limiterCreated(limiter));
  }

  @Override
  public void limiterEvicted(DestinationLimiter limiter) {
    tell(l -> l.limiterEvicted(limiter));
  }

  /**
   * Runs between a granted turn's late check and its request, so without a lambda: a process's
   * first grant would otherwise link one there, in a cold JVM, after the check has read the clock,
   * and the request would leave that much later than the check saw.
   */
  @Override
  public void turn(Turn turn) {
    for (Entry e : entries) {
      try {
        e.listener().turn(turn);
      } catch (RuntimeException ex) {
        failed(e, ex);
      }
    }
  }

  @Override
  public void throttled(String destination, int multiplier) {
    tell(l -> l.throttled(destination, multiplier));
  }

  @Override
  public void lockedOut(String destination, String reason) {
    tell(l -> l.lockedOut(destination, reason));
  }

  private void tell(Consumer<LimiterListener> event) {
    for (Entry e : entries) {
      tell(e, event);
    }
  }

  /** Tells one listener of an event; what it throws is logged once and goes no further. */
  private static void tell(Entry e, Consumer<LimiterListener> event) {
    try {
      event.accept(e.listener());
    } catch (RuntimeException ex) {
      failed(e, ex);
    }
  }

  private static void failed(Entry e, RuntimeException ex) {
    if (e.failed().compareAndSet(false, true)) {
      log.warn("Limiter listener {} threw; pacing goes on, and its later failures are not"
          + " logged", e.listener(), ex);
    }
  }
}
