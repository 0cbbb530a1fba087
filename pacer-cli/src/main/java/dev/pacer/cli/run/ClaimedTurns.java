package dev.pacer.cli.run;

import dev.pacer.BackoffScope;
import dev.pacer.TimeSource;
import dev.pacer.spi.Cursor;
import dev.pacer.spi.Reservation;
import java.time.Duration;
import java.util.Map;
import java.util.OptionalInt;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The cursor of per-host mode: a fetch thread's first reservation for a host after its claim is the
 * turn the claim already reserved ({@link #prepay}); every other call (a redirect hop, a turn
 * retaken after a late wake-up, a pause, a lockout, a 429's doubling, the holds listener) goes to
 * the host's row in the shared cursor, the row the claim reserved on.
 *
 * <p>A limiter under the fleet's backoff reports the clean answers it heard with its next
 * reservation; those that arrive with a prepaid turn are kept here, per host, until {@link
 * #drainCleanAnswers} hands them to the heartbeat, which counts them on the host's row.
 */
final class ClaimedTurns implements Cursor {

  /**
   * A turn reserved by a claim, for the claiming thread, starting at a local instant; {@code
   * interval} is the host's, which the claim spaced it by (times {@code backoff}).
   */
  private record Prepaid(String host, long startsNanos, Duration interval, int backoff) {}

  private final Cursor shared;
  private final TimeSource time;
  private final ThreadLocal<Prepaid> prepaid = new ThreadLocal<>();
  private final Map<String, Integer> cleanAnswers = new ConcurrentHashMap<>();

  ClaimedTurns(Cursor shared, TimeSource time) {
    this.shared = shared;
    this.time = time;
  }

  /**
   * The calling thread's next reservation for {@code host} is the turn its claim took, starting
   * {@code turnIn} from now. A turn already begun when the reservation comes is answered as that
   * much in the past, as {@code PostgresCursor} answers one, so that the limiter's check for late
   * turns gives it up if the request would leave too late.
   */
  void prepay(String host, Duration turnIn, Duration interval, int backoff) {
    prepaid.set(new Prepaid(host, time.nanoTime() + turnIn.toNanos(), interval, backoff));
  }

  /** Drops an unused prepaid turn (the item was not fetched); the turn itself is spent. */
  void forget() {
    prepaid.remove();
  }

  /** The clean answers heard with prepaid turns since the last call, per host. */
  Map<String, Integer> drainCleanAnswers() {
    Map<String, Integer> out = new java.util.HashMap<>();
    for (String host : cleanAnswers.keySet()) {
      Integer n = cleanAnswers.remove(host);
      if (n != null && n > 0) {
        out.put(host, n);
      }
    }
    return out;
  }

  /**
   * The prepaid turn of {@code name}, if this thread holds one. A request that asks for more than
   * one interval (a fetcher's first request, which opens a connection and may leave late: see
   * {@code DestinationFetcher}) also pushes the host's cursor by the intervals the claim did not
   * take, so that the next request anywhere comes that much later, as the limiter's own turn would.
   */
  private Reservation take(String name, Duration asked) {
    Prepaid p = prepaid.get();
    if (p == null || !p.host().equals(name)) {
      return null;
    }
    prepaid.remove();
    Duration extra = asked.minus(p.interval());
    if (!extra.isNegative() && !extra.isZero()) {
      shared.reserveUnderFleetBackoff(name, extra, Duration.ZERO, null, 0);
    }
    return Reservation.grantedNanos(p.startsNanos() - time.nanoTime())
        .withFleetBackoff(Math.max(1, Math.min(BackoffScope.MAX_MULTIPLIER, p.backoff())));
  }

  @Override
  public Reservation reserve(String name, Duration interval, Duration notBefore) {
    Reservation turn = take(name, interval);
    return turn != null ? turn : shared.reserve(name, interval, notBefore);
  }

  @Override
  public Reservation tryReserve(
      String name, Duration interval, Duration notBefore, Duration maxWait) {
    Reservation turn = take(name, interval);
    return turn != null ? turn : shared.tryReserve(name, interval, notBefore, maxWait);
  }

  @Override
  public boolean isLatched() {
    return shared.isLatched();
  }

  /**
   * What the shared cursor counted: only the hosts it reserved turns of itself (a redirect hop, a
   * turn retaken), since a claim's turn is the frontier's statement, which takes no census; for the
   * others a degraded limiter divides by {@code maxFetchingProcesses} alone.
   */
  @Override
  public OptionalInt fetchingProcesses(String name) {
    return shared.fetchingProcesses(name);
  }

  @Override
  public boolean keepsFleetBackoff() {
    return shared.keepsFleetBackoff();
  }

  @Override
  public Reservation reserveUnderFleetBackoff(
      String name, Duration interval, Duration notBefore, Duration maxWait, int clean) {
    Reservation turn = take(name, interval);
    if (turn == null) {
      return shared.reserveUnderFleetBackoff(name, interval, notBefore, maxWait, clean);
    }
    if (clean > 0) {
      cleanAnswers.merge(name, clean, Integer::sum);
    }
    return turn;
  }

  @Override
  public OptionalInt throttled(String name) {
    return shared.throttled(name);
  }

  @Override
  public boolean pause(String name, Duration delay) {
    return shared.pause(name, delay);
  }

  @Override
  public boolean lockOut(String name, String reason) {
    return shared.lockOut(name, reason);
  }

  @Override
  public void clearLockout(String name) {
    shared.clearLockout(name);
  }

  @Override
  public void listen(String name, Listener listener) {
    shared.listen(name, listener);
  }

  @Override
  public void unlisten(String name, Listener listener) {
    shared.unlisten(name, listener);
  }

  @Override
  public void clear(String name) {
    shared.clear(name);
  }

  @Override
  public String toString() {
    return "turns claimed from the frontier, then " + shared;
  }
}
