package dev.pacer.testing;

import dev.pacer.TimeSource;
import dev.pacer.spi.Reservation;

/**
 * A clock that remembers, for each thread, the instant it last read, so that a test can place a
 * granted turn exactly: a cursor's wait counts from its last reading of its clock, so that reading
 * plus {@link Reservation#startsIn()} is the turn's start on this clock, wherever the scheduler
 * held the thread before or after. Pass it to the cursor and ask it for {@link #startOf} on the
 * thread that made the reservation, before that thread reads the clock again.
 */
public final class TurnClock implements TimeSource {

  private final TimeSource time;
  private final ThreadLocal<long[]> lastRead = ThreadLocal.withInitial(() -> new long[1]);

  /**
   * A clock on {@code time}.
   *
   * @param time the clock read and slept on, {@link FakeTime} or {@link TimeSource#SYSTEM}
   */
  public TurnClock(TimeSource time) {
    this.time = time;
  }

  @Override
  public long nanoTime() {
    long now = time.nanoTime();
    lastRead.get()[0] = now;
    return now;
  }

  @Override
  public void sleepNanos(long nanos) throws InterruptedException {
    time.sleepNanos(nanos);
  }

  @Override
  public long epochMillis() {
    return time.epochMillis();
  }

  @Override
  public long epochMicros() {
    return time.epochMicros();
  }

  /**
   * The start of {@code turn} on this clock, a granted reservation this thread just made: its
   * signed wait, not the {@link Reservation#waitTime()} that stops at zero, from the cursor's last
   * reading of this clock on this thread.
   *
   * @param turn a granted reservation made on this thread
   * @return the instant its turn starts, in this clock's nanoseconds
   */
  public long startOf(Reservation turn) {
    if (!turn.isGranted()) {
      throw new IllegalArgumentException("only a granted turn starts: " + turn);
    }
    return lastRead.get()[0] + turn.startsIn().toNanos();
  }

  /**
   * The instant this thread last read this clock.
   *
   * @return that reading, in this clock's nanoseconds
   */
  public long lastRead() {
    return lastRead.get()[0];
  }

  @Override
  public String toString() {
    return "TurnClock(" + time + ")";
  }
}
