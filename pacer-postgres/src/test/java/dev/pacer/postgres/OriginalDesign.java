package dev.pacer.postgres;

/**
 * The original (Python) design's reservation, which Pacer's key/value layout shares a row with:
 * written once here for every test that plays a Python fleet beside Pacer.
 */
public final class OriginalDesign {

  private OriginalDesign() {}

  /**
   * The statement on a Django cache table; parameters: key, then the gap in seconds four times. It
   * answers the wait before the turn, in seconds.
   */
  public static String statement(String cacheTable) {
    return "INSERT INTO "
        + cacheTable
        + " (cache_key, value, expires) VALUES (?, (extract(epoch FROM clock_timestamp()) +"
        + " ?)::text, now() + interval '30 days') ON CONFLICT (cache_key) DO UPDATE SET value ="
        + " (GREATEST(EXCLUDED.value::numeric - ?, "
        + cacheTable
        + ".value::numeric) + ?)::text"
        + " RETURNING GREATEST(0, value::numeric - ? - EXTRACT(EPOCH FROM clock_timestamp()))";
  }
}
