package dev.pacer;

import dev.pacer.internal.Backoff;
import dev.pacer.internal.Pacing;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;

/**
 * A cursor held in this process's memory: a true ceiling for one process and all its threads, and
 * N times the ceiling for N processes: what Guava's or Resilience4j's limiters give a fleet. It is
 * the per-process baseline that the fleet tests prove insufficient, and a cursor for programs that
 * really are one process.
 */
public final class LocalCursor implements Cursor {

  private final TimeSource time;
  private final Map<String, Long> cursors = new HashMap<>();
  private final Map<String, String> lockouts = new HashMap<>();
  private final Map<String, Backoff> backoffs = new HashMap<>();
  private final Map<String, List<Listener>> listeners = new HashMap<>();

  public LocalCursor(TimeSource time) {
    this.time = time;
  }

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
    Pacing.Turn turn = Pacing.reserveWithin(stored(name), now, now + notBefore.toNanos(),
        interval.toNanos(), maxWait.toNanos());
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
  public synchronized Reservation reserveUnderFleetBackoff(String name, Duration interval,
      Duration notBefore, Duration maxWait, int cleanAnswers) {
    Backoff backoff = backoffs.computeIfAbsent(name, n -> new Backoff());
    int multiplier = backoff.multiplier();
    Duration spaced = interval.multipliedBy(multiplier);
    Reservation turn = maxWait == null
        ? reserve(name, spaced, notBefore) : tryReserve(name, spaced, notBefore, maxWait);
    if (!turn.isGranted()) {
      return turn;
    }
    for (int i = 0; i < cleanAnswers; i++) {
      backoff.onCleanResponse();
    }
    return turn.withFleetBackoff(multiplier);
  }

  @Override
  public synchronized OptionalInt throttled(String name) {
    Backoff backoff = backoffs.computeIfAbsent(name, n -> new Backoff());
    backoff.onRatePressure();
    return OptionalInt.of(backoff.multiplier());
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
