package dev.pacer;

import dev.pacer.shared.GuardedListener;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;

/**
 * The listeners of one {@link LimiterRegistry}, told as one: each event goes to every listener in
 * the order they were added, and a listener that throws is logged once, at WARN, and told of later
 * events as before, so that metrics never break a reservation.
 */
final class Listeners implements LimiterListener {

  private final List<GuardedListener<LimiterListener>> entries = new CopyOnWriteArrayList<>();

  /** Adds {@code listener}, and tells it of the limiters handed out before it came. */
  void add(LimiterListener listener, Collection<DestinationLimiter> existing) {
    GuardedListener<LimiterListener> entry =
        new GuardedListener<>(
            listener,
            Listeners.class.getName(),
            () -> "Limiter listener " + listener,
            "pacing goes on");
    entries.add(entry);
    for (DestinationLimiter limiter : existing) {
      entry.tell(l -> l.limiterCreated(limiter));
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
    for (GuardedListener<LimiterListener> e : entries) {
      try {
        e.listener().turn(turn);
      } catch (RuntimeException ex) {
        e.failed(ex);
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
    for (GuardedListener<LimiterListener> e : entries) {
      e.tell(event);
    }
  }
}
