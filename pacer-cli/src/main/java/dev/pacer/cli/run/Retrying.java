package dev.pacer.cli.run;

import dev.pacer.TimeSource;
import java.sql.SQLException;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;
import java.util.function.Function;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * How a worker talks to the work state while PostgreSQL may be away: each call is retried until
 * PostgreSQL answers. While the database's {@code OutagePolicy} holds it down, a retry waits for
 * the policy's next boundary, just after its probe, so every thread of the fleet is back on the
 * boundary the database returned by; other failures (a statement timeout, a connection the policy
 * has not yet judged) are retried after 250 ms, then twice as long each time up to 5 s. A fetch
 * thread never drops an outcome it already has (the body is on disk) because the database blinked.
 *
 * <p>A call gives up only when the run stops (if the caller asked for that: a claim is not worth
 * waiting for once the run is over, a fetched outcome is) or after {@code giveUpAfter}; then the
 * item's lease lapses and it is fetched again, never counted twice. Giving up is a value, {@link
 * Attempt.GaveUp}, never a null.
 *
 * <p>One WARN per outage for the whole process, not one per thread or call, and one INFO when
 * PostgreSQL answers again.
 */
final class Retrying {

  /** Its lines are the worker's, and operators read them as such. */
  private static final Logger log = LoggerFactory.getLogger(Worker.class);

  private static final long FIRST_DELAY_MILLIS = 250;
  private static final long MAX_DELAY_MILLIS = 5000;

  /** After a boundary, the policy's probe goes first; a retry then finds the verdict. */
  private static final long AFTER_BOUNDARY_MILLIS = 100;

  /** A unit of work against the work state. */
  @FunctionalInterface
  interface SqlCall<T> {
    T call() throws SQLException;
  }

  /** The outcome of a retried call: PostgreSQL answered, or the worker stopped asking. */
  sealed interface Attempt<T> {
    record Answered<T>(T value) implements Attempt<T> {}

    record GaveUp<T>() implements Attempt<T> {}
  }

  /** What became of an item's outcome. */
  enum Recorded {
    /** Written; the item is counted. */
    RECORDED,
    /** Refused by its lease token: the item's current holder records it. */
    LEASE_LOST,
    /** Never written: the lease lapses and the item is fetched again. */
    GAVE_UP
  }

  private final TimeSource time;
  private final Duration giveUpAfter;
  private final BooleanSupplier stopped;
  private final Function<SQLException, String> describe;
  private final LongSupplier connectionAttempts;
  private final Supplier<Duration> untilDatabaseRetry;
  private final AtomicBoolean outageWarned = new AtomicBoolean();

  /**
   * @param stopped whether the run has stopped
   * @param describe a failure in words, with secrets redacted
   * @param connectionAttempts connection attempts by this process so far, for the INFO line
   * @param untilDatabaseRetry the outage policy's time to its next attempt; zero while it is up
   */
  Retrying(
      TimeSource time,
      Duration giveUpAfter,
      BooleanSupplier stopped,
      Function<SQLException, String> describe,
      LongSupplier connectionAttempts,
      Supplier<Duration> untilDatabaseRetry) {
    this.time = time;
    this.giveUpAfter = giveUpAfter;
    this.stopped = stopped;
    this.describe = describe;
    this.connectionAttempts = connectionAttempts;
    this.untilDatabaseRetry = untilDatabaseRetry;
  }

  /** Runs {@code call} until PostgreSQL answers, or the run stops (if {@code giveUpOnStop}). */
  <T> Attempt<T> call(String what, SqlCall<T> call, boolean giveUpOnStop)
      throws InterruptedException {
    long started = time.nanoTime();
    long delay = FIRST_DELAY_MILLIS;
    while (true) {
      Attempt<T> attempt = once(what, call);
      if (attempt instanceof Attempt.Answered<T>) {
        return attempt;
      }
      long waited = time.nanoTime() - started;
      if ((giveUpOnStop && stopped.getAsBoolean()) || waited > giveUpAfter.toNanos()) {
        log.error("Gave up trying to {} after {} s", what, waited / 1_000_000_000L);
        return new Attempt.GaveUp<>();
      }
      delay = pause(delay);
    }
  }

  /**
   * Runs {@code call} once: answered, or {@link Attempt.GaveUp} if PostgreSQL did not answer (the
   * outage's WARN logged once, as by {@link #call}). For a caller that has other work to do while
   * PostgreSQL is away, and waits with {@link #pause} only when it has none.
   */
  <T> Attempt<T> once(String what, SqlCall<T> call) {
    try {
      T value = call.call();
      if (outageWarned.compareAndSet(true, false)) {
        log.info(
            "PostgreSQL answers again; work state is being recorded again ({} connection"
                + " attempt(s) by this process so far)",
            connectionAttempts.getAsLong());
      }
      return new Attempt.Answered<>(value);
    } catch (SQLException e) {
      if (outageWarned.compareAndSet(false, true)) {
        log.warn(
            "Could not {} ({}). PostgreSQL holds the work state: fetch threads keep their fetched"
                + " items (bodies already on disk) and retry until it answers; meanwhile each"
                + " worker fetches the items it leased ahead, at the divided rate",
            what,
            describe.apply(e));
      }
      return new Attempt.GaveUp<>();
    }
  }

  /**
   * Whether the database's outage policy holds connections back now: an attempt would fail at once,
   * without asking PostgreSQL.
   */
  boolean heldBack() {
    return !untilDatabaseRetry.get().isZero();
  }

  /**
   * Waits before the next attempt after a failed one: until just after the outage policy's next
   * boundary while it holds connections back, otherwise {@code delayMillis}. Answers the delay for
   * the attempt after that.
   */
  long pause(long delayMillis) throws InterruptedException {
    Duration untilBoundary = untilDatabaseRetry.get();
    if (untilBoundary.isZero()) {
      time.sleepNanos(Duration.ofMillis(delayMillis).toNanos());
      return Math.min(MAX_DELAY_MILLIS, delayMillis * 2);
    }
    time.sleepNanos(untilBoundary.plusMillis(AFTER_BOUNDARY_MILLIS).toNanos());
    return FIRST_DELAY_MILLIS;
  }

  /** The delay {@link #pause} starts from. */
  static long firstDelayMillis() {
    return FIRST_DELAY_MILLIS;
  }

  /** Records an item's outcome: {@code call} answers false when the lease token refused it. */
  Recorded record(String what, SqlCall<Boolean> call) throws InterruptedException {
    Attempt<Boolean> attempt = call(what, call, false);
    if (attempt instanceof Attempt.Answered<Boolean> answered) {
      return answered.value() ? Recorded.RECORDED : Recorded.LEASE_LOST;
    }
    return Recorded.GAVE_UP;
  }
}
