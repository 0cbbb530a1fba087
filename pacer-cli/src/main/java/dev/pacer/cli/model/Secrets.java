package dev.pacer.cli.model;

import dev.pacer.Printable;
import dev.pacer.postgres.JdbcUrls;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.util.regex.Pattern;

/**
 * Hides secrets in anything the CLI prints or stores, whatever form they came in: every
 * secret-bearing parameter ({@code password}, {@code sslpassword}, {@code sslkey}, {@code
 * sslfactoryarg} and alike; see {@link JdbcUrls#redact}), the password of any URL's user-info, and
 * the whole user-info of an http(s) URL, whose user name is often a token of its own ({@code
 * https://TOKEN@host/}). A database URL keeps its user name: it names the role, which a message
 * about a refused login needs.
 *
 * <p>{@code Main} writes everything the process prints, its log lines, a library's exception text
 * and the summary alike, through {@link #forTerminal}: a secret cannot reach the terminal or a log
 * file by a path that forgot to redact it, and no value the CLI did not write (a row of a shared
 * database, what a destination answered) reaches it as a control character or a bidirectional
 * override ({@link Printable#forTerminal}).
 */
public final class Secrets {

  /**
   * {@code scheme://user:password@} in any URL, JDBC or not; the password may hold an {@code @}.
   */
  private static final Pattern PASSWORD =
      Pattern.compile("([A-Za-z][A-Za-z0-9+.-]*://[^/@:?#\\s]*:)[^/?#\\s]*@");

  /** {@code http(s)://userinfo@}: the user-info up to the host. */
  private static final Pattern WEB_USERINFO = Pattern.compile("((?i:https?)://)[^/?#\\s]*@");

  private Secrets() {}

  /**
   * The text with every secret (parameter, user-info password, an http(s) URL's user-info) replaced
   * by {@code ***}.
   */
  public static String redact(String text) {
    if (text == null) {
      return null;
    }
    String redacted = PASSWORD.matcher(JdbcUrls.redact(text)).replaceAll("$1***@");
    return WEB_USERINFO.matcher(redacted).replaceAll("$1***@");
  }

  /**
   * {@code out}, each line {@linkplain #redact redacted} and escaped as {@link
   * Printable#forTerminal} escapes before it is written: a line ends at a line feed or a carriage
   * return (a progress bar redraws its line after one), or where the writer flushes. UTF-8, as
   * everything the CLI prints.
   *
   * @param out where the lines go
   * @return a stream that redacts and escapes what it is given, flushing at each line
   */
  public static PrintStream forTerminal(PrintStream out) {
    return new PrintStream(new RedactedLines(out), true, StandardCharsets.UTF_8);
  }

  /** Holds a line's bytes until it ends, then writes it redacted. */
  private static final class RedactedLines extends OutputStream {
    private final PrintStream out;
    private final ByteArrayOutputStream line = new ByteArrayOutputStream();

    RedactedLines(PrintStream out) {
      this.out = out;
    }

    @Override
    public synchronized void write(int b) {
      line.write(b);
      if (b == '\n' || b == '\r') {
        writeLine();
      }
    }

    @Override
    public synchronized void write(byte[] bytes, int offset, int length) {
      int from = offset;
      int end = offset + length;
      for (int i = offset; i < end; i++) {
        if (bytes[i] == '\n' || bytes[i] == '\r') {
          line.write(bytes, from, i + 1 - from);
          writeLine();
          from = i + 1;
        }
      }
      line.write(bytes, from, end - from);
    }

    @Override
    public synchronized void flush() {
      writeLine();
      out.flush();
    }

    @Override
    public void close() {
      flush();
    }

    /**
     * A line ends at an ASCII byte, or where the print stream flushed a whole string it encoded:
     * either way it holds whole UTF-8 characters.
     */
    private void writeLine() {
      if (line.size() == 0) {
        return;
      }
      StringWriter safe = new StringWriter();
      try (Writer terminal = Printable.forTerminal(safe)) {
        terminal.write(redact(line.toString(StandardCharsets.UTF_8)));
      } catch (IOException e) {
        throw new UncheckedIOException(e); // a StringWriter does not fail
      }
      byte[] redacted = safe.toString().getBytes(StandardCharsets.UTF_8);
      line.reset();
      out.write(redacted, 0, redacted.length);
    }
  }
}
