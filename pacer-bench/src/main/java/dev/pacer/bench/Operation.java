package dev.pacer.bench;

import java.sql.SQLException;

/** One contender's client in one process: {@link #perform()} takes one turn (or token). */
interface Operation extends AutoCloseable {

  /** One reservation on the next key in rotation; throws if it was not granted. */
  void perform() throws Exception;

  @Override
  void close() throws SQLException;
}
