package dev.pacer.postgres.internal;

import dev.pacer.Printable;
import java.util.regex.Pattern;

/** Validation of the SQL identifiers that cannot be bound as parameters (tables, columns). */
public final class SqlIdentifiers {

  private static final Pattern NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_]*");
  private static final Pattern QUALIFIED =
      Pattern.compile("[A-Za-z_][A-Za-z0-9_]*(\\.[A-Za-z_][A-Za-z0-9_]*)?");
  private static final int MAX_LENGTH = 63;

  private SqlIdentifiers() {}

  /** A plain identifier such as a column name. */
  public static String name(String what, String value) {
    return check(what, value, NAME, "^[A-Za-z_][A-Za-z0-9_]*$");
  }

  /** A table name, optionally schema-qualified ({@code schema.table}). */
  public static String qualifiedName(String what, String value) {
    return check(what, value, QUALIFIED, "^[A-Za-z_][A-Za-z0-9_]*$, optionally schema-qualified");
  }

  private static String check(String what, String value, Pattern pattern, String rule) {
    if (value == null) {
      throw new IllegalArgumentException(what + " must not be null");
    }
    boolean tooLong = false;
    for (String part : value.split("\\.", -1)) {
      tooLong |= part.length() > MAX_LENGTH;
    }
    if (!pattern.matcher(value).matches() || tooLong) {
      throw new IllegalArgumentException(
          what
              + " must match "
              + rule
              + " (at most "
              + MAX_LENGTH
              + " characters a part), got "
              + Printable.quote(value));
    }
    return value;
  }
}
