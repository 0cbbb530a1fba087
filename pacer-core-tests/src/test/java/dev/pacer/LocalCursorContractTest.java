package dev.pacer;

import dev.pacer.spi.Cursor;
import dev.pacer.testing.CursorContract;
import dev.pacer.testing.FakeTime;
import dev.pacer.testing.TurnClock;
import java.time.Duration;

/** The contract on a fake clock: no time passes between reservations, so every turn is exact. */
class LocalCursorContractTest extends CursorContract {
  private final TurnClock time = new TurnClock(new FakeTime());
  private final LocalCursor cursor = new LocalCursor(time);

  @Override
  protected Cursor cursor() {
    return cursor;
  }

  @Override
  protected TurnClock clock() {
    return time;
  }

  /** The cursor computes on the clock itself. */
  @Override
  protected Duration turnTolerance() {
    return Duration.ZERO;
  }
}
