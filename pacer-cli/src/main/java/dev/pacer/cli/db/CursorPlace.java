package dev.pacer.cli.db;

import dev.pacer.Printable;
import dev.pacer.postgres.TableLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;

/**
 * Where a run's cursors are kept: Pacer's own table ({@code pacer_cursor} unless named), or a
 * Django-style cache table ({@code cache_key}, {@code value}, {@code expires}) that a Python fleet
 * writing the original statement shares, under a key prefix. Every value is checked when the place
 * is made, before any SQL runs, and a bad one is named; table names are checked by {@link
 * TableLayout}, the only way they reach SQL.
 *
 * @param layout the table's shape
 * @param table the table's name, optionally schema-qualified
 * @param keyPrefix what comes before a destination's name in its key ({@link Layout#DJANGO_CACHE}
 *     only; empty for {@link Layout#PACER})
 */
public record CursorPlace(Layout layout, String table, String keyPrefix) {

  /** The shapes of table a cursor can live in, as the command line names them. */
  public enum Layout {
    /** Pacer's own table, created on first use. */
    PACER("pacer"),
    /** An existing Django database cache table. */
    DJANGO_CACHE("django-cache");

    private final String option;

    Layout(String option) {
      this.option = option;
    }

    /** The value of {@code --cursor-layout} that names it. */
    public String option() {
      return option;
    }

    static Layout parse(String value) {
      for (Layout l : values()) {
        if (l.option.equals(value)) {
          return l;
        }
      }
      throw new IllegalArgumentException(
          "--cursor-layout must be pacer or django-cache, got " + Printable.quote(value));
    }
  }

  /** Pacer's own table under its default name. */
  public static final CursorPlace DEFAULT = new CursorPlace(Layout.PACER, "pacer_cursor", "");

  /**
   * A key is at most 255 characters in Django's cache table ({@code varchar(255)}): the prefix and
   * the destination's name together.
   */
  static final int MAX_KEY_LENGTH = 255;

  /** Checks every value; an {@link IllegalArgumentException} names the option and the value. */
  public CursorPlace {
    Objects.requireNonNull(layout, "layout");
    Objects.requireNonNull(keyPrefix, "keyPrefix");
    if (layout == Layout.PACER && !keyPrefix.isEmpty()) {
      throw new IllegalArgumentException(
          "Pacer's table takes no key prefix, got " + Printable.quote(keyPrefix));
    }
    checkPrefix(keyPrefix);
    try {
      layoutFor(layout, table, keyPrefix);
    } catch (IllegalArgumentException e) {
      // TableLayout calls the value "table"; the command line calls it by its option.
      throw new IllegalArgumentException(
          e.getMessage().replaceFirst("^table must", "--cursor-table must"), e);
    }
  }

  /**
   * The place the options name; null values take the defaults: Pacer's layout, its table {@code
   * pacer_cursor} or Django's {@code django_cache}, and for Django's the original design's prefix
   * {@value TableLayout#DEFAULT_KEY_PREFIX}.
   *
   * @throws IllegalArgumentException naming the option and the bad value
   */
  public static CursorPlace of(String layoutOption, String table, String keyPrefix) {
    Layout layout =
        layoutOption == null ? Layout.PACER : Layout.parse(layoutOption.toLowerCase(Locale.ROOT));
    if (layout == Layout.PACER) {
      if (keyPrefix != null) {
        throw new IllegalArgumentException(
            "--cursor-key-prefix applies only to --cursor-layout django-cache (Pacer's table keys a"
                + " cursor by the destination's name alone), got "
                + Printable.quote(keyPrefix));
      }
      return new CursorPlace(layout, table == null ? "pacer_cursor" : table, "");
    }
    return new CursorPlace(
        layout,
        table == null ? "django_cache" : table,
        keyPrefix == null ? TableLayout.DEFAULT_KEY_PREFIX : keyPrefix);
  }

  /** The library's layout for this place. */
  public TableLayout tableLayout() {
    return layoutFor(layout, table, keyPrefix);
  }

  private static TableLayout layoutFor(Layout layout, String table, String keyPrefix) {
    return layout == Layout.PACER
        ? TableLayout.pacerTable(table)
        : TableLayout.keyValueTable(table, "cache_key", "value", "expires", keyPrefix);
  }

  /**
   * Checks that the cursor of destination {@code name} has a key here: in Django's layout the
   * prefix and the name together are at most {@value #MAX_KEY_LENGTH} characters. (Pacer's table
   * keys by the name alone, as {@code text}.)
   *
   * @throws IllegalArgumentException naming the name, the prefix and the key's length
   */
  public void checkKeyFits(String name) {
    if (layout == Layout.DJANGO_CACHE && keyPrefix.length() + name.length() > MAX_KEY_LENGTH) {
      throw new IllegalArgumentException(
          "destination name "
              + Printable.quote(name)
              + " ("
              + name.length()
              + " characters) does not fit a Django cache key beside"
              + " --cursor-key-prefix "
              + Printable.quote(keyPrefix)
              + ": together "
              + (keyPrefix.length() + name.length())
              + " characters, and a key is at most "
              + MAX_KEY_LENGTH);
    }
  }

  /**
   * A prefix travels into keys, logs and status lines: printable, no spaces, and short enough to
   * leave a key room for a name.
   */
  private static void checkPrefix(String prefix) {
    if (prefix.length() >= MAX_KEY_LENGTH) {
      throw new IllegalArgumentException(
          "--cursor-key-prefix must be at most "
              + (MAX_KEY_LENGTH - 1)
              + " characters, got "
              + prefix.length()
              + ": "
              + Printable.quote(prefix));
    }
    for (int i = 0; i < prefix.length(); i++) {
      char c = prefix.charAt(i);
      if (c <= 0x20
          || c == 0x7f
          || Character.isISOControl(c)
          || Character.isWhitespace(c)
          || Character.isSpaceChar(c)
          || Character.getType(c) == Character.FORMAT) {
        throw new IllegalArgumentException(
            "--cursor-key-prefix must be printable with no"
                + " whitespace, got "
                + Printable.quote(prefix)
                + " (character "
                + (i + 1)
                + ")");
      }
    }
  }

  /** The options that name this place, for a worker process; none for the default. */
  public List<String> args() {
    if (equals(DEFAULT)) {
      return List.of();
    }
    List<String> args =
        new ArrayList<>(List.of("--cursor-layout", layout.option(), "--cursor-table", table));
    if (layout == Layout.DJANGO_CACHE) {
      args.addAll(List.of("--cursor-key-prefix", keyPrefix));
    }
    return args;
  }

  @Override
  public String toString() {
    return layout == Layout.PACER
        ? "Pacer's table " + table
        : "Django cache table " + table + ", keys " + Printable.quote(keyPrefix) + " + name";
  }
}
