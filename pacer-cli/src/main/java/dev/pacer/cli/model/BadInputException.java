package dev.pacer.cli.model;

/** Bad usage or input: the message names the bad value; the CLI exits 2 having written nothing. */
public final class BadInputException extends Exception {
  private static final long serialVersionUID = 1L;

  public BadInputException(String message) {
    super(message);
  }
}
