package dev.pacer;

class LocalCursorContractTest extends CursorContract {
  private final LocalCursor cursor = new LocalCursor();

  @Override
  protected Cursor cursor() {
    return cursor;
  }
}
