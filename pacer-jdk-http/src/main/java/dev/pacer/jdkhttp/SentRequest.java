package dev.pacer.jdkhttp;

import dev.pacer.Slot;
import dev.pacer.TimeSource;
import dev.pacer.jdkhttp.internal.SentListener;
import java.net.URI;
import java.time.Duration;

/**
 * One paced request a {@link PacedHttpClient} sent (a {@link
 * dev.pacer.jdkhttp.fetch.DestinationFetcher} sends through one), reported to its {@linkplain
 * PacedHttpClient.Builder#onRequest listener} once the answer's status is known or the request
 * failed.
 *
 * @param uri the URI requested
 * @param hop 0 for the requested URI, 1 for the first redirect followed, and so on
 * @param turnNanos when the request's turn began ({@link Slot#turnNanos()}), on the limiter's
 *     {@link TimeSource}
 * @param sentNanos when the request was handed to the HTTP client, on the same clock
 * @param sentEpochMicros the same moment in wall-clock microseconds since the epoch, to line up the
 *     requests of several processes or hosts on one timeline
 * @param status the answer's status, or -1 if none arrived (network error, deadline)
 */
public record SentRequest(
    URI uri, int hop, long turnNanos, long sentNanos, long sentEpochMicros, int status) {

  /** No status arrived. */
  public static final int NO_STATUS = SentListener.NO_STATUS;

  /**
   * How long after its turn began the request was handed to the client: the wake-up and the
   * fetcher's own work. What the client does after the hand-over (connecting, and in a cold JVM
   * loading itself: see {@link dev.pacer.jdkhttp.fetch.DestinationFetcher#warmUp(URI)}) is not in
   * it.
   *
   * @return the time from the turn to the hand-over
   */
  public Duration lateness() {
    return Duration.ofNanos(sentNanos - turnNanos);
  }

  /**
   * Whether a status arrived.
   *
   * @return whether {@code status} is not {@link #NO_STATUS}
   */
  public boolean answered() {
    return status != NO_STATUS;
  }
}
