package dev.pacer.postgres;

import dev.pacer.shared.Redaction;

/** Helpers for JDBC URLs that may carry secrets. */
public final class JdbcUrls {

  private JdbcUrls() {}

  /**
   * The URL with every secret replaced by {@code ***}: the value of each secret-bearing parameter
   * (pgjdbc's {@code password}, {@code sslpassword}, {@code sslkey}, {@code sslcert}, {@code
   * sslfactoryarg} and {@code sslpasswordcallback}, and any name that says pass, pwd, secret, token
   * or key, whatever the driver), in the URL or in a libpq-style {@code name=value} list, and the
   * password of its user-info; a PostgreSQL URL keeps its user name, the role, and another driver's
   * URL loses its whole user-info.
   *
   * @param jdbcUrl a JDBC URL, or null
   * @return the URL without its secrets, or null for null
   */
  public static String redact(String jdbcUrl) {
    return Redaction.text(jdbcUrl);
  }
}
