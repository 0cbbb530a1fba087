package dev.pacer.jdkhttp.internal;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * The answer timeout of a hop sent on the thread that waits for it: at the deadline it interrupts
 * that thread, unless the send has ended. The two exclude each other under this object's lock, so
 * an interrupt is never delivered after {@link #end()}, and one delivered but not consumed by the
 * send (the answer came just before the deadline) is cleared there, not left for the caller's next
 * wait.
 */
final class AnswerDeadline {
  private final Thread waiting = Thread.currentThread();
  private final CompletableFuture<Void> timer = new CompletableFuture<>();
  private boolean ended;
  private boolean expired;

  AnswerDeadline(Duration timeout) {
    timer
        .orTimeout(timeout.toNanos(), TimeUnit.NANOSECONDS)
        .whenComplete(
            (none, late) -> {
              if (late != null) {
                expire();
              }
            });
  }

  private synchronized void expire() {
    if (!ended) {
      expired = true;
      waiting.interrupt();
    }
  }

  /** Ends the deadline (again is harmless); whether it expired, its interrupt cleared. */
  synchronized boolean end() {
    if (!ended) {
      ended = true;
      timer.complete(null);
      if (expired) {
        Thread.interrupted();
      }
    }
    return expired;
  }
}
