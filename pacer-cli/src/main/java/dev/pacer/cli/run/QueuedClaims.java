package dev.pacer.cli.run;

import dev.pacer.TimeSource;
import dev.pacer.cli.db.ItemStore;
import dev.pacer.jdkhttp.fetch.DestinationFetcher;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Optional;
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;
import java.util.function.Function;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Claims from the job's queue ({@link ItemStore#recordAndClaimMany}): a fetch thread's next claim
 * also records the outcomes fetched since the last statement, in one statement shared with the
 * other threads claiming then. The single-destination mode claims so, and so does per-host mode
 * with {@code --fifo-claims}, each item then fetched through its host's fetcher.
 *
 * <p><b>While PostgreSQL is away.</b> The worker keeps items leased ahead of its threads ({@link
 * LeasedAhead}): when a statement fails, a thread puts the outcomes it carried back and fetches the
 * next buffered item instead of waiting, through the same limiter, which paces at the divided rate
 * while the cursor cannot be reached. The outcomes wait in memory, at most one per item leased
 * ahead or in flight, and the first statement after the return records them all. A thread waits for
 * PostgreSQL only when the buffer has nothing left to hand out. Between outage boundaries no
 * statement is tried: each would fail at once, and the threads have items to fetch. Per host the
 * frontier claims ({@link PerHostFrontier}), and a thread whose claim fails fetches from the buffer
 * through this ({@link #fetchAhead}), its outcome waiting here the same way. For a while after the
 * return ({@link #RETURN_GRACE_NANOS}) the worker claims no item whose lease ran out, so that no
 * worker takes another's buffered or fetched items before their owner has extended their leases
 * again: none is fetched twice because the outage outlasted a lease. Nor, after a restart of the
 * server, a pending item before every worker of the job has reported since, having recorded again
 * and taken back what a crash may have forgotten ({@link ItemStore}'s class comment).
 *
 * <p><b>The dispatch slot.</b> It cannot be renewed while PostgreSQL is away, and none can be taken
 * either, by this worker or any other that asks the same database: the processes fetching are those
 * that held a slot when it went away, as the divisor counts them. So a worker goes on fetching its
 * buffer through an outage even once its slot's lease has run out, and only when a statement is
 * answered again does it find the slot lost: it gives its buffered items back, so that the workers
 * holding slots fetch them, and takes a slot again before it fetches more.
 */
final class QueuedClaims {

  /** The worker's logger: what a worker's parts log is the worker's to whoever reads it. */
  private static final Logger log = LoggerFactory.getLogger(Worker.class);

  /**
   * How long after an outage a worker claims only pending items, not those whose leases ran out:
   * every worker's leases ran on while PostgreSQL was away, and those of items another worker holds
   * (buffered, or fetched with the outcome waiting) are not lapsed but unextended. The workers come
   * back at the same retry boundary, or one later (a process that noticed a failure the database no
   * longer had), and each extends its leases with its next heartbeat: two boundaries (10 s) give
   * them time to. An item whose worker died meanwhile is claimed that much later. After a restart
   * of the server, pending items too wait, for this long at most, for every worker seen before it
   * to report again.
   */
  static final long RETURN_GRACE_NANOS = 10_000_000_000L;

  private final WorkerContext context;
  private final ItemWork work;
  private final DispatchGate gate;
  private final BooleanSupplier nothingLeft;
  private final Function<ItemStore.Item, DestinationFetcher> fetcherOf;
  private final LeasedAhead ahead;
  private final TimeSource time;

  /** Outcomes fetched and not yet recorded: the next statement of any thread records them. */
  private final Queue<ItemStore.Done> unrecorded = new ConcurrentLinkedQueue<>();

  /** The last statement failed: PostgreSQL is away until one is answered. */
  private final AtomicBoolean away = new AtomicBoolean();

  /**
   * When the first statement after an outage was sent: for {@link #RETURN_GRACE_NANOS} from then
   * this worker claims no item whose lease ran out.
   */
  private volatile long returnedNanos;

  /**
   * @param nothingLeft whether the job has no open item left
   * @param fetcherOf the fetcher of a claimed item
   * @param ahead the items this worker keeps leased ahead (capacity 0: only those it fetches now)
   */
  QueuedClaims(
      WorkerContext context,
      ItemWork work,
      DispatchGate gate,
      BooleanSupplier nothingLeft,
      Function<ItemStore.Item, DestinationFetcher> fetcherOf,
      LeasedAhead ahead,
      TimeSource time) {
    this.context = context;
    this.work = work;
    this.gate = gate;
    this.nothingLeft = nothingLeft;
    this.fetcherOf = fetcherOf;
    this.ahead = ahead;
    this.time = time;
    this.returnedNanos = time.nanoTime() - RETURN_GRACE_NANOS;
  }

  /**
   * Records the outcomes waiting and claims (one statement), then fetches the next buffered item;
   * or waits for one. False when the thread is done.
   */
  boolean next(ThreadClaims claims) throws InterruptedException {
    if (context.stop().get()) {
      if (!claims.tokens.isEmpty()) {
        ahead.abandoned(claims.tokens.size());
        claims.tokens = List.of();
      }
      return false;
    }
    boolean answered = !(away.get() && context.retrying().heldBack()) && recordAndClaim(claims);
    Optional<ItemStore.Item> item = ahead.take();
    if (item.isPresent()) {
      return fetch(item.get());
    }
    if (!answered) {
      context.retrying().pause(Retrying.firstDelayMillis());
      return true;
    }
    if (nothingLeft.getAsBoolean()) {
      return false;
    }
    Thread.sleep(Worker.IDLE_POLL_MILLIS);
    return true;
  }

  /**
   * One statement: records the outcomes waiting and claims what the buffer has room for (the
   * thread's claim made again, if its answer never came). False if PostgreSQL did not answer; the
   * outcomes then wait for the next statement.
   */
  private boolean recordAndClaim(ThreadClaims claims) {
    if (claims.tokens.isEmpty()) {
      int n = ahead.toClaim();
      List<String> tokens = new ArrayList<>(n);
      for (int i = 0; i < n; i++) {
        tokens.add(ItemStore.newLeaseToken());
      }
      claims.tokens = tokens;
    }
    List<ItemStore.Done> dones = new ArrayList<>();
    for (ItemStore.Done d; (d = unrecorded.poll()) != null; ) {
      dones.add(d);
    }
    if (dones.isEmpty() && claims.tokens.isEmpty()) {
      return true;
    }
    boolean made = make(dones, claims.tokens);
    if (made) {
      claims.tokens = List.of();
    }
    return made;
  }

  /**
   * Per host, whose claims are the frontier's ({@link PerHostFrontier}): records the outcomes
   * waiting, in one statement that claims nothing. False if PostgreSQL did not answer; they then
   * wait for the next.
   */
  boolean recordWaiting() {
    List<ItemStore.Done> dones = new ArrayList<>();
    for (ItemStore.Done d; (d = unrecorded.poll()) != null; ) {
      dones.add(d);
    }
    return dones.isEmpty() || make(dones, List.of());
  }

  /**
   * Whether PostgreSQL is away and its outage policy holds connections back: a statement would fail
   * at once, without asking it.
   */
  boolean heldBack() {
    return away.get() && context.retrying().heldBack();
  }

  /**
   * Whether no return from an outage is recent: {@link #RETURN_GRACE_NANOS} since the first
   * statement answered after it. Until then no claim takes an item whose lease ran out.
   */
  boolean settled() {
    return !away.get() && time.nanoTime() - returnedNanos >= RETURN_GRACE_NANOS;
  }

  /** Per host: PostgreSQL answered a claim of the frontier's. */
  void answered() {
    if (away.compareAndSet(true, false)) {
      returnedNanos = time.nanoTime();
    }
  }

  /**
   * Per host: the thread fetches the buffered item {@code take} takes out of the buffer instead of
   * claiming, its outcome waiting to be recorded as here: while PostgreSQL is away ({@code away}:
   * it did not answer a claim of the frontier's), or while the fleet hands over after its return.
   * False if the buffer has none to hand out.
   */
  boolean fetchAhead(Supplier<Optional<ItemStore.Item>> take, boolean away)
      throws InterruptedException {
    if (away) {
      this.away.set(true);
    }
    Optional<ItemStore.Item> item = take.get();
    return item.isPresent() && fetch(item.get());
  }

  /**
   * One statement: records {@code dones} and claims an item for each of {@code tokens}. False if
   * PostgreSQL did not answer; the outcomes then wait for the next statement.
   */
  private boolean make(List<ItemStore.Done> dones, List<String> tokens) {
    RunSettings settings = context.settings();
    long sent = time.nanoTime();
    boolean returning = away.get();
    boolean settled = settled();
    Retrying.Attempt<ItemStore.RecordedAndClaimedMany> attempt =
        context
            .retrying()
            .once(
                dones.isEmpty() ? "claim an item" : "record a fetched item",
                () ->
                    context
                        .store()
                        .items()
                        .recordAndClaimMany(
                            settings.job(),
                            dones,
                            context.workerId(),
                            tokens,
                            settings.leaseMillis(),
                            settled));
    if (!(attempt instanceof Retrying.Attempt.Answered<ItemStore.RecordedAndClaimedMany> a)) {
      unrecorded.addAll(dones);
      away.set(true);
      return false;
    }
    if (returning && away.compareAndSet(true, false)) {
      returnedNanos = sent;
    }
    recorded(dones, a.value().recorded());
    if (!tokens.isEmpty()) {
      ahead.claimed(a.value().claimed(), tokens.size(), sent);
    }
    return true;
  }

  private void recorded(List<ItemStore.Done> dones, Set<String> recorded) {
    for (ItemStore.Done done : dones) {
      work.recorded(
          done,
          recorded.contains(done.item().token())
              ? Retrying.Recorded.RECORDED
              : Retrying.Recorded.LEASE_LOST);
    }
  }

  /**
   * Fetches a buffered item, if this worker may: its outcome waits to be recorded with the next
   * statement. Without its dispatch slot, and PostgreSQL answering, the worker gives the item and
   * its buffer back and waits for a slot again.
   */
  private boolean fetch(ItemStore.Item item) throws InterruptedException {
    if (!away.get() && !gate.holds()) {
      List<ItemStore.Item> back = new ArrayList<>(ahead.drain());
      back.add(item);
      release(back);
      return gate.takeAgain(nothingLeft);
    }
    work.hold(item);
    Optional<ItemStore.Done> done = Optional.empty();
    try {
      done = work.process(item, () -> fetcherOf.apply(item));
    } finally {
      if (done.isPresent()) {
        unrecorded.add(done.get());
      } else {
        work.letGo(item);
      }
    }
    return true;
  }

  /**
   * A fetch thread ends: the outcomes waiting are recorded (retried until PostgreSQL answers, for
   * up to the retry's bound), then the items still leased ahead are given back, to be fetched by
   * whoever claims them next.
   */
  void threadEnds() throws InterruptedException {
    List<ItemStore.Done> dones = new ArrayList<>();
    for (ItemStore.Done d; (d = unrecorded.poll()) != null; ) {
      dones.add(d);
    }
    if (!dones.isEmpty()) {
      Retrying.Attempt<ItemStore.RecordedAndClaimedMany> attempt =
          context
              .retrying()
              .call(
                  "record a fetched item",
                  () ->
                      context
                          .store()
                          .items()
                          .recordAndClaimMany(
                              context.settings().job(),
                              dones,
                              context.workerId(),
                              List.of(),
                              context.settings().leaseMillis(),
                              false),
                  false);
      if (attempt instanceof Retrying.Attempt.Answered<ItemStore.RecordedAndClaimedMany> a) {
        recorded(dones, a.value().recorded());
      } else {
        dones.forEach(d -> work.recorded(d, Retrying.Recorded.GAVE_UP));
      }
    }
    release(ahead.drain());
  }

  /** Gives items back untouched; one PostgreSQL does not take back lapses with its lease. */
  private void release(Collection<ItemStore.Item> items) throws InterruptedException {
    if (!items.isEmpty()) {
      log.info("Giving {} item(s) back to job {}", items.size(), context.settings().job());
    }
    for (ItemStore.Item item : items) {
      context.retrying().call("release an item", () -> context.store().items().release(item), true);
    }
  }

  /** The items leased ahead. */
  List<ItemStore.Item> leasedAhead() {
    return ahead.items();
  }

  /** See {@link LeasedAhead#extended}. */
  void leasesExtended(Collection<String> asked, Set<String> extended, long sentNanos) {
    ahead.extended(asked, extended, sentNanos);
  }
}
