package dev.pacer.cli.run;

import dev.pacer.cli.BadInputException;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * The input of {@code pacer fetch}: one URL per line. Blank lines and lines starting with {@code #}
 * are ignored; a line that is not an absolute http(s) URL with a host is reported with its line
 * number and skipped. Input that is not UTF-8 text, or has no URL at all, is refused whole.
 */
public final class UrlList {

  /** Longer lines are reported as malformed rather than stored. */
  public static final int MAX_URL_LENGTH = 8192;

  /** A longer line refuses the whole input: such a file is not a list of URLs. */
  public static final int MAX_LINE_LENGTH = 1 << 20;

  private final List<String> urls;
  private final List<String> problems;
  private final Set<String> hosts;

  private UrlList(List<String> urls, List<String> problems, Set<String> hosts) {
    this.urls = urls;
    this.problems = problems;
    this.hosts = hosts;
  }

  /** A list made by a program (the demo), already known to be valid http(s) URLs. */
  public static UrlList of(List<String> urls) {
    Set<String> hosts = new LinkedHashSet<>();
    for (String url : urls) {
      hosts.add(URI.create(url).getHost().toLowerCase(Locale.ROOT));
    }
    return new UrlList(List.copyOf(new LinkedHashSet<>(urls)), List.of(), hosts);
  }

  /** The URLs, in input order, duplicates removed. */
  public List<String> urls() {
    return urls;
  }

  /** One message per skipped line: "line N: why: value". */
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

  /** The distinct hosts of the URLs, in order of first appearance (lower case). */
  public Set<String> hosts() {
    return hosts;
  }

  /**
   * Reads and checks the input.
   *
   * @param source how to name the input in messages (a path, or "standard input")
   * @throws BadInputException if the input is binary, not UTF-8, or holds no usable URL
   */
  public static UrlList read(InputStream in, String source) throws BadInputException, IOException {
    var decoder = StandardCharsets.UTF_8.newDecoder()
        .onMalformedInput(CodingErrorAction.REPORT)
        .onUnmappableCharacter(CodingErrorAction.REPORT);
    Set<String> seen = new LinkedHashSet<>();
    List<String> problems = new ArrayList<>();
    Set<String> hosts = new LinkedHashSet<>();
    int lineNumber = 0;
    try (BufferedReader reader = new BufferedReader(new InputStreamReader(in, decoder))) {
      String line;
      while ((line = readLine(reader, source, lineNumber + 1)) != null) {
        lineNumber++;
        if (line.indexOf('\0') >= 0) {
          throw new BadInputException(source + " looks binary (a NUL byte on line " + lineNumber
              + "); expected a text file of URLs, one per line");
        }
        String text = line.strip();
        if (text.isEmpty() || text.startsWith("#")) {
          continue;
        }
        String problem = check(text);
        if (problem != null) {
          problems.add("line " + lineNumber + ": " + problem + ": " + shown(text));
          continue;
        }
        if (seen.add(text)) {
          hosts.add(URI.create(text).getHost().toLowerCase(Locale.ROOT));
        }
      }
    } catch (CharacterCodingException e) {
      throw new BadInputException(source + " is not UTF-8 text (near line " + (lineNumber + 1)
          + "); expected a text file of URLs, one per line");
    }
    if (seen.isEmpty()) {
      throw new BadInputException(source + " holds no usable URL (" + lineNumber + " line(s)"
          + (problems.isEmpty() ? "" : ", " + problems.size() + " rejected: "
              + String.join("; ", problems.subList(0, Math.min(5, problems.size()))))
          + ")");
    }
    return new UrlList(List.copyOf(seen), List.copyOf(problems), hosts);
  }

  /**
   * The next line without its terminator ({@code \n}, {@code \r} or {@code \r\n}, as
   * {@link BufferedReader#readLine}), or null at the end. Never holds more than
   * {@link #MAX_LINE_LENGTH} characters of it: a file with one endless line is refused, not read
   * into memory.
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
        throw new BadInputException(source + ": line " + lineNumber + " is longer than "
            + MAX_LINE_LENGTH + " characters (" + shown(line.toString())
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
