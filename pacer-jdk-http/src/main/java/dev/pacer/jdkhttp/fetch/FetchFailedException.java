package dev.pacer.jdkhttp.fetch;

import java.util.OptionalInt;

/**
 * An ordinary fetch failure: a network error, a timeout, a body over the size cap, or a status that
 * is neither a success nor a backoff or lockout status. Never a throttle.
 */
public class FetchFailedException extends Exception {
  private static final long serialVersionUID = 1L;

  /** The HTTP status, or -1 when no response arrived. */
  private final int status;

  /**
   * A failure with an HTTP status (for example 404 or 500).
   *
   * @param message what failed
   * @param status the HTTP status
   */
  public FetchFailedException(String message, int status) {
    super(message);
    this.status = status;
  }

  /**
   * A failure without a usable response (network error, timeout, oversized body).
   *
   * @param message what failed
   * @param cause why
   */
  public FetchFailedException(String message, Throwable cause) {
    super(message, cause);
    this.status = -1;
  }

  /**
   * The HTTP status, when a response arrived.
   *
   * @return the status, or empty if no response arrived
   */
  public OptionalInt status() {
    return status < 0 ? OptionalInt.empty() : OptionalInt.of(status);
  }
}
