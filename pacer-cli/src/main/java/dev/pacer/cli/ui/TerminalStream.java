package dev.pacer.cli.ui;

import dev.pacer.Printable;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.OutputStreamWriter;
import java.io.PrintStream;
import java.io.Writer;
import java.nio.charset.StandardCharsets;

/**
 * A process's standard stream made safe for a terminal, for what is written to it without going
 * through pacer's own writers: the log lines of SLF4J's simple logger, which name hosts, reasons
 * and errors that came from a shared database or a destination. Bytes are held until a flush or a
 * line's end, decoded as UTF-8 and written through {@link Printable#forTerminal}.
 */
public final class TerminalStream extends OutputStream {

  private final ByteArrayOutputStream pending = new ByteArrayOutputStream();
  private final Writer out;

  private TerminalStream(OutputStream target) {
    this.out = Printable.forTerminal(new OutputStreamWriter(target, StandardCharsets.UTF_8));
  }

  /**
   * {@code target} as a print stream that escapes as {@link Printable#forTerminal} does.
   *
   * @param target the real stream
   * @return the safe stream, flushing at each line
   */
  public static PrintStream of(OutputStream target) {
    return new PrintStream(new TerminalStream(target), true, StandardCharsets.UTF_8);
  }

  @Override
  public synchronized void write(int b) throws IOException {
    pending.write(b);
    if (b == '\n') {
      flush();
    }
  }

  @Override
  public synchronized void write(byte[] bytes, int off, int len) throws IOException {
    pending.write(bytes, off, len);
    if (len > 0 && bytes[off + len - 1] == '\n') {
      flush();
    }
  }

  @Override
  public synchronized void flush() throws IOException {
    if (pending.size() > 0) {
      out.write(pending.toString(StandardCharsets.UTF_8));
      pending.reset();
    }
    out.flush();
  }

  @Override
  public synchronized void close() throws IOException {
    flush();
    out.close();
  }
}
