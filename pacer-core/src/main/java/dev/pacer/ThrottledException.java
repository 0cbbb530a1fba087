package dev.pacer;

/**
 * The destination answered with one of its {@linkplain Destination#backoffStatusCodes() backoff
 * statuses} (429, 503 by default): "slow down". The limiter has already backed off; the request
 * should be retried later. Never a failure and never a reason to halt a run.
 */
public class ThrottledException extends Exception {
  private static final long serialVersionUID = 1L;

  /** The HTTP status that signalled rate pressure. */
  private final int status;

  /**
   * A backoff answer from {@code destination}.
   *
   * @param destination the destination's name
   * @param status the HTTP status
   * @param uri the URI that was asked for
   */
  public ThrottledException(String destination, int status, String uri) {
    super("destination " + destination + " answered " + status + " (rate pressure) for " + uri);
    this.status = status;
  }

  /**
   * The HTTP status that signalled rate pressure.
   *
   * @return the status
   */
  public int status() {
    return status;
  }
}
