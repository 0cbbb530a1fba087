package dev.pacer;

import java.io.FilterWriter;
import java.io.IOException;
import java.io.Writer;
import java.util.Locale;

/**
 * Renders a user-supplied value for an error message: quoted, control characters escaped as {@code
 * \\uXXXX} (so a message can never move a terminal's cursor, forge a log line, or reorder what a
 * reader sees), and cut at 80 characters. Escaped: C0 and C1 controls, DEL, the line and paragraph
 * separators, and the bidirectional embeddings, overrides, isolates and marks. Pacer's own messages
 * use it for every value a caller supplied; it is API so that programs built on Pacer (its command
 * line among them) show such values the same way.
 */
public final class Printable {

  private static final int MAX_SHOWN = 80;

  private Printable() {}

  /**
   * Quotes {@code s} for a message, as the class comment describes.
   *
   * @param s any string, or null
   * @return {@code s} quoted, escaped and cut; {@code null} for null
   */
  public static String quote(String s) {
    if (s == null) {
      return "null";
    }
    StringBuilder out = new StringBuilder("\"");
    int shown = Math.min(s.length(), MAX_SHOWN);
    for (int i = 0; i < shown; i++) {
      char c = s.charAt(i);
      if (mustEscape(c)) {
        out.append(String.format("\\u%04x", (int) c));
      } else {
        out.append(c);
      }
    }
    if (s.length() > shown) {
      out.append("...");
    }
    return out.append('"').toString();
  }

  /**
   * Text for a terminal as it is written: every character {@link #quote} escapes for moving the
   * cursor or reordering the text is written as {@code \\uXXXX}, except the tab, the line feed and
   * the carriage return, which a program's own output uses. A program that prints values it did not
   * write (rows of a shared database, what a destination answered) can wrap its streams once.
   *
   * @param out where the text goes
   * @return a writer that escapes as described and writes to {@code out}
   */
  public static Writer forTerminal(Writer out) {
    return new FilterWriter(out) {
      @Override
      public void write(int c) throws IOException {
        char ch = (char) c;
        if (movesOrReorders(ch) && ch != '\t' && ch != '\n' && ch != '\r') {
          out.write(String.format("\\u%04x", (int) ch));
        } else {
          out.write(ch);
        }
      }

      @Override
      public void write(char[] chars, int off, int len) throws IOException {
        for (int i = off; i < off + len; i++) {
          write(chars[i]);
        }
      }

      @Override
      public void write(String str, int off, int len) throws IOException {
        for (int i = off; i < off + len; i++) {
          write(str.charAt(i));
        }
      }
    };
  }

  /**
   * {@code s} as a JSON string literal (RFC 8259), for a line a program reads: quoted, with the
   * quote and the backslash escaped, line feed, carriage return and tab as their two-character
   * escapes, and the other C0 controls, DEL and the line and paragraph separators as {@code
   * \\uXXXX}, so that the literal is one line and can be embedded in JavaScript as well. Not cut.
   *
   * @param s any string, not null
   * @return the literal, quotes included
   */
  public static String json(String s) {
    StringBuilder out = new StringBuilder(s.length() + 2).append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"' -> out.append("\\\"");
        case '\\' -> out.append("\\\\");
        case '\n' -> out.append("\\n");
        case '\r' -> out.append("\\r");
        case '\t' -> out.append("\\t");
        default -> {
          if (c < 0x20 || c == 0x7f || c == 0x2028 || c == 0x2029) {
            out.append(String.format(Locale.ROOT, "\\u%04x", (int) c));
          } else {
            out.append(c);
          }
        }
      }
    }
    return out.append('"').toString();
  }

  private static boolean mustEscape(char c) {
    return movesOrReorders(c) || c == '"' || c == '\\';
  }

  /** C0 and C1 controls, DEL, the line and paragraph separators, and the bidirectional controls. */
  static boolean movesOrReorders(char c) {
    return c < 0x20
        || (c >= 0x7f && c <= 0x9f)
        || c == '\u061c'
        || c == '\u200e'
        || c == '\u200f'
        || (c >= '\u2028' && c <= '\u202e')
        || (c >= '\u2066' && c <= '\u2069');
  }
}
