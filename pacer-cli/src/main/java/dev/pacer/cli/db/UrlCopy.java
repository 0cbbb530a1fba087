package dev.pacer.cli.db;

import dev.pacer.cli.model.UrlList;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharsetEncoder;
import java.nio.charset.CoderResult;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import org.postgresql.PGConnection;
import org.postgresql.copy.CopyIn;

/**
 * Streams URLs into a {@code COPY … FROM STDIN} (text format) as rows of {@code (url_key, url,
 * host)}, the host as per-host mode names it ({@link UrlList#hostOf}), {@link #BUFFER_BYTES} at a
 * time: however many URLs, the client holds one buffer of them.
 */
final class UrlCopy {

  /** What the client holds of the stream at once; pgjdbc sends each as one CopyData message. */
  static final int BUFFER_BYTES = 64 * 1024;

  private UrlCopy() {}

  /** Copies every URL of {@code urls}; returns how many rows were sent. */
  static long copy(Connection c, String copySql, Iterable<String> urls) throws SQLException {
    CopyIn copy = c.unwrap(PGConnection.class).getCopyAPI().copyIn(copySql);
    try {
      CharsetEncoder utf8 = StandardCharsets.UTF_8.newEncoder();
      ByteBuffer out = ByteBuffer.allocate(BUFFER_BYTES);
      StringBuilder row = new StringBuilder();
      long rows = 0;
      for (String url : urls) {
        row.setLength(0);
        row.append(UrlKeys.key(url)).append('\t');
        escape(url, row);
        row.append('\t');
        escape(UrlList.hostOf(url), row);
        row.append('\n');
        CharBuffer in = CharBuffer.wrap(row);
        while (true) {
          CoderResult result = utf8.encode(in, out, true);
          if (result.isOverflow()) {
            flush(copy, out);
          } else if (result.isUnderflow()) {
            break;
          } else {
            throw new SQLException("URL is not encodable as UTF-8: " + result, "22021");
          }
        }
        utf8.reset();
        rows++;
      }
      flush(copy, out);
      copy.endCopy();
      return rows;
    } catch (UncheckedIOException e) {
      throw new SQLException(
          "could not read the URL list: " + e.getCause().getMessage(), "58030", e);
    } finally {
      if (copy.isActive()) {
        copy.cancelCopy();
      }
    }
  }

  private static void flush(CopyIn copy, ByteBuffer out) throws SQLException {
    if (out.position() > 0) {
      copy.writeToCopy(out.array(), 0, out.position());
      out.clear();
    }
  }

  /**
   * COPY's text format takes backslash, tab, newline and carriage return as syntax. A checked URL
   * holds none of them ({@code java.net.URI} refuses them), but the stream must not depend on that.
   */
  private static void escape(String url, StringBuilder row) {
    for (int i = 0; i < url.length(); i++) {
      char ch = url.charAt(i);
      switch (ch) {
        case '\\' -> row.append("\\\\");
        case '\t' -> row.append("\\t");
        case '\n' -> row.append("\\n");
        case '\r' -> row.append("\\r");
        default -> row.append(ch);
      }
    }
  }
}
