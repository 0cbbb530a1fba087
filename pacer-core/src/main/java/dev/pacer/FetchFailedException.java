package dev.pacer;

import java.util.OptionalInt;

/**
 * An ordinary fetch failure: a network error, a timeout, a body over the size cap, or a status
 * that is neither a success nor a backoff or lockout status. Never a throttle.
 */
public class FetchFailedException extends Exception {
  private static final long serialVersionUID = 1L;

  private final int status;

  /** A failure with an HTTP status (for example 404 or 500). */
  public FetchFailedException(String message, int status) {
    super(message);
    this.status = status;
  }

  /** A failure without a usable response (network error, timeout, oversized body). */
  public FetchFailedException(String message, Throwable cause) {
    super(message, cause);
    this.status = -1;
  }

  /** The HTTP status, when a response arrived. */
  public OptionalInt status() {
    return status < 0 ? OptionalInt.empty() : OptionalInt.of(status);
  }
}
