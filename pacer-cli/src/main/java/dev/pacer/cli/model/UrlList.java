package dev.pacer.cli.model;

import dev.pacer.Destination;
import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.NoSuchElementException;
import java.util.Set;

/**
 * The input of {@code pacer fetch}: one URL per line. Blank lines and lines starting with {@code #}
 * are ignored; a line that is not an absolute http(s) URL with a host that DNS can hold (253
 * characters, labels of 63) is reported with its line number and skipped. Input that is not UTF-8
 * text, or has no URL at all, is refused whole.
 *
 * <p>A URL with user-info ({@code https://user:password@host/}) is skipped the same way. The HTTP
 * client sends no credentials from a URL, so the request would go without them; and the URL would
 * be kept in the work state and shown in status and log lines, password and all. The report of any
 * skipped line shows it {@linkplain Secrets#redact redacted} ({@code ***} in place of whatever
 * stands before an {@code @} in its authority, and of a secret parameter's value), so that a
 * password given by mistake is not printed either.
 *
 * <p>The input is read once, and its checked URLs are written to a spool file that {@link #urls()}
 * reads again for each pass: a list of millions of URLs is never held in memory (what is held grows
 * with the number of hosts, not of URLs), and a retried enqueue reads the same URLs again, even
 * from standard input. A URL given twice is kept twice here; the job keeps it once (see {@code
 * JobStore.enqueue}).
 */
public final class UrlList implements AutoCloseable {

  /** Longer lines are reported as malformed rather than stored. */
  public static final int MAX_URL_LENGTH = 8192;

  /** A longer line refuses the whole input: such a file is not a list of URLs. */
  public static final int MAX_LINE_LENGTH = 1 << 20;

  /** Problems kept word for word; any more are only counted. */
  static final int MAX_PROBLEMS_KEPT = 1000;

  private final Iterable<String> urls;
  private final long count;
  private final List<String> problems;
  private final long problemCount;
  private final Set<String> hosts;
  private final Path spool;

  private UrlList(
      Iterable<String> urls,
      long count,
      List<String> problems,
      long problemCount,
      Set<String> hosts,
      Path spool) {
    this.urls = urls;
    this.count = count;
    this.problems = problems;
    this.problemCount = problemCount;
    this.hosts = hosts;
    this.spool = spool;
  }

  /** A list made by a program (the demo), already known to be valid http(s) URLs. */
  public static UrlList of(List<String> urls) {
    Set<String> hosts = new LinkedHashSet<>();
    for (String url : urls) {
      hosts.add(hostOf(url));
    }
    return new UrlList(List.copyOf(urls), urls.size(), List.of(), 0, hosts, null);
  }

  /**
   * The URLs, in input order, each pass reading them from the start (for a read input, from the
   * spool file: an {@link java.io.UncheckedIOException} if it cannot be read).
   */
  public Iterable<String> urls() {
    return urls;
  }

  /** How many URLs {@link #urls()} holds, duplicates included. */
  public long count() {
    return count;
  }

  /** One message per skipped line, "line N: why: value", the first {@link #MAX_PROBLEMS_KEPT}. */
  public List<String> problems() {
    return problems;
  }

  /**
   * The host a URL of the list belongs to, as per-host mode names destinations: the exact host, in
   * lower case, without port (a host's ports share its ceiling). Not the registrable domain: which
   * part of a name is registrable ({@code example.co.uk} against {@code example.com}) is only known
   * from the Public Suffix List, a changing list this program does not carry; grouping by the last
   * two labels would put every {@code *.co.uk} site under one ceiling.
   */
  public static String hostOf(String url) {
    return URI.create(url).getHost().toLowerCase(Locale.ROOT);
  }

  /** How many lines were skipped: {@link #problems()} and any beyond those kept. */
  public long problemCount() {
    return problemCount;
  }

  /** The distinct hosts of the URLs, in order of first appearance (lower case). */
  public Set<String> hosts() {
    return hosts;
  }

  /** Deletes the spool file, if there is one. */
  @Override
  public void close() {
    if (spool != null) {
      try {
        Files.deleteIfExists(spool);
      } catch (IOException e) {
        spool.toFile().deleteOnExit();
      }
    }
  }

  /**
   * Reads and checks the input, spooling its URLs to a temporary file.
   *
   * @param source how to name the input in messages (a path, or "standard input")
   * @throws BadInputException if the input is binary, not UTF-8, or holds no usable URL
   */
  public static UrlList read(InputStream in, String source) throws BadInputException, IOException {
    var decoder =
        StandardCharsets.UTF_8
            .newDecoder()
            .onMalformedInput(CodingErrorAction.REPORT)
            .onUnmappableCharacter(CodingErrorAction.REPORT);
    Lines seen = new Lines(source);
    Path spool = Files.createTempFile("pacer-urls", ".txt");
    boolean kept = false;
    try (BufferedReader reader = new BufferedReader(new InputStreamReader(in, decoder));
        BufferedWriter writer = Files.newBufferedWriter(spool, StandardCharsets.UTF_8)) {
      String line;
      while ((line = readLine(reader, source, seen.lineNumber + 1)) != null) {
        seen.take(line, writer);
      }
      kept = true;
    } catch (CharacterCodingException e) {
      throw new BadInputException(
          source
              + " is not UTF-8 text (near line "
              + (seen.lineNumber + 1)
              + "); expected a text file of URLs, one per line");
    } finally {
      if (!kept) {
        Files.deleteIfExists(spool);
      }
    }
    if (seen.count == 0) {
      Files.deleteIfExists(spool);
      throw seen.noUsableUrl();
    }
    return new UrlList(
        () -> lines(spool),
        seen.count,
        List.copyOf(seen.problems),
        seen.problemCount,
        seen.hosts,
        spool);
  }

  /** The input's lines so far: the URLs spooled, their hosts, and the problems found. */
  private static final class Lines {
    private final String source;
    private final List<String> problems = new ArrayList<>();
    private long problemCount = 0;
    private long count = 0;
    private final Set<String> hosts = new LinkedHashSet<>();
    private int lineNumber = 0;

    Lines(String source) {
      this.source = source;
    }

    /** Checks the next line, and writes it to the spool if it holds a usable URL. */
    void take(String line, BufferedWriter writer) throws BadInputException, IOException {
      lineNumber++;
      if (line.indexOf('\0') >= 0) {
        throw new BadInputException(
            source
                + " looks binary (a NUL byte on line "
                + lineNumber
                + "); expected a text file of URLs, one per line");
      }
      String text = line.strip();
      if (text.isEmpty() || text.startsWith("#")) {
        return;
      }
      String problem = check(text);
      if (problem != null) {
        if (problemCount++ < MAX_PROBLEMS_KEPT) {
          problems.add("line " + lineNumber + ": " + problem + ": " + shown(Secrets.redact(text)));
        }
        return;
      }
      hosts.add(hostOf(text));
      writer.write(text);
      writer.write('\n');
      count++;
    }

    BadInputException noUsableUrl() {
      return new BadInputException(
          source
              + " holds no usable URL ("
              + lineNumber
              + " line(s)"
              + (problems.isEmpty()
                  ? ""
                  : ", "
                      + problemCount
                      + " rejected: "
                      + String.join("; ", problems.subList(0, Math.min(5, problems.size()))))
              + ")");
    }
  }

  /** The spool file's lines, read as they are iterated; the file closes at its end. */
  private static Iterator<String> lines(Path spool) {
    BufferedReader reader;
    try {
      reader = Files.newBufferedReader(spool, StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return new Iterator<>() {
      private String next = advance();

      private String advance() {
        try {
          String line = reader.readLine();
          if (line == null) {
            reader.close();
          }
          return line;
        } catch (IOException e) {
          throw new UncheckedIOException(e);
        }
      }

      @Override
      public boolean hasNext() {
        return next != null;
      }

      @Override
      public String next() {
        if (next == null) {
          throw new NoSuchElementException();
        }
        String current = next;
        next = advance();
        return current;
      }
    };
  }

  /**
   * The next line without its terminator ({@code \n}, {@code \r} or {@code \r\n}, as {@link
   * BufferedReader#readLine}), or null at the end. Never holds more than {@link #MAX_LINE_LENGTH}
   * characters of it: a file with one endless line is refused, not read into memory.
   */
  private static String readLine(BufferedReader reader, String source, int lineNumber)
      throws IOException, BadInputException {
    StringBuilder line = new StringBuilder();
    int c;
    while ((c = reader.read()) != -1) {
      if (c == '\n') {
        return line.toString();
      }
      if (c == '\r') {
        reader.mark(1);
        if (reader.read() != '\n') {
          reader.reset();
        }
        return line.toString();
      }
      if (line.length() == MAX_LINE_LENGTH) {
        throw new BadInputException(
            source
                + ": line "
                + lineNumber
                + " is longer than "
                + MAX_LINE_LENGTH
                + " characters ("
                + shown(line.toString())
                + "); expected a text file of URLs, one per line");
      }
      line.append((char) c);
    }
    return line.length() == 0 ? null : line.toString();
  }

  private static String check(String text) {
    if (text.length() > MAX_URL_LENGTH) {
      return "longer than " + MAX_URL_LENGTH + " characters (" + text.length() + ")";
    }
    URI uri;
    try {
      uri = new URI(text);
    } catch (URISyntaxException e) {
      return "not a URL (" + e.getReason() + ")";
    }
    String scheme = uri.getScheme();
    if (scheme == null) {
      return "not an absolute URL";
    }
    if (!scheme.equalsIgnoreCase("http") && !scheme.equalsIgnoreCase("https")) {
      return "scheme " + scheme + " is not http or https";
    }
    if (uri.getHost() == null || uri.getHost().isEmpty()) {
      return "no host";
    }
    if (uri.getRawUserInfo() != null) {
      return "has credentials before the host (user-info), which pacer fetch neither sends nor"
          + " stores";
    }
    return dnsProblem(uri.getHost());
  }

  /** The longest label of a DNS name, in characters (RFC 1035). */
  static final int MAX_LABEL_LENGTH = 63;

  /**
   * Why DNS cannot hold {@code host}, or null if it can: a URL of such a host can never be fetched,
   * and no destination could be named by it. An IP literal is left to the URI's own parse.
   */
  private static String dnsProblem(String host) {
    if (host.length() > Destination.MAX_NAME_LENGTH) {
      return "host is "
          + host.length()
          + " characters long, more than the "
          + Destination.MAX_NAME_LENGTH
          + " a DNS name may have";
    }
    if (host.startsWith("[")) {
      return null;
    }
    for (String label : host.split("\\.")) {
      if (label.length() > MAX_LABEL_LENGTH) {
        return "host label "
            + label
            + " is "
            + label.length()
            + " characters long, more than the "
            + MAX_LABEL_LENGTH
            + " a DNS label may have";
      }
    }
    return null;
  }

  /** A line as it may be shown: control characters escaped, long lines cut. */
  static String shown(String text) {
    StringBuilder out = new StringBuilder();
    int limit = Math.min(text.length(), 120);
    for (int i = 0; i < limit; i++) {
      char c = text.charAt(i);
      out.append(c < 0x20 || c == 0x7f ? String.format("\\u%04x", (int) c) : String.valueOf(c));
    }
    if (text.length() > limit) {
      out.append("...");
    }
    return out.toString();
  }
}
