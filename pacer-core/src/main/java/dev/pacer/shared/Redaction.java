package dev.pacer.shared;

import java.net.URI;
import java.net.URISyntaxException;
import java.util.Locale;
import java.util.Set;
import java.util.regex.MatchResult;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The secrets a URL may carry, kept out of what Pacer prints, logs and stores: one rule for every
 * module.
 *
 * <p>{@link #text} keeps a text's shape and puts {@code ***} in place of each secret in it:
 *
 * <ul>
 *   <li>the value of every secret-bearing parameter: pgjdbc's {@code password}, {@code sslpassword}
 *       (the client key's passphrase), {@code sslkey} and {@code sslcert} (where the key is),
 *       {@code sslfactoryarg} (handed to an SSL factory, often a keystore password) and {@code
 *       sslpasswordcallback}, and any name that says pass, pwd, secret, token or key, whatever the
 *       driver or site: in a query ({@code ?name=}, {@code &name=}, {@code ;name=}), a fragment
 *       ({@code #access_token=}, where an OAuth implicit grant puts its token) or a libpq-style
 *       {@code name=value} list separated by spaces;
 *   <li>the user-info of every URL, whatever its scheme: what stands between {@code ://} and the
 *       last {@code @} before the authority ends (at {@code /}, {@code ?}, {@code #} or white
 *       space), the URL valid or not. A user name is often a token of its own ({@code
 *       https://TOKEN@host/}). A PostgreSQL URL ({@code postgresql://}, {@code postgres://}, {@code
 *       jdbc:postgresql://}) keeps its user name and loses its password: the name is a role, which
 *       a message about a refused login needs.
 * </ul>
 *
 * <p>{@link #address} is stricter, for a record that other processes and operators read: a URL cut
 * to its scheme, host, port and path.
 */
public final class Redaction {

  /** What stands in place of a secret. */
  public static final String MASK = "***";

  /**
   * A secret-bearing parameter's name and its value, which runs to the next {@code &}, {@code ;} or
   * white space: a {@code #} in a password does not end it.
   */
  private static final Pattern SECRET_PARAM =
      Pattern.compile(
          "(?i)((?:^|[?&;#\\s])[A-Za-z_.-]*(?:pass|pwd|secret|token|key|sslcert|sslfactoryarg)"
              + "[A-Za-z_.-]*=)[^&;\\s]*");

  /** A URL's scheme, if it has one, and its user-info up to the last {@code @} of its authority. */
  private static final Pattern USER_INFO = Pattern.compile("([A-Za-z0-9+.-]*)://([^/?#\\s]*)@");

  /** The schemes whose user name is a database role, kept. */
  private static final Set<String> ROLE_SCHEMES = Set.of("postgresql", "postgres");

  private Redaction() {}

  /**
   * {@code text} with every secret a URL or a parameter list in it may carry replaced by {@link
   * #MASK}, as the class comment describes; the rest as it was.
   *
   * @param text any text (a URL, a message quoting one, a log line), or null
   * @return the text without its secrets, or null for null
   */
  public static String text(String text) {
    if (text == null) {
      return null;
    }
    String out = SECRET_PARAM.matcher(text).replaceAll("$1" + Matcher.quoteReplacement(MASK));
    return USER_INFO.matcher(out).replaceAll(r -> Matcher.quoteReplacement(withoutUserInfo(r)));
  }

  /**
   * A URL as a record that outlives the request may show it: its scheme, host, port and path, and
   * {@code ?…} where it had a query; no user-info, no query, no fragment. Anything that is not a
   * URL with an authority is {@linkplain #text redacted as text}.
   *
   * @param source a {@link URI}, or anything whose {@code toString} may be a URL (a client's own
   *     URL type), or null
   * @return the URL without its secrets
   */
  public static String address(Object source) {
    String shown = String.valueOf(source);
    URI uri = source instanceof URI u ? u : parse(shown);
    if (uri == null || uri.isOpaque() || uri.getRawAuthority() == null) {
      return text(shown);
    }
    String host = uri.getHost() != null ? uri.getHost() : "";
    String port = uri.getPort() >= 0 ? ":" + uri.getPort() : "";
    String path = uri.getRawPath() == null ? "" : uri.getRawPath();
    String omitted = uri.getRawQuery() != null ? "?…" : "";
    return uri.getScheme() + "://" + host + port + path + omitted;
  }

  private static String withoutUserInfo(MatchResult url) {
    String scheme = url.group(1);
    String userInfo = url.group(2);
    int colon = userInfo.indexOf(':');
    if (ROLE_SCHEMES.contains(scheme.toLowerCase(Locale.ROOT))) {
      return colon < 0
          ? url.group()
          : scheme + "://" + userInfo.substring(0, colon + 1) + MASK + "@";
    }
    return scheme + "://" + MASK + "@";
  }

  private static URI parse(String text) {
    try {
      return new URI(text);
    } catch (URISyntaxException e) {
      return null;
    }
  }
}
