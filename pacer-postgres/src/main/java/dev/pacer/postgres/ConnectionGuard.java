package dev.pacer.postgres;

import java.sql.SQLException;
import java.util.function.BooleanSupplier;

/**
 * How a kept connection is used by one caller at a time: its lock is taken (within a bound, or
 * until interrupted), the owner is checked not closed once the lock is held (a close may have come
 * while the caller waited), the work runs, and the lock is released whatever happens. What a caller
 * answers when it cannot have the connection is its own ({@link Refused}).
 */
final class ConnectionGuard {

  /** Why the work did not run. */
  enum Refusal {
    /** The lock was not free within the caller's bound. */
    BUSY,
    /** The owner was closed. */
    CLOSED
  }

  /** The connection's lock. */
  interface Lock {
    /** Takes the lock; false if it was not free within the caller's bound. */
    boolean take() throws InterruptedException;

    void release();
  }

  /** The work done with the lock held. */
  @FunctionalInterface
  interface Work<T> {
    T run() throws SQLException;
  }

  /** What the caller answers, or throws, when the work did not run. */
  @FunctionalInterface
  interface Refused<T> {
    T because(Refusal why);
  }

  private ConnectionGuard() {}

  /**
   * Runs {@code work} with {@code lock} held, unless the lock is not free in time or {@code closed}
   * says the owner is closed once it is held.
   *
   * @throws SQLException what {@code work} throws
   * @throws InterruptedException if interrupted while taking the lock; nothing was run
   */
  static <T> T run(Lock lock, BooleanSupplier closed, Work<T> work, Refused<T> refused)
      throws SQLException, InterruptedException {
    if (!lock.take()) {
      return refused.because(Refusal.BUSY);
    }
    try {
      if (closed.getAsBoolean()) {
        return refused.because(Refusal.CLOSED);
      }
      return work.run();
    } finally {
      lock.release();
    }
  }
}
