package dev.pacer.cli.run;

import dev.pacer.LockedOutException;
import dev.pacer.ThrottledException;
import dev.pacer.TimeSource;
import dev.pacer.cli.db.ItemStore;
import dev.pacer.jdkhttp.fetch.DestinationFetcher;
import dev.pacer.jdkhttp.fetch.FetchFailedException;
import dev.pacer.jdkhttp.fetch.FetchResponse;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Path;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What a fetch thread does with an item it claimed, in either mode: fetches it, stores its body and
 * records the outcome, counting it against the failure bars once ({@link Bars}). Keeps the items
 * held right now, whose leases the heartbeat extends, and the outcomes recorded lately, which it
 * records again after an outage ({@link RecordedLately}), and counts the items done and failed for
 * the worker's result.
 */
final class ItemWork {

  /** The worker's logger: what a worker's parts log is the worker's to whoever reads it. */
  private static final Logger log = LoggerFactory.getLogger(Worker.class);

  private static final long FAILURE_RETRY_MILLIS = 2000;

  /** The failure bars an item's first attempt is counted against: the mode's. */
  interface Bars {
    /**
     * Counts an item's first attempt: {@code outcome}, through {@code fetcher} (null if this
     * process failed it before fetching), {@code failure} the message of a failed fetch.
     */
    void count(ItemOutcome outcome, DestinationFetcher fetcher, String failure);
  }

  private final WorkerContext context;
  private final Bodies bodies;
  private final DurablePoints durable;
  private final Bars bars;

  /** The items this worker's threads hold right now, by lease token. */
  private final Map<String, ItemStore.Item> held = new ConcurrentHashMap<>();

  /**
   * The outcomes recorded lately, to be recorded again after an outage: as many as the worker could
   * hold leased ahead.
   */
  private final RecordedLately lately =
      new RecordedLately(SingleDestination.MOST_LEASED_AHEAD, TimeSource.SYSTEM);

  private final AtomicLong done = new AtomicLong();
  private final AtomicLong failed = new AtomicLong();

  ItemWork(WorkerContext context, DurablePoints durable, Bars bars) {
    this.context = context;
    this.durable = durable;
    this.bodies = durable.bodies();
    this.bars = bars;
  }

  /** The items held right now, for the heartbeat to extend their leases. */
  Collection<ItemStore.Item> held() {
    return held.values();
  }

  /** A thread holds {@code item} from now until its outcome is recorded, or it lets it go. */
  void hold(ItemStore.Item item) {
    held.put(item.token(), item);
  }

  /** A thread lets {@code item} go: its outcome was recorded otherwise, or it was given back. */
  void letGo(ItemStore.Item item) {
    held.remove(item.token());
  }

  /** An outage began: the outcomes recorded lately are set aside ({@link RecordedLately}). */
  void outageNoticed() {
    lately.setAside();
  }

  /** The outcomes recorded just before the last outage, to be recorded again; empty if none. */
  List<ItemStore.Done> recordedBeforeTheOutage() {
    return lately.setAsideOutcomes();
  }

  /**
   * {@code dones} ({@link #recordedBeforeTheOutage}) were recorded again: a durable point covers
   * their bodies again and marks them, as the mark may have been forgotten with the record.
   */
  void recordedAgain(List<ItemStore.Done> dones) {
    lately.recordedAgain(dones);
    dones.forEach(durable::recorded);
  }

  long done() {
    return done.get();
  }

  long failed() {
    return failed.get();
  }

  /**
   * Fetches a claimed item through the fetcher {@code fetcherOf} makes, and stores its body. Every
   * outcome but a fetched body is recorded here; a fetched body's is answered, for the caller to
   * record (alone, or with its next claim). Whatever throws on the way, from making the fetcher (a
   * host name or a ceiling no destination may have) to storing the body, fails the item with the
   * reason, as an ordinary failure: left to its lease, the item would be claimed again after every
   * lapse, and throw again, for ever.
   */
  Optional<ItemStore.Done> process(ItemStore.Item item, Supplier<DestinationFetcher> fetcherOf)
      throws InterruptedException {
    if (context.stop().get()) {
      context.retrying().record("release an item", () -> context.store().items().release(item));
      return Optional.empty();
    }
    try {
      return fetchAndStore(item, fetcherOf.get());
    } catch (RuntimeException | Error e) {
      log.warn("Item {} failed with an unexpected error", item.url(), e);
      count(item, ItemOutcome.OWN_FAILURE, null, null);
      fail(item, null, "unexpected error: " + e);
      return Optional.empty();
    }
  }

  private Optional<ItemStore.Done> fetchAndStore(ItemStore.Item item, DestinationFetcher fetcher)
      throws InterruptedException {
    Path part;
    try {
      part = bodies.newPart(item);
    } catch (IOException e) {
      count(item, ItemOutcome.OWN_FAILURE, null, null);
      fail(item, null, "could not make the directory for the body: " + e);
      return Optional.empty();
    }
    FetchResponse response;
    try {
      response = bodies.fetch(fetcher, URI.create(item.url()), part);
    } catch (ThrottledException e) {
      bodies.discard(part);
      long retry = Math.max(1000, fetcher.limiter().currentInterval().multipliedBy(4).toMillis());
      context
          .retrying()
          .record(
              "record a throttled item",
              () ->
                  context
                      .store()
                      .items()
                      .markThrottled(item, e.status(), retry, context.settings().maxThrottles()));
      return Optional.empty();
    } catch (LockedOutException e) {
      bodies.discard(part);
      // Not an attempt: the item goes back untouched; the next envelope check halts the run.
      context.retrying().record("release an item", () -> context.store().items().release(item));
      return Optional.empty();
    } catch (FetchFailedException e) {
      bodies.discard(part);
      count(item, ItemOutcome.of(e), fetcher, e.getMessage());
      fail(item, e.status().isPresent() ? e.status().getAsInt() : null, e.getMessage());
      return Optional.empty();
    } catch (RuntimeException | Error e) {
      bodies.discard(part);
      throw e;
    }
    return stored(item, part, response, fetcher);
  }

  /** Commits a fetched body; a fetched body's outcome is answered, to be recorded. */
  private Optional<ItemStore.Done> stored(
      ItemStore.Item item, Path part, FetchResponse response, DestinationFetcher fetcher)
      throws InterruptedException {
    Bodies.Stored body;
    try {
      body = bodies.commit(item, part, response);
    } catch (IOException e) {
      count(item, ItemOutcome.OWN_FAILURE, null, null);
      fail(item, response.status(), "could not store the body: " + e);
      return Optional.empty();
    }
    count(item, ItemOutcome.ANSWERED, fetcher, null);
    return Optional.of(
        new ItemStore.Done(
            item,
            response.status(),
            body.location(),
            body.bytes(),
            body.sha256(),
            bodies.forcesEach()));
  }

  /**
   * Counts an item against its failure bars at its first attempt, and never again: an item counts
   * once however many attempts it takes (one whose first attempt failed counts as failed, even if a
   * later one is done). A throttled attempt is not counted at all.
   */
  private void count(
      ItemStore.Item item, ItemOutcome outcome, DestinationFetcher fetcher, String failure) {
    if (item.failures() > 0) {
      return;
    }
    bars.count(outcome, fetcher, failure);
  }

  /** Records a fetched item's outcome on its own. */
  void record(ItemStore.Done fetched) throws InterruptedException {
    recorded(
        fetched,
        context
            .retrying()
            .record("record a fetched item", () -> context.store().items().markDone(fetched)));
  }

  /**
   * Counts a fetched item's outcome as recorded, or not; its lease is no longer extended. One
   * recorded before its body is durable waits for the next durable point.
   */
  void recorded(ItemStore.Done fetched, Retrying.Recorded recorded) {
    held.remove(fetched.item().token());
    switch (recorded) {
      case RECORDED -> {
        done.incrementAndGet();
        lately.add(fetched);
        durable.recorded(fetched);
      }
      case LEASE_LOST ->
          log.warn(
              "Lease on {} was lost before it could be recorded; its current"
                  + " holder records it",
              fetched.item().url());
      case GAVE_UP -> {} // the lease lapses and the item is fetched again
    }
  }

  private void fail(ItemStore.Item item, Integer status, String error) throws InterruptedException {
    RunSettings settings = context.settings();
    Retrying.Recorded recorded =
        context
            .retrying()
            .record(
                "record a failed item",
                () ->
                    context
                        .store()
                        .items()
                        .markFailed(
                            item, status, error, FAILURE_RETRY_MILLIS, settings.maxAttempts()));
    if (recorded == Retrying.Recorded.RECORDED && item.failures() + 1 >= settings.maxAttempts()) {
      failed.incrementAndGet();
    }
    log.debug("Fetch failed for {}: {}", item.url(), error);
  }
}
