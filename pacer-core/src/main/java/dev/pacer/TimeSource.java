package dev.pacer;

import java.util.concurrent.locks.LockSupport;

/**
 * The seam between Pacer and time: a monotonic clock and a way to sleep on it.
 *
 * <p>Everything in Pacer that reads the local clock or waits goes through one of these, so tests
 * can substitute a fake whose {@code sleep} advances its own clock instead of blocking (the way
 * Guava's {@code SleepingStopwatch} is used in its RateLimiter tests). The shared cursor does not
 * use this clock at all: its "now" is the database's.
 */
public interface TimeSource {

  /**
   * Monotonic nanoseconds, as {@link System#nanoTime()}: only differences are meaningful.
   *
   * @return the current instant, in nanoseconds
   */
  long nanoTime();

  /**
   * Blocks for {@code nanos} (no-op if not positive).
   *
   * @param nanos how long to block
   * @throws InterruptedException if interrupted while blocked
   */
  void sleepNanos(long nanos) throws InterruptedException;

  /**
   * Wall-clock milliseconds since the epoch, as {@link System#currentTimeMillis()}: used only where
   * processes on different hosts must act at the same instants (retry boundaries after an outage).
   *
   * @return the current time, in milliseconds since the epoch
   */
  default long epochMillis() {
    return System.currentTimeMillis();
  }

  /**
   * Wall-clock microseconds since the epoch, from {@link java.time.Instant#now()}: used only to
   * place events of several processes on one timeline.
   *
   * @return the current time, in microseconds since the epoch
   */
  default long epochMicros() {
    java.time.Instant now = java.time.Instant.now();
    return Math.addExact(
        Math.multiplyExact(now.getEpochSecond(), 1_000_000L), now.getNano() / 1_000L);
  }

  /**
   * The real clock, and sleeps that end at their nanosecond deadline: parked, not {@link
   * Thread#sleep(long, int)}, which before Java 21 rounds a wait up to the next whole millisecond.
   * Every turn would then start up to 1 ms late, and at 200/s that is two fifths of the 2.5 ms a
   * turn may be late before it is given up.
   */
  TimeSource SYSTEM =
      new TimeSource() {
        @Override
        public long nanoTime() {
          return System.nanoTime();
        }

        @Override
        public void sleepNanos(long nanos) throws InterruptedException {
          long deadline = System.nanoTime() + nanos;
          for (long left = nanos; left > 0; left = deadline - System.nanoTime()) {
            LockSupport.parkNanos(left);
            if (Thread.interrupted()) {
              throw new InterruptedException();
            }
          }
        }

        @Override
        public String toString() {
          return "TimeSource.SYSTEM";
        }
      };
}
