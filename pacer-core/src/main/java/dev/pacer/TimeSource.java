package dev.pacer;

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
    return Math.addExact(Math.multiplyExact(now.getEpochSecond(), 1_000_000L), now.getNano() / 1_000L);
  }

  /** The real clock and {@link Thread#sleep}. */
  TimeSource SYSTEM =
      new TimeSource() {
        @Override
        public long nanoTime() {
          return System.nanoTime();
        }

        @Override
        public void sleepNanos(long nanos) throws InterruptedException {
          if (nanos > 0) {
            Thread.sleep(nanos / 1_000_000L, (int) (nanos % 1_000_000L));
          }
        }

        @Override
        public String toString() {
          return "TimeSource.SYSTEM";
        }
      };
}
