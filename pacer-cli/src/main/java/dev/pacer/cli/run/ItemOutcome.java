package dev.pacer.cli.run;

import dev.pacer.jdkhttp.fetch.FetchFailedException;

/**
 * What an attempt at an item says, as the failure bars count it ({@link Envelope}, and per host
 * {@link HostOutcomes}): the destination answered it, did not, or this process failed it. A
 * throttle (429, 503) and a lockout (403) are not outcomes: they slow or stop the run elsewhere.
 */
enum ItemOutcome {
  /**
   * A 2xx, or an answer about the item itself: a 4xx other than 408 (404, 410, 400, ...), a body
   * over the cap, a redirect not followed. The item may fail; its destination did not.
   */
  ANSWERED,
  /** No answer worth the name: a network error, a timeout, a 5xx, a 408. */
  UNANSWERED,
  /** This process failed the item: it could not store the body, or met an unexpected error. */
  OWN_FAILURE;

  /** What a fetch that failed says. */
  static ItemOutcome of(FetchFailedException e) {
    if (e.status().isEmpty()) {
      return UNANSWERED;
    }
    int status = e.status().getAsInt();
    return status >= 500 || status == 408 ? UNANSWERED : ANSWERED;
  }
}
