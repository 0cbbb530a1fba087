package dev.pacer.bench;

import dev.pacer.postgres.TableLayout;

/**
 * Everything whose reservation throughput is measured, each as one process would use it: one
 * connection, one thread, one token (or turn) per call, a zero interval (or a refill so large that
 * nobody waits), on the keys it is given.
 */
public enum Contender {
  /** Pacer's cursor on its own (unlogged) table: one INSERT … ON CONFLICT … RETURNING. */
  PACER("Pacer"),
  /** Pacer's cursor on a Django-style cache table (a logged table, decimal text values). */
  PACER_KEY_VALUE("Pacer, key/value table"),
  /** Bucket4j's PostgreSQL SELECT … FOR UPDATE manager. */
  BUCKET4J_SELECT_FOR_UPDATE("Bucket4j select-for-update"),
  /** Bucket4j's PostgreSQL advisory-lock manager. */
  BUCKET4J_ADVISORY_LOCK("Bucket4j advisory-lock"),
  /** What one writes by hand: advisory lock, SELECT, compute in Java, UPDATE, COMMIT. */
  NAIVE_ADVISORY("naive advisory-lock transaction");

  /** Pacer's own table, as the library creates it by default. */
  static final String PACER_TABLE = "pacer_cursor";

  static final String KEY_VALUE_TABLE = "bench_cache";
  static final String BUCKET4J_SELECT_FOR_UPDATE_TABLE = "bench_bucket4j_sfu";
  static final String BUCKET4J_ADVISORY_LOCK_TABLE = "bench_bucket4j_advisory";
  static final String NAIVE_TABLE = "bench_naive_cursor";

  private final String label;

  Contender(String label) {
    this.label = label;
  }

  public String label() {
    return label;
  }

  /**
   * Opens this contender's client for one process.
   *
   * @param keys the key names it rotates over (for Bucket4j and the naive transaction, their index
   *     is the numeric key)
   */
  Operation open(Database.Target db, boolean synchronousCommit, String[] keys) throws Exception {
    return switch (this) {
      case PACER ->
          new PacerOperation(db, TableLayout.pacerTable(PACER_TABLE), synchronousCommit, keys);
      case PACER_KEY_VALUE ->
          new PacerOperation(db, TableLayout.djangoCache(KEY_VALUE_TABLE), synchronousCommit, keys);
      case BUCKET4J_SELECT_FOR_UPDATE ->
          Bucket4jOperation.selectForUpdate(db, synchronousCommit, keys);
      case BUCKET4J_ADVISORY_LOCK -> Bucket4jOperation.advisoryLock(db, synchronousCommit, keys);
      case NAIVE_ADVISORY -> new NaiveOperation(db, synchronousCommit, keys);
    };
  }
}
