package dev.pacer.shared;

import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A listener a caller handed to Pacer, told of events so that what it throws goes no further: the
 * work the event came from goes on, the first failure is logged at WARN, and later ones are not
 * logged, so a listener that always throws cannot flood the log. The limiter's listeners and the
 * JDK client's request listeners are told through it.
 *
 * @param <L> the listener's type
 */
public final class GuardedListener<L> {

  private final L listener;
  private final Logger log;
  private final Supplier<String> named;
  private final String goesOn;
  private final AtomicBoolean failed = new AtomicBoolean();

  /**
   * Guards {@code listener}.
   *
   * @param listener the listener
   * @param loggedBy the name of the logger that logs its first failure: the class that owns the
   *     listener as its user knows it
   * @param named the listener as the log names it, for example "Limiter listener x" (asked only
   *     when it fails)
   * @param goesOn what goes on despite a failure, for example "pacing goes on"
   */
  public GuardedListener(L listener, String loggedBy, Supplier<String> named, String goesOn) {
    this.listener = Objects.requireNonNull(listener, "listener");
    this.log = LoggerFactory.getLogger(loggedBy);
    this.named = Objects.requireNonNull(named, "named");
    this.goesOn = Objects.requireNonNull(goesOn, "goesOn");
  }

  /**
   * Tells the listener of an event; what it throws is logged once and goes no further.
   *
   * @param event what the listener is told, as a call on it
   */
  public void tell(Consumer<? super L> event) {
    try {
      event.accept(listener);
    } catch (RuntimeException e) {
      failed(e);
    }
  }

  /**
   * The listener, for a caller that tells it without a lambda (on a path where linking one costs
   * time) and hands what it throws to {@link #failed}.
   *
   * @return the listener
   */
  public L listener() {
    return listener;
  }

  /**
   * What the listener threw: logged if it is its first failure.
   *
   * @param e what it threw
   */
  public void failed(RuntimeException e) {
    if (failed.compareAndSet(false, true)) {
      log.warn("{} threw; {}, and its later failures are not logged", named.get(), goesOn, e);
    }
  }
}
