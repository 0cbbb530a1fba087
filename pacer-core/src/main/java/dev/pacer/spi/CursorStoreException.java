package dev.pacer.spi;

/** A cursor store could not carry out an administrative operation such as {@link Cursor#clear}. */
public class CursorStoreException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /**
   * An operation on the store failed; {@code cause} says why.
   *
   * @param message what was being done
   * @param cause the store's own error
   */
  public CursorStoreException(String message, Throwable cause) {
    super(message, cause);
  }
}
