package dev.pacer.cli;

import dev.pacer.Destination;
import dev.pacer.Printable;
import dev.pacer.cli.db.FrontierStore.HostCeiling;
import dev.pacer.cli.model.BadInputException;
import java.io.BufferedReader;
import java.io.IOException;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * The per-host ceilings of {@code --rates FILE}: one host per line, {@code host rate
 * [concurrency]}, separated by spaces or tabs; blank lines and lines starting with {@code #} are
 * ignored. A host is named as per-host mode names it: the URL's host, in lower case, without port
 * (a host's ports share its ceiling). Every line is checked before anything is written, and a bad
 * one is named with its number and value.
 */
final class HostRates {

  /** The most items of one host in flight across the fleet that a line may ask for. */
  static final int MAX_CONCURRENCY = 10_000;

  private HostRates() {}

  /**
   * Reads the file; a host it does not name gets {@code otherwise}'s concurrency when its line
   * gives none.
   */
  static Map<String, HostCeiling> read(Path file, int defaultConcurrency) throws BadInputException {
    String where = "--rates " + file;
    try (BufferedReader in = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
      Map<String, HostCeiling> rates = new LinkedHashMap<>();
      Map<String, Integer> lineOf = new HashMap<>();
      String line;
      int number = 0;
      while ((line = in.readLine()) != null) {
        number++;
        String text = line.strip();
        if (text.isEmpty() || text.startsWith("#")) {
          continue;
        }
        String at = where + " line " + number + ": ";
        String[] fields = text.split("[ \t]+");
        if (fields.length < 2 || fields.length > 3) {
          throw new BadInputException(
              at + "expected 'host rate [concurrency]', got " + Printable.quote(text));
        }
        String host = fields[0].toLowerCase(Locale.ROOT);
        try {
          RunOptions.checkDestinationName(host);
        } catch (BadInputException e) {
          throw new BadInputException(
              at + "host " + e.getMessage().replaceFirst("^destination ", ""));
        }
        double rate = parseRate(at, fields[1]);
        int concurrency = fields.length == 3 ? parseConcurrency(at, fields[2]) : defaultConcurrency;
        Integer earlier = lineOf.putIfAbsent(host, number);
        if (earlier != null) {
          throw new BadInputException(at + "host " + host + " is already on line " + earlier);
        }
        rates.put(host, new HostCeiling(rate, concurrency));
      }
      return rates;
    } catch (NoSuchFileException e) {
      throw new BadInputException(where + ": no such file");
    } catch (AccessDeniedException e) {
      throw new BadInputException(where + ": not readable (permission denied)");
    } catch (CharacterCodingException e) {
      throw new BadInputException(where + ": not UTF-8 text");
    } catch (IOException e) {
      throw new BadInputException(where + ": could not be read (" + e.getMessage() + ")");
    }
  }

  private static double parseRate(String at, String text) throws BadInputException {
    double rate;
    try {
      rate = Double.parseDouble(text);
    } catch (NumberFormatException e) {
      rate = Double.NaN;
    }
    if (!Double.isFinite(rate) || rate <= 0 || rate > Destination.MAX_RATE_PER_SECOND) {
      throw new BadInputException(
          at + "rate must be a number > 0 and <= 1000000, got " + Printable.quote(text));
    }
    return rate;
  }

  private static int parseConcurrency(String at, String text) throws BadInputException {
    int n;
    try {
      n = Integer.parseInt(text);
    } catch (NumberFormatException e) {
      n = 0;
    }
    if (n < 1 || n > MAX_CONCURRENCY) {
      throw new BadInputException(
          at
              + "concurrency must be a whole number 1-"
              + MAX_CONCURRENCY
              + ", got "
              + Printable.quote(text));
    }
    return n;
  }
}
