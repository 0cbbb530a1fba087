package dev.pacer.cli;

import dev.pacer.postgres.JdbcUrls;
import java.util.regex.Pattern;

/** Hides passwords in anything the CLI prints, whatever form of URL they came in. */
public final class Secrets {

  /** {@code scheme://user:password@} in any URL, JDBC or not. */
  private static final Pattern USERINFO =
      Pattern.compile("([A-Za-z][A-Za-z0-9+.-]*://[^/@:?#\\s]*:)[^/@?#\\s]*@");

  private Secrets() {}

  /** The text with every password (query parameter or user-info) replaced by {@code ***}. */
  public static String redact(String text) {
    if (text == null) {
      return null;
    }
    return USERINFO.matcher(JdbcUrls.redact(text)).replaceAll("$1***@");
  }
}
