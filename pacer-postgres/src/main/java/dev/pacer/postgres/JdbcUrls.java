package dev.pacer.postgres;

import java.util.regex.Pattern;

/** Helpers for JDBC URLs that may carry secrets. */
public final class JdbcUrls {

  /**
   * A parameter whose value is or unlocks a secret: pgjdbc's {@code password}, {@code sslpassword}
   * (the client key's passphrase), {@code sslkey} and {@code sslcert} (where the key is), {@code
   * sslfactoryarg} (handed to an SSL factory, often a keystore password) and {@code
   * sslpasswordcallback}, and any name that says pass, secret, token or key, whatever the driver.
   * In a URL ({@code ?name=}, {@code &name=}, {@code ;name=}) or a libpq-style {@code name=value}
   * list separated by spaces.
   */
  private static final Pattern SECRET_PARAM =
      Pattern.compile(
          "(?i)((?:^|[?&;\\s])[A-Za-z_.-]*(?:pass|pwd|secret|token|key|sslcert|sslfactoryarg)"
              + "[A-Za-z_.-]*=)[^&;\\s]*");

  private static final Pattern USERINFO = Pattern.compile("(jdbc:postgresql://[^/@?]*?:)[^/@?]*@");

  private JdbcUrls() {}

  /**
   * The URL with every secret-bearing parameter and user-info password replaced by {@code ***}.
   *
   * @param jdbcUrl a JDBC URL, or null
   * @return the URL without its secrets, or null for null
   */
  public static String redact(String jdbcUrl) {
    if (jdbcUrl == null) {
      return null;
    }
    String out = SECRET_PARAM.matcher(jdbcUrl).replaceAll("$1***");
    return USERINFO.matcher(out).replaceAll("$1***@");
  }
}
