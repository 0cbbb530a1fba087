package dev.pacer.cli.run;

import dev.pacer.cli.db.ItemStore;
import dev.pacer.jdkhttp.fetch.DestinationFetcher;
import java.util.Optional;
import java.util.function.BooleanSupplier;
import java.util.function.Function;

/**
 * Claims from the job's queue ({@link ItemStore#recordAndClaim}): a fetch thread's next claim also
 * records its last fetched item, in one statement shared with the other threads claiming then. The
 * single-destination mode claims so, and so does per-host mode with {@code --fifo-claims}, each
 * item then fetched through its host's fetcher.
 */
final class QueuedClaims {

  private final WorkerContext context;
  private final ItemWork work;
  private final DispatchGate gate;
  private final BooleanSupplier nothingLeft;
  private final Function<ItemStore.Item, DestinationFetcher> fetcherOf;

  /**
   * @param nothingLeft whether the job has no open item left
   * @param fetcherOf the fetcher of a claimed item
   */
  QueuedClaims(
      WorkerContext context,
      ItemWork work,
      DispatchGate gate,
      BooleanSupplier nothingLeft,
      Function<ItemStore.Item, DestinationFetcher> fetcherOf) {
    this.context = context;
    this.work = work;
    this.gate = gate;
    this.nothingLeft = nothingLeft;
    this.fetcherOf = fetcherOf;
  }

  /**
   * Claims and processes one item, recording the thread's last outcome with the claim. False when
   * the thread is done.
   */
  boolean next(Unrecorded unrecorded) throws InterruptedException {
    ItemStore.Done done = unrecorded.done;
    RunSettings settings = context.settings();
    // One token for every attempt: an attempt whose answer was lost leased under it, and the next
    // answers that item instead of leasing another.
    String claimToken = ItemStore.newLeaseToken();
    // With an outcome to record, the call is not given up when the run stops: the outcome is worth
    // waiting for, as on its own.
    Retrying.Attempt<ItemStore.RecordedAndClaimed> claimed =
        context
            .retrying()
            .call(
                done == null ? "claim an item" : "record a fetched item",
                () ->
                    context
                        .store()
                        .items()
                        .recordAndClaim(
                            settings.job(),
                            done,
                            context.workerId(),
                            claimToken,
                            settings.leaseMillis()),
                done == null);
    if (done != null) {
      unrecorded.done = null;
      work.recorded(
          done,
          claimed instanceof Retrying.Attempt.Answered<ItemStore.RecordedAndClaimed> a
              ? (a.value().recorded() ? Retrying.Recorded.RECORDED : Retrying.Recorded.LEASE_LOST)
              : Retrying.Recorded.GAVE_UP);
    }
    if (!(claimed instanceof Retrying.Attempt.Answered<ItemStore.RecordedAndClaimed> answered)) {
      // Stopped while PostgreSQL was away; or an outcome given up on, and the thread claims again.
      return done != null;
    }
    Optional<ItemStore.Item> item = answered.value().next();
    if (item.isEmpty()) {
      if (nothingLeft.getAsBoolean()) {
        return false;
      }
      Thread.sleep(Worker.IDLE_POLL_MILLIS);
      return true;
    }
    return fetch(item.get(), unrecorded);
  }

  /** Fetches a claimed item, if this worker may: its outcome is recorded with the next claim. */
  private boolean fetch(ItemStore.Item item, Unrecorded unrecorded) throws InterruptedException {
    if (!gate.holds()) {
      context.retrying().record("release an item", () -> context.store().items().release(item));
      return gate.takeAgain(nothingLeft);
    }
    work.held().add(item.token());
    try {
      unrecorded.done = work.process(item, () -> fetcherOf.apply(item)).orElse(null);
    } finally {
      if (unrecorded.done == null) {
        work.held().remove(item.token());
      }
    }
    return true;
  }
}
