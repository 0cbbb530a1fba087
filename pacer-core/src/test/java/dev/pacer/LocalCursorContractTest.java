package dev.pacer;

/** The contract on a fake clock: no time passes between reservations, so every wait is exact. */
class LocalCursorContractTest extends CursorContract {
  private final FakeTime time = new FakeTime();
  private final LocalCursor cursor = new LocalCursor(time);

  @Override
  protected Cursor cursor() {
    return cursor;
  }

  @Override
  protected TimeSource clock() {
    return time;
  }
}
