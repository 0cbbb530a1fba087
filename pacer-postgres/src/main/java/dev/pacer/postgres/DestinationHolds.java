package dev.pacer.postgres;

import java.time.Duration;
import java.util.Optional;

/**
 * What holds a destination's turns, as recorded in PostgreSQL: a pause ({@code Retry-After}) still
 * in force, and a lockout not yet cleared.
 *
 * @param pauseLeft how long the pause still lasts; zero if none
 * @param lockoutReason why the destination is locked out, if it is
 */
public record DestinationHolds(Duration pauseLeft, Optional<String> lockoutReason) {

  /** No pause and no lockout. */
  public static final DestinationHolds NONE = new DestinationHolds(Duration.ZERO, Optional.empty());

  /**
   * Whether a lockout is recorded.
   *
   * @return whether {@code lockoutReason} is present
   */
  public boolean isLockedOut() {
    return lockoutReason.isPresent();
  }
}
