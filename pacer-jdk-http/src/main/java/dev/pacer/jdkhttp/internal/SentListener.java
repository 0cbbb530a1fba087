package dev.pacer.jdkhttp.internal;

import java.net.URI;

/**
 * Hears each paced hop an {@link Exchanges} sent, once its status is known or it failed: the fields
 * of the public {@code SentRequest}, which the client and the fetcher build from them.
 */
@FunctionalInterface
public interface SentListener {

  /** The status of a hop that no answer came for. */
  int NO_STATUS = -1;

  /**
   * One paced hop sent.
   *
   * @param uri the URI requested
   * @param hop 0 for the requested URI, 1 for the first redirect followed, and so on
   * @param turnNanos when the hop's turn began, on the limiter's clock
   * @param sentNanos when the hop was handed to the delegate, on the same clock
   * @param sentEpochMicros the same moment in wall-clock microseconds since the epoch
   * @param status the answer's status, or {@link #NO_STATUS}
   */
  void sent(URI uri, int hop, long turnNanos, long sentNanos, long sentEpochMicros, int status);
}
