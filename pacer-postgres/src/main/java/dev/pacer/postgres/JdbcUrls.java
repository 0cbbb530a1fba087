package dev.pacer.postgres;

import java.util.regex.Pattern;

/** Helpers for JDBC URLs that may carry secrets. */
public final class JdbcUrls {

  private static final Pattern PASSWORD_PARAM =
      Pattern.compile("(?i)([?&;]password=)[^&;]*");
  private static final Pattern USERINFO =
      Pattern.compile("(jdbc:postgresql://[^/@?]*?:)[^/@?]*@");

  private JdbcUrls() {}

  /** The URL with any password (query parameter or user-info) replaced by {@code ***}. */
  public static String redact(String jdbcUrl) {
    if (jdbcUrl == null) {
      return null;
    }
    String out = PASSWORD_PARAM.matcher(jdbcUrl).replaceAll("$1***");
    return USERINFO.matcher(out).replaceAll("$1***@");
  }
}
