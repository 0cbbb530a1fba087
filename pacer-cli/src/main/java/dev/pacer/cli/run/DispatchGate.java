package dev.pacer.cli.run;

import java.util.Optional;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The dispatch slot a worker holds ({@code --max-dispatches}), or none if it takes none: whether
 * its fetch threads may fetch the items they claim, and waiting for the slot again once it was
 * lost.
 */
final class DispatchGate {

  /** The worker's logger: what a worker's parts log is the worker's to whoever reads it. */
  private static final Logger log = LoggerFactory.getLogger(Worker.class);

  private final WorkerContext context;

  /** The dispatch slot this worker holds; null before it has one, or if it takes none. */
  private volatile DispatchSlot slot;

  /** Held by the one fetch thread that waits for a dispatch slot again. */
  private final ReentrantLock slotLock = new ReentrantLock();

  DispatchGate(WorkerContext context) {
    this.context = context;
  }

  /** This worker holds {@code taken} from now on. */
  void hold(DispatchSlot taken) {
    slot = taken;
  }

  /**
   * Whether this worker may fetch the item it has just claimed: it holds its dispatch slot (or
   * takes none). A slot whose lease could not be renewed for a whole lease (an outage) may be
   * another worker's by now.
   */
  boolean holds() {
    DispatchSlot current = slot;
    return current == null || current.isHeld();
  }

  /**
   * Waits for a dispatch slot again, as at the start of the run, after the one this worker held was
   * lost; meanwhile this worker fetches nothing new, so the cap on fetching runners holds however
   * the slots are taken again. One fetch thread waits, the others queue behind it and find the slot
   * it took. False once the wait is given up: the run stops, or the job has no work left ({@code
   * nothingLeft}). Never asked of the heartbeat, which goes on extending the leases of the items in
   * flight.
   */
  boolean takeAgain(BooleanSupplier nothingLeft) throws InterruptedException {
    slotLock.lockInterruptibly();
    try {
      DispatchSlot lost = slot;
      if (lost.isHeld()) {
        return true;
      }
      if (context.stop().get()) {
        return false;
      }
      String destination = context.settings().destination().name();
      log.info(
          "Lost the dispatch slot of destination {} (its lease was not renewed in time); this"
              + " worker takes no new item until it holds one again",
          destination);
      Optional<DispatchSlot> again =
          lost.takeAgain(
              destination,
              context.settings().maxDispatches(),
              () -> context.stop().get() || nothingLeft.getAsBoolean());
      if (again.isEmpty()) {
        return false;
      }
      slot = again.get();
      return true;
    } finally {
      slotLock.unlock();
    }
  }

  /** Gives the slot back, if this worker holds one: a waiting worker takes it now. */
  void close() {
    DispatchSlot held = slot;
    if (held != null) {
      held.close();
    }
  }
}
