package dev.pacer.bench;

import dev.pacer.postgres.PostgresCursor;
import dev.pacer.postgres.PostgresCursorConfig;
import dev.pacer.postgres.TableLayout;
import dev.pacer.spi.Reservation;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

/** Pacer's {@link PostgresCursor}, reserving with a zero interval so that nobody waits. */
final class PacerOperation implements Operation {

  private final PostgresCursor cursor;
  private final String[] keys;
  private int next;

  PacerOperation(Database.Target db, TableLayout layout, boolean synchronousCommit, String[] keys) {
    this.cursor =
        new PostgresCursor(
            PostgresCursorConfig.forUrl(db.jdbcUrl(), db.properties())
                .layout(layout)
                .synchronousCommit(synchronousCommit)
                .build());
    this.keys = keys.clone();
    awaitConnected(cursor);
  }

  /**
   * Reserves on a key of its own until the cursor answers, so that measuring starts connected. A
   * cold JVM on a busy machine can take longer than the cursor's 1-s bound to connect; the cursor
   * then answers "unavailable" through its failure latch (5 s), as it should in production, and
   * this waits that out rather than measure it.
   */
  static void awaitConnected(PostgresCursor cursor) {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    String key = "bench-connect-" + ProcessHandle.current().pid();
    while (!cursor.reserve(key, Duration.ZERO).isGranted()) {
      if (System.nanoTime() - deadline > 0) {
        throw new IllegalStateException("the cursor did not connect within 30 s");
      }
      try {
        Thread.sleep(100);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("interrupted while connecting", e);
      }
    }
  }

  @Override
  public void perform() {
    String key = keys[next];
    next = next + 1 == keys.length ? 0 : next + 1;
    Reservation turn = cursor.reserve(key, Duration.ZERO);
    if (!turn.isGranted()) {
      throw new IllegalStateException("Pacer reservation on " + key + " was " + turn);
    }
  }

  @Override
  public void close() {
    cursor.close();
  }
}
