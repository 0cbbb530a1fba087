package dev.pacer;

import dev.pacer.internal.Backoff;
import dev.pacer.internal.Pacing;
import dev.pacer.spi.Cursor;
import dev.pacer.spi.Reservation;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;

/**
 * A cursor held in this process's memory: a true ceiling for one process and all its threads, and N
 * times the ceiling for N processes: what Guava's or Resilience4j's limiters give a fleet. It is
 * the per-process baseline that the fleet tests prove insufficient, and a cursor for programs that
 * really are one process.
 */
public final class LocalCursor implements Cursor {

  private final TimeSource time;
  private final Map<String, Long> cursors = new HashMap<>();
  private final Map<String, String> lockouts = new HashMap<>();
  private final Map<String, FleetBackoff> backoffs = new HashMap<>();
  private final Map<String, List<Listener>> listeners = new HashMap<>();

  /**
   * A cursor on {@code time}.
   *
   * @param time the clock its turns are computed on
   */
  public LocalCursor(TimeSource time) {
    this.time = time;
  }

  /** A cursor on the system clock. */
  public LocalCursor() {
    this(TimeSource.SYSTEM);
  }

  @Override
  public synchronized Reservation reserve(String name, Duration interval, Duration notBefore) {
    if (lockouts.containsKey(name)) {
      return Reservation.lockedOut(lockouts.get(name));
    }
    long now = time.nanoTime();
    Pacing.Turn turn =
        Pacing.reserve(stored(name), now, now + notBefore.toNanos(), interval.toNanos());
    cursors.put(name, turn.newCursor());
    return Reservation.grantedNanos(turn.waitNanos());
  }

  @Override
  public synchronized Reservation tryReserve(
      String name, Duration interval, Duration notBefore, Duration maxWait) {
    if (lockouts.containsKey(name)) {
      return Reservation.lockedOut(lockouts.get(name));
    }
    long now = time.nanoTime();
    Pacing.Turn turn =
        Pacing.reserveWithin(
            stored(name), now, now + notBefore.toNanos(), interval.toNanos(), maxWait.toNanos());
    if (turn == null) {
      return Reservation.refused();
    }
    cursors.put(name, turn.newCursor());
    return Reservation.grantedNanos(turn.waitNanos());
  }

  @Override
  public boolean keepsFleetBackoff() {
    return true;
  }

  @Override
  public synchronized Reservation reserveUnderFleetBackoff(
      String name, Duration interval, Duration notBefore, Duration maxWait, int cleanAnswers) {
    FleetBackoff kept = backoffs.getOrDefault(name, FleetBackoff.NONE);
    FleetBackoff after = kept.counting(cleanAnswers);
    Duration spaced = interval.multipliedBy(after.multiplier());
    Reservation turn =
        maxWait == null
            ? reserve(name, spaced, notBefore)
            : tryReserve(name, spaced, notBefore, maxWait);
    if (!turn.isGranted()) {
      return turn;
    }
    backoffs.put(name, after);
    return turn.withFleetBackoff(after.multiplier());
  }

  @Override
  public synchronized OptionalInt throttled(String name) {
    FleetBackoff after = backoffs.getOrDefault(name, FleetBackoff.NONE).throttled();
    backoffs.put(name, after);
    return OptionalInt.of(after.multiplier());
  }

  /**
   * The fleet's backoff as Pacer's table keeps it: the multiplier, and the clean answers counted
   * since the last rate-pressure answer. Clean answers are counted before the turn is spaced, so
   * the turn that completes 100 is already spaced by the halved multiplier.
   */
  private record FleetBackoff(int multiplier, int clean) {
    static final FleetBackoff NONE = new FleetBackoff(1, 0);

    FleetBackoff counting(int cleanAnswers) {
      int counted = clean + cleanAnswers;
      return Backoff.halves(counted)
          ? new FleetBackoff(Backoff.halved(multiplier), 0)
          : new FleetBackoff(multiplier, counted);
    }

    FleetBackoff throttled() {
      return new FleetBackoff(Backoff.doubled(multiplier), 0);
    }
  }

  @Override
  public boolean pause(String name, Duration delay) {
    List<Listener> told;
    synchronized (this) {
      long until = time.nanoTime() + delay.toNanos();
      cursors.merge(name, until, Math::max);
      told = List.copyOf(listeners.getOrDefault(name, List.of()));
    }
    told.forEach(l -> l.paused(delay));
    return true;
  }

  @Override
  public boolean lockOut(String name, String reason) {
    List<Listener> told;
    String kept;
    synchronized (this) {
      kept = lockouts.computeIfAbsent(name, n -> reason);
      told = List.copyOf(listeners.getOrDefault(name, List.of()));
    }
    told.forEach(l -> l.lockedOut(kept));
    return true;
  }

  @Override
  public synchronized void clearLockout(String name) {
    lockouts.remove(name);
  }

  @Override
  public synchronized void listen(String name, Listener listener) {
    listeners.computeIfAbsent(name, n -> new ArrayList<>()).add(listener);
  }

  @Override
  public synchronized void unlisten(String name, Listener listener) {
    List<Listener> those = listeners.get(name);
    if (those != null && those.remove(listener) && those.isEmpty()) {
      listeners.remove(name);
    }
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
