package dev.pacer;

/**
 * The destination has locked this fleet out (for example it answered 403): a hard stop. Thrown by
 * every {@link DestinationLimiter#acquire()} after {@link DestinationLimiter#lockOut(String)}.
 */
public class LockedOutException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** The destination's name. */
  private final String destination;

  /**
   * A lockout of {@code destination}.
   *
   * @param destination the destination's name
   * @param reason why it is locked out
   */
  public LockedOutException(String destination, String reason) {
    super("destination " + destination + " is locked out: " + reason);
    this.destination = destination;
  }

  /**
   * The destination locked out.
   *
   * @return its name
   */
  public String destination() {
    return destination;
  }
}
