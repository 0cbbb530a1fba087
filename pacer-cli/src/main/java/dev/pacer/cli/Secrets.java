package dev.pacer.cli;

import dev.pacer.postgres.JdbcUrls;
import java.util.regex.Pattern;

/**
 * Hides secrets in anything the CLI prints, whatever form they came in: every secret-bearing
 * parameter ({@code password}, {@code sslpassword}, {@code sslkey}, {@code sslfactoryarg} and
 * alike; see {@link JdbcUrls#redact}) and the password of any URL's user-info.
 */
public final class Secrets {

  /** {@code scheme://user:password@} in any URL, JDBC or not. */
  private static final Pattern USERINFO =
      Pattern.compile("([A-Za-z][A-Za-z0-9+.-]*://[^/@:?#\\s]*:)[^/@?#\\s]*@");

  private Secrets() {}

  /** The text with every secret (parameter or user-info password) replaced by {@code ***}. */
  public static String redact(String text) {
    if (text == null) {
      return null;
    }
    return USERINFO.matcher(JdbcUrls.redact(text)).replaceAll("$1***@");
  }
}
