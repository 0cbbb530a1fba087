package dev.pacer;

/**
 * The destination has locked this fleet out (for example it answered 403): a hard stop. Thrown by
 * every {@link DestinationLimiter#acquire()} after {@link DestinationLimiter#lockOut()}.
 */
public class LockedOutException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final String destination;

  public LockedOutException(String destination, String reason) {
    super("destination " + destination + " is locked out: " + reason);
    this.destination = destination;
  }

  public String destination() {
    return destination;
  }
}
