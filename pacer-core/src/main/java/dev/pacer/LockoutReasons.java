package dev.pacer;

import dev.pacer.shared.Redaction;
import java.nio.charset.StandardCharsets;

/**
 * A lockout's reason as it is recorded for every process and operator to read: bounded, and without
 * the secrets a URL may carry.
 *
 * <p>The reason is stored in the database, printed by {@code pacer status} and logged by every
 * process, so the URL that met the lockout status is named by its {@linkplain Redaction#address
 * address} alone (no user-info, query or fragment, where tokens and signatures travel), and the
 * whole is cut to {@link #MAX_BYTES} bytes of UTF-8 at a character's boundary: a limit in bytes,
 * since that is what the stores and channels it passes through count.
 */
final class LockoutReasons {

  /** The most a recorded reason holds, in bytes of UTF-8. */
  static final int MAX_BYTES = 1000;

  private LockoutReasons() {}

  /** {@code reason} cut to at most {@link #MAX_BYTES} bytes of UTF-8, never inside a character. */
  static String bounded(String reason) {
    byte[] utf8 = reason.getBytes(StandardCharsets.UTF_8);
    if (utf8.length <= MAX_BYTES) {
      return reason;
    }
    int bytes = 0;
    int end = 0;
    while (end < reason.length()) {
      int codePoint = reason.codePointAt(end);
      int size = new String(Character.toChars(codePoint)).getBytes(StandardCharsets.UTF_8).length;
      if (bytes + size > MAX_BYTES - 3) {
        break;
      }
      bytes += size;
      end += Character.charCount(codePoint);
    }
    return reason.substring(0, end) + "…";
  }
}
