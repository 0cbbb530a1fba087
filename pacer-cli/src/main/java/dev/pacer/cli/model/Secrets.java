package dev.pacer.cli.model;

import dev.pacer.Printable;
import dev.pacer.shared.Redaction;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;

/**
 * Hides secrets in anything the CLI prints or stores, whatever form they came in, by Pacer's one
 * rule ({@link Redaction#text}): every secret-bearing parameter ({@code password}, {@code
 * sslpassword}, {@code sslkey}, {@code sslfactoryarg}, {@code access_token} and alike) and the
 * user-info of every URL, whose user name is often a token of its own ({@code
 * https://TOKEN@host/}). A PostgreSQL URL keeps its user name and loses its password: the name is
 * the role, which a message about a refused login needs.
 *
 * <p>{@code Main} writes everything the process prints, its log lines, a library's exception text
 * and the summary alike, through {@link #forTerminal}: a secret cannot reach the terminal or a log
 * file by a path that forgot to redact it, and no value the CLI did not write (a row of a shared
 * database, what a destination answered) reaches it as a control character or a bidirectional
 * override ({@link Printable#forTerminal}).
 */
public final class Secrets {

  private Secrets() {}

  /**
   * The text with every secret (a secret-bearing parameter's value, a URL's user-info) replaced by
   * {@code ***}, as the class comment describes.
   *
   * @param text any text, or null
   * @return the text without its secrets, or null for null
   */
  public static String redact(String text) {
    return Redaction.text(text);
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
