package dev.pacer;

/** A cursor store could not carry out an administrative operation such as {@link Cursor#clear}. */
public class CursorStoreException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public CursorStoreException(String message, Throwable cause) {
    super(message, cause);
  }
}
