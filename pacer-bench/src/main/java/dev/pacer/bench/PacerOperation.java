package dev.pacer.bench;

import dev.pacer.Reservation;
import dev.pacer.postgres.PostgresCursor;
import dev.pacer.postgres.PostgresCursorConfig;
import dev.pacer.postgres.TableLayout;
import java.time.Duration;

/** Pacer's {@link PostgresCursor}, reserving with a zero interval so that nobody waits. */
final class PacerOperation implements Operation {

  private final PostgresCursor cursor;
  private final String[] keys;
  private int next;

  PacerOperation(Database.Target db, TableLayout layout, boolean synchronousCommit, String[] keys) {
    this.cursor = new PostgresCursor(
        PostgresCursorConfig.forUrl(db.jdbcUrl(), db.properties())
            .layout(layout)
            .synchronousCommit(synchronousCommit)
            .build());
    this.keys = keys.clone();
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
