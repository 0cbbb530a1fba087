package dev.pacer;

import dev.pacer.internal.Pacing;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;

/**
 * A cursor held in this process's memory: a true ceiling for one process and all its threads, and
 * N times the ceiling for N processes: what Guava's or Resilience4j's limiters give a fleet. It is
 * the per-process baseline that the fleet tests prove insufficient, and a cursor for programs that
 * really are one process.
 */
public final class LocalCursor implements Cursor {

  private final TimeSource time;
  private final Map<String, Long> cursors = new HashMap<>();

  public LocalCursor(TimeSource time) {
    this.time = time;
  }

  public LocalCursor() {
    this(TimeSource.SYSTEM);
  }

  @Override
  public synchronized Reservation reserve(String name, Duration interval, Duration notBefore) {
    long now = time.nanoTime();
    Pacing.Turn turn =
        Pacing.reserve(stored(name), now, now + notBefore.toNanos(), interval.toNanos());
    cursors.put(name, turn.newCursor());
    return Reservation.grantedNanos(turn.waitNanos());
  }

  @Override
  public synchronized Reservation tryReserve(
      String name, Duration interval, Duration notBefore, Duration maxWait) {
    long now = time.nanoTime();
    Pacing.Turn turn = Pacing.reserveWithin(stored(name), now, now + notBefore.toNanos(),
        interval.toNanos(), maxWait.toNanos());
    if (turn == null) {
      return Reservation.refused();
    }
    cursors.put(name, turn.newCursor());
    return Reservation.grantedNanos(turn.waitNanos());
  }

  @Override
  public synchronized void clear(String name) {
    cursors.remove(name);
  }

  private long stored(String name) {
    Long cursor = cursors.get(name);
    return cursor == null ? Pacing.NO_CURSOR : cursor;
  }

  @Override
  public String toString() {
    return "LocalCursor";
  }
}
