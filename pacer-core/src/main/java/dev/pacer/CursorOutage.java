package dev.pacer;

import java.util.concurrent.atomic.AtomicLong;

/**
 * When this process first found its shared cursor unavailable after the cursor last answered, on
 * the local clock: one for every limiter of a registry, since they all ask the same cursor.
 *
 * <p>The cursor grants no turn once it is unavailable, so the turns the fleet still holds on it
 * were granted by the first instant any limiter of this process found it so. A limiter that asks
 * for the first time well into an outage (a crawler's host met only then) counts the fleet's queue
 * from that instant, not from its own first answer, which would hold its local turns back for as
 * long as the outage had already lasted. Any answer from the cursor ends the outage.
 */
final class CursorOutage {

  private static final long ANSWERING = Long.MIN_VALUE;

  private final AtomicLong since = new AtomicLong(ANSWERING);

  /** The cursor answered at {@code at} (local clock): an outage noted before then is over. */
  void answered(long at) {
    since.getAndUpdate(lost -> lost != ANSWERING && at - lost >= 0 ? ANSWERING : lost);
  }

  /**
   * The cursor was found unavailable at {@code at} (local clock).
   *
   * @return when this process first found it unavailable since it last answered: {@code at}, or
   *     earlier
   */
  long unavailable(long at) {
    return since.updateAndGet(lost -> lost == ANSWERING || lost - at > 0 ? at : lost);
  }
}
