package dev.pacer;

/**
 * What one answer from a destination means for its pacing, as {@link DestinationLimiter#noteAnswer}
 * classifies it. Every way of sending a request through Pacer (the fetcher, the HTTP client
 * decorator, the client integrations) classifies through that one method, so a status means the
 * same thing whichever client heard it.
 */
public enum Answer {
  /**
   * Neither a lockout nor a backoff status (a redirect, a 404 or a 500 included): counts towards
   * halving the backoff.
   */
  CLEAN,
  /**
   * A {@linkplain Destination#backoffStatusCodes() backoff status}: the interval doubled and, with
   * a {@code Retry-After}, the fleet paused. The caller defers this item and goes on.
   */
  THROTTLED,
  /**
   * A {@linkplain Destination#lockoutStatusCodes() lockout status}: the destination is locked out
   * for the whole fleet. The caller stops.
   */
  LOCKED_OUT
}
