package dev.pacer;

import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A granted turn: the caller may send its request now. Holds one of the process's concurrency
 * permits for the destination until {@link #close()}; closing twice releases once.
 */
public final class Slot implements AutoCloseable {

  private final Semaphore permits;
  private final AtomicBoolean released = new AtomicBoolean();

  Slot(Semaphore permits) {
    this.permits = permits;
  }

  @Override
  public void close() {
    if (released.compareAndSet(false, true)) {
      permits.release();
    }
  }
}
