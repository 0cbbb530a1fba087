package dev.pacer.cli;

import dev.pacer.cli.db.CursorPlace;
import dev.pacer.cli.model.BadInputException;
import picocli.CommandLine.Option;

/**
 * Where the fleet-wide cursors are kept, for the commands that open one ({@code fetch}, {@code
 * demo}, {@code status}, {@code cursor clear}, and the workers a run starts, which are handed the
 * same options). Every process that shares a ceiling must name the same place.
 */
public final class CursorOptions {

  @Option(
      names = "--cursor-layout",
      paramLabel = "LAYOUT",
      description =
          "Where the cursors are kept: pacer (default), Pacer's own table, or"
              + " django-cache, an existing Django database cache table (cache_key, value, expires)"
              + " shared with a Python fleet that writes the original statement.")
  String layout;

  @Option(
      names = "--cursor-table",
      paramLabel = "NAME",
      description =
          "The cursor table, optionally schema-qualified (default: pacer_cursor, or"
              + " django_cache with --cursor-layout django-cache).")
  String table;

  @Option(
      names = "--cursor-key-prefix",
      paramLabel = "PREFIX",
      description =
          "With --cursor-layout django-cache: what comes before the destination's name"
              + " in its cache key (default: harvest-rate-cursor:, the original design's).")
  String keyPrefix;

  /** The place these options name; a bad value is bad input, named in the message. */
  CursorPlace place() throws BadInputException {
    try {
      return CursorPlace.of(layout, table, keyPrefix);
    } catch (IllegalArgumentException e) {
      throw new BadInputException(e.getMessage());
    }
  }
}
