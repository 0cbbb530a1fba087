package dev.pacer.cli.run;

import dev.pacer.LateTurns;
import dev.pacer.TimeSource;
import dev.pacer.cli.db.FrontierStore;
import dev.pacer.cli.db.ItemStore;
import dev.pacer.cli.model.LimiterFigures;
import dev.pacer.cli.model.UrlList;
import dev.pacer.jdkhttp.fetch.DestinationFetcher;
import dev.pacer.postgres.KeptConnection;
import dev.pacer.spi.Cursor;
import java.net.URI;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Per-host mode's work ({@link RunSettings#perHost()}): a claim is the reservation of the item's
 * host's turn ({@link FrontierStore}), and the thread sleeps until that turn, then fetches through
 * the host's own limiter ({@link HostFetchers}). When no host is due the claim says when the next
 * one will be, and the thread sleeps exactly that long (at most {@value Worker#IDLE_POLL_MILLIS} ms
 * while some host is due but held at its in-flight cap, whose end no one can know). A host locked
 * out (403) keeps its items pending and is passed over; the other hosts go on, and the run reports
 * it. So is a host over its failure bar ({@link HostOutcomes}), its open items deferred to the next
 * run. With {@code --robots} a fetch thread first settles any host's robots.txt that is due ({@link
 * RobotsReader}); a host's items are claimable only once its robots.txt is settled. With {@code
 * --fifo-claims} the items are claimed from the job's queue instead ({@link QueuedClaims}), each
 * fetched through its host's limiter.
 *
 * <p><b>While PostgreSQL is away.</b> The heartbeat keeps items leased ahead, spread over the hosts
 * ({@link FrontierStore#leaseAhead}, {@link #fillAhead}); this worker's claims take them at their
 * hosts' turns while PostgreSQL answers, so the buffer rolls over. When a claim fails the thread
 * fetches a buffered item instead ({@link QueuedClaims#fetchAhead}), through its host's limiter,
 * which paces at the host's divided rate meanwhile; not one of a host this worker knows to be
 * locked out, passed over or over its failure bar. The outcomes wait and are recorded before the
 * next claim once PostgreSQL answers, and for a while after its return the claims take no item
 * whose lease ran out ({@link QueuedClaims#settled}).
 */
final class PerHostFrontier implements WorkSource {

  /** The worker's logger: what a worker's parts log is the worker's to whoever reads it. */
  private static final Logger log = LoggerFactory.getLogger(Worker.class);

  private final WorkerContext context;
  private final Envelope envelope;
  private final LimiterCounts limiterCounts;
  private final DispatchGate gate;
  private final HostFetchers hosts;

  /** The hosts' failure bar, this process's counts between heartbeats. */
  private final HostOutcomes hostOutcomes = new HostOutcomes();

  /** With --robots, the hosts' robots.txt; null otherwise. */
  private final RobotsReader robots;

  /** Claims whose turn began more than half an interval before the claim answered. */
  private final AtomicLong lateClaims = new AtomicLong();

  /** What this worker's claims came back with. */
  private final ClaimTally claims = new ClaimTally();

  /** Hosts this process has reported as locked out. */
  private final Set<String> lockedOutHosts = ConcurrentHashMap.newKeySet();

  private final ItemWork work;
  private final QueuedClaims queue;

  /**
   * The items leased ahead for outages: per host, a buffer the heartbeat fills across the hosts
   * ({@link FrontierStore#leaseAhead}); with {@code --fifo-claims}, none.
   */
  private final LeasedAhead ahead;

  /** The hosts' rates, as the claims and the buffer's fills read them from the frontier. */
  private final Map<String, Double> rates = new ConcurrentHashMap<>();

  /** Hosts no claim reaches any more (locked out, passed over): their buffered items go back. */
  private final Set<String> barred = ConcurrentHashMap.newKeySet();

  /**
   * Per host, the threads of this worker fetching a buffered item of it: see {@link #fetchAhead}.
   */
  private final Map<String, Integer> threadsAhead = new ConcurrentHashMap<>();

  /** Held by a fill of the buffer, and by a claim's look into it: see {@link #nextClaim}. */
  private final Object filling = new Object();

  /**
   * Makes the hosts' fetchers on {@code cursor}, which report every request to {@code recorder},
   * and warms them up for {@code sampleUrl}, a URL of the job, if one is known.
   */
  PerHostFrontier(
      WorkerContext context,
      Envelope envelope,
      DurablePoints durable,
      DispatchGate gate,
      Cursor cursor,
      LimiterCounts limiterCounts,
      RequestRecorder recorder,
      Optional<String> sampleUrl)
      throws InterruptedException {
    this.context = context;
    this.envelope = envelope;
    this.limiterCounts = limiterCounts;
    this.gate = gate;
    RunSettings settings = context.settings();
    hosts = new HostFetchers(settings, cursor, recorder, limiterCounts, TimeSource.SYSTEM);
    hosts.warmUp(sampleUrl.map(URI::create).orElse(null));
    robots =
        settings.robots()
            ? new RobotsReader(
                settings, context.workerId(), hosts, context.store()::robots, context.retrying())
            : null;
    work = new ItemWork(context, durable, this::count);
    ahead =
        new LeasedAhead(
            settings.fifoClaims() || settings.outageBuffer().isZero()
                ? 0
                : SingleDestination.MOST_LEASED_AHEAD,
            settings.leaseMillis(),
            TimeSource.SYSTEM);
    queue =
        new QueuedClaims(
            context, work, gate, this::nothingLeft, this::fetcherOf, ahead, TimeSource.SYSTEM);
  }

  /** The fetcher of a buffered or queued item's host, at the host's rate if it is known. */
  private DestinationFetcher fetcherOf(ItemStore.Item item) {
    String host = UrlList.hostOf(item.url());
    return hosts.forHost(
        host, rates.getOrDefault(host, context.settings().destination().ratePerSecond()));
  }

  /**
   * The host's bar counts what its host answered, through {@code fetcher} ({@code failure} its
   * message), and the run's only what this process failed.
   */
  private void count(ItemOutcome outcome, DestinationFetcher fetcher, String failure) {
    envelope.recordOutcome(outcome == ItemOutcome.OWN_FAILURE);
    if (outcome != ItemOutcome.OWN_FAILURE) {
      hostOutcomes.count(
          fetcher.limiter().destination().name(), outcome == ItemOutcome.UNANSWERED, failure);
    }
  }

  @Override
  public ItemWork work() {
    return work;
  }

  /** A fetch thread ends: lost claims settled if PostgreSQL answers, then as one destination's. */
  @Override
  public void threadEnds() throws InterruptedException {
    settleLostLeases();
    queue.threadEnds();
  }

  @Override
  public List<ItemStore.Item> leasedAhead() {
    return queue.leasedAhead();
  }

  @Override
  public void leasesExtended(Collection<String> asked, Set<String> extended, long sentNanos) {
    queue.leasesExtended(asked, extended, sentNanos);
  }

  /** A lockout stops its host, not the run: the claims pass over it. */
  @Override
  public Optional<Envelope.Breach> breach() {
    return envelope.checkBars();
  }

  @Override
  public boolean next(ThreadClaims pending) throws InterruptedException {
    if (context.settings().fifoClaims()) {
      return queue.next(pending);
    }
    return (robots != null && robots.settleNext()) || nextClaim();
  }

  /**
   * One claim, which reserves its host's turn, then the item at that turn; or the sleep until the
   * next host's turn. False when the thread is done. While PostgreSQL is away the thread fetches a
   * buffered item instead ({@link #whileAway}); the outcomes so fetched are recorded before the
   * next claim once it answers again.
   */
  private boolean nextClaim() throws InterruptedException {
    if (queue.heldBack() || !settleLostLeases() || !queue.recordWaiting()) {
      return whileAway();
    }
    if (ahead.capacity() > 0 && context.database().outagePolicy().isHandingOver()) {
      return duringHandOver();
    }
    Retrying.Attempt<FrontierStore.Claim> claimed =
        context.retrying().once("claim an item", this::claim);
    if (!(claimed instanceof Retrying.Attempt.Answered<FrontierStore.Claim>)) {
      if (fetchAhead(true)) {
        return true;
      }
      claimed = context.retrying().call("claim an item", this::claim, true);
    }
    if (!(claimed instanceof Retrying.Attempt.Answered<FrontierStore.Claim> answered)) {
      return false; // stopped while PostgreSQL was away
    }
    queue.answered();
    FrontierStore.Claim claim = answered.value();
    claims.count(claim);
    if (claim instanceof FrontierStore.Claim.Claimed c) {
      rates.put(c.host(), c.rate());
      return takenMeanwhile(c.item()) ? giveBack(c.item()) : fetchClaimed(c);
    } else if (claim instanceof FrontierStore.Claim.Idle idle) {
      return sleepIdle(idle);
    } else if (claim instanceof FrontierStore.Claim.LockedOut l) {
      barred.add(l.host());
      if (lockedOutHosts.add(l.host())) {
        log.error(
            "Host {} is locked out ({}): its items stay pending and are passed over; the"
                + " other hosts go on. Acknowledge it with: pacer trips ack --destination {} --note"
                + " TEXT",
            l.host(),
            l.reason(),
            l.host());
      }
    }
    // Refused (the host's copy of its cursor is healed) and Lost (another claim leased the item
    // first): claim again at once.
    return true;
  }

  /**
   * Settles, before anything is recorded, the leases of this worker's claims and fills whose
   * answers were lost ({@link FrontierStore#settleLostLeases}): an item such a claim took from the
   * buffer at its host's turn, which a thread then fetched from the buffer, is leased to the
   * buffer's token again, so that its record is accepted and it is fetched once. False if
   * PostgreSQL did not answer.
   */
  private boolean settleLostLeases() {
    FrontierStore frontier = context.store().frontier();
    if (!frontier.hasUnsettledLeases()) {
      return true;
    }
    Map<String, FrontierStore.Holding> holding = new HashMap<>();
    ahead.holdings(holding);
    Retrying.Attempt<Integer> settled =
        context
            .retrying()
            .once(
                "settle the leases of claims whose answers were lost",
                () -> frontier.settleLostLeases(context.settings().job(), holding));
    if (!(settled instanceof Retrying.Attempt.Answered<Integer> answered)) {
      return false;
    }
    ahead.forgetTaken();
    log.info(
        "Settled the leases of claims whose answers were lost: {} item(s) given back to the job;"
            + " an item this worker held from its buffer stays its own",
        answered.value());
    return true;
  }

  /** The frontier's claim, which may take this worker's buffered items but those held. */
  private FrontierStore.Claim claim() throws SQLException {
    RunSettings settings = context.settings();
    String workerId = context.workerId();
    List<String> held = new ArrayList<>();
    work.held().forEach(i -> held.add(i.token()));
    return context
        .store()
        .frontier()
        .claim(
            settings.job(),
            workerId,
            workerId + "/" + Thread.currentThread().getName(),
            held,
            queue.settled(),
            settings.leaseMillis());
  }

  /**
   * The fleet hands over after PostgreSQL's return ({@code OutagePolicy#isHandingOver}): a worker
   * that returned a boundary later may still be fetching its buffer at the divided rate, which the
   * hosts' cursors do not see. A limiter paces locally as well meanwhile, but a claim's turn, taken
   * on the host's cursor alone, would not: so the thread fetches its buffer, through the hosts'
   * limiters, and claims nothing until the hand-over ends (a few seconds at most), waiting for it
   * if the buffer has nothing to hand out.
   */
  private boolean duringHandOver() throws InterruptedException {
    if (!fetchAhead(false)) {
      long left = context.database().outagePolicy().handOverLeft().toMillis();
      Thread.sleep(Math.max(1, Math.min(Worker.IDLE_POLL_MILLIS, left)));
    }
    return true;
  }

  /**
   * PostgreSQL is away: fetches a buffered item, or waits for the outage policy's next boundary if
   * the buffer has none to hand out.
   */
  private boolean whileAway() throws InterruptedException {
    if (!fetchAhead(true)) {
      context.retrying().pause(Retrying.firstDelayMillis());
    }
    return true;
  }

  /**
   * Fetches a buffered item while PostgreSQL is {@code away}, or while the fleet hands over after
   * its return, when a claimed turn would wait behind the hand-over's local pacing and be given up
   * as late. Of the host the fewest of this worker's threads are fetching from the buffer: each
   * host's limiter paces this process at the divided rate, and a thread waits for its host's turn,
   * so threads spread evenly over the hosts keep every host at it, where threads queued on one
   * host's turns would leave another without a thread for its turns. False if the buffer has none
   * to hand out.
   */
  private boolean fetchAhead(boolean away) throws InterruptedException {
    String[] fetching = new String[1];
    try {
      return queue.fetchAhead(
          () ->
              ahead.takeLeast(
                  this::mayFetchAhead,
                  item -> threadsAhead.getOrDefault(UrlList.hostOf(item.url()), 0),
                  item -> {
                    fetching[0] = UrlList.hostOf(item.url());
                    threadsAhead.merge(fetching[0], 1, Integer::sum);
                  }),
          away);
    } finally {
      if (fetching[0] != null) {
        threadsAhead.computeIfPresent(fetching[0], (host, n) -> n == 1 ? null : n - 1);
      }
    }
  }

  /**
   * Whether a buffered item may be fetched while PostgreSQL is away: not if its host is locked out
   * (as this process has heard), passed over (as the last heartbeat heard), or has failed as many
   * items in this process since the last heartbeat counted them as fail the fleet's bar.
   */
  private boolean mayFetchAhead(ItemStore.Item item) {
    String host = UrlList.hostOf(item.url());
    return !barred.contains(host)
        && !lockedOutHosts.contains(host)
        && !hosts.lockedOut(host)
        && hostOutcomes.failures(host) < Envelope.MAX_FAILURES;
  }

  /**
   * Whether a claim leased an item that one of this worker's threads holds under another token: one
   * taken from the buffer to fetch while PostgreSQL was away, which the claim found still in the
   * buffer on the server. A buffered item the claim leased comes out of the buffer here; under
   * {@link #filling}, so that an item a fill leased is in the buffer before a claim looks for it.
   */
  private boolean takenMeanwhile(ItemStore.Item claimed) {
    synchronized (filling) {
      if (ahead.claimedAgain(claimed.key())) {
        return false;
      }
    }
    return work.held().stream()
        .anyMatch(i -> i.key().equals(claimed.key()) && !i.token().equals(claimed.token()));
  }

  /** Gives a claimed item back untouched: another thread of this worker fetches it. */
  private boolean giveBack(ItemStore.Item item) throws InterruptedException {
    context.retrying().record("release an item", () -> context.store().items().release(item));
    return true;
  }

  /** Fetches a claimed item at its claimed turn, and records its outcome. */
  private boolean fetchClaimed(FrontierStore.Claim.Claimed c) throws InterruptedException {
    ItemStore items = context.store().items();
    if (!gate.holds()) {
      context.retrying().record("release an item", () -> items.release(c.item()));
      return gate.takeAgain(this::nothingLeft);
    }
    if (context.stop().get()) {
      context.retrying().record("release an item", () -> items.release(c.item()));
      return false;
    }
    work.hold(c.item());
    try {
      Optional<ItemStore.Done> fetched = work.process(c.item(), () -> atClaimedTurn(c));
      if (fetched.isPresent()) {
        work.record(fetched.get());
      }
    } finally {
      work.letGo(c.item());
      hosts.turns().forget();
    }
    return true;
  }

  /** Sleeps until the next host's turn, or a poll's time. False when the thread is done. */
  private boolean sleepIdle(FrontierStore.Claim.Idle idle) throws InterruptedException {
    if (idle.wake().isEmpty() && !idle.held() && nothingLeft()) {
      return false;
    }
    long sleep =
        idle.wake()
            .map(Duration::toNanos)
            .orElse(TimeUnit.MILLISECONDS.toNanos(Worker.IDLE_POLL_MILLIS));
    if (idle.held()) {
      sleep = Math.min(sleep, TimeUnit.MILLISECONDS.toNanos(Worker.IDLE_POLL_MILLIS));
    }
    TimeUnit.NANOSECONDS.sleep(sleep);
    return true;
  }

  /**
   * The fetcher of a claimed item's host, its first request to go at the turn the claim reserved. A
   * turn the claim answered too late for ({@link LateTurns}: half the interval, at least 1 ms) is
   * given up, as the limiter gives up one it woke too late for: the host's limiter then reserves a
   * fresh turn on the host's cursor row instead.
   */
  private DestinationFetcher atClaimedTurn(FrontierStore.Claim.Claimed c) {
    DestinationFetcher hostFetcher = hosts.forHost(c.host(), c.rate());
    Duration late = c.turnIn().negated();
    if (!LateTurns.isTooLate(late, hostFetcher.limiter().currentInterval())) {
      hosts
          .turns()
          .prepay(
              c.host(), c.turnIn(), hostFetcher.limiter().destination().interval(), c.backoff());
    } else {
      lateClaims.incrementAndGet();
    }
    return hostFetcher;
  }

  @Override
  public boolean nothingLeft() {
    try {
      return !context
          .store()
          .frontier()
          .hasClaimableWork(context.settings().job(), context.settings().robots());
    } catch (SQLException e) {
      return false;
    }
  }

  /**
   * The robots.txt leases extended; the hosts idle for a minute forgotten ({@link
   * HostFetchers#evictIdle}), the drained ones retired; the hosts' items counted against their
   * failure bars, and their clean answers against their backoff.
   */
  @Override
  public void beat() throws SQLException {
    RunSettings settings = context.settings();
    if (robots != null && robots.reading()) {
      context
          .store()
          .robots()
          .extendLeases(settings.job(), context.workerId(), settings.leaseMillis());
    }
    int evicted = hosts.evictIdle();
    if (evicted > 0) {
      log.debug(
          "Forgot {} host(s) idle for {} s; {} fetcher(s) held",
          evicted,
          HostFetchers.IDLE.toSeconds(),
          hosts.fetchersHeld());
    }
    context.store().frontier().retireDrainedHosts(settings.job());
    countHostItems();
    fillAhead();
    Map<String, Integer> clean = hosts.turns().drainCleanAnswers();
    try {
      context.store().frontier().countCleanAnswers(clean);
    } catch (SQLException e) {
      // Not counted is only slower to recover from a backoff; they are not kept.
      log.debug(
          "Could not count {} host(s)' clean answers: {}",
          clean.size(),
          context.database().describe(e));
    }
  }

  /** The most items one fill of the buffer leases ahead: a statement of a few milliseconds. */
  static final int MOST_AHEAD_PER_FILL = 100;

  /**
   * The buffer's part of the heartbeat: gives back the buffered items of hosts no claim reaches any
   * more, and leases ahead, spread across the hosts, up to the room left; each host's items in the
   * buffer at most those its limiter paces in {@code --outage-buffer} seconds at the divided rate
   * ({@link #perHostSeconds}).
   */
  private void fillAhead() throws SQLException {
    if (ahead.capacity() == 0 || context.stop().get()) {
      return;
    }
    RunSettings settings = context.settings();
    FrontierStore frontier = context.store().frontier();
    Set<String> buffered = new java.util.HashSet<>();
    ahead.items().forEach(i -> buffered.add(UrlList.hostOf(i.url())));
    barred.addAll(frontier.barredHosts(settings.job(), buffered));
    for (ItemStore.Item back : ahead.drop(i -> barred.contains(UrlList.hostOf(i.url())))) {
      context.store().items().release(back);
    }
    int room = ahead.room(MOST_AHEAD_PER_FILL);
    if (room == 0) {
      return;
    }
    List<String> tokens = new ArrayList<>(room);
    for (int i = 0; i < room; i++) {
      tokens.add(ItemStore.newLeaseToken());
    }
    synchronized (filling) {
      long sent = System.nanoTime();
      List<FrontierStore.Ahead> leased =
          frontier.leaseAhead(
              settings.job(),
              context.workerId(),
              tokens,
              settings.leaseMillis(),
              perHostSeconds(
                  settings.outageBuffer(), settings.destination().maxFetchingProcesses()));
      List<ItemStore.Item> items = new ArrayList<>(leased.size());
      for (FrontierStore.Ahead a : leased) {
        rates.put(a.host(), a.rate());
        items.add(a.item());
      }
      ahead.filled(items, sent);
    }
  }

  /**
   * How many seconds of a host's rate a worker keeps of its items leased ahead: {@code
   * --outage-buffer} at the divided rate, {@code rate / divisor}, which the host's limiter paces
   * each process at while PostgreSQL is away ({@link LeasedAhead#capacityFor}'s rule, per host).
   */
  static double perHostSeconds(Duration outageBuffer, int divisor) {
    return outageBuffer.toMillis() / 1000.0 / divisor;
  }

  @Override
  public void countAtEnd() {
    countHostItems();
  }

  /**
   * Adds the items this process counted per host to the hosts' failure bars, and logs the hosts
   * that this passes over. Counts that could not be added go with the next heartbeat; those whose
   * answer was lost may have been added, and are not added again: a bar may count too few, never an
   * item twice.
   */
  private void countHostItems() {
    Map<String, FrontierStore.HostItems> counted = hostOutcomes.drain();
    String job = context.settings().job();
    try {
      for (FrontierStore.PassedOver p :
          context
              .store()
              .frontier()
              .countItems(job, counted, Envelope.FAILURE_WINDOW, Envelope.MAX_FAILURES)) {
        barred.add(p.host());
        log.warn(
            "Host {} is passed over: {}. Its open items are deferred to the next run of job"
                + " {}; the other hosts go on",
            p.host(),
            p.reason(),
            job);
      }
    } catch (SQLException e) {
      if (KeptConnection.isOutcomeUnknown(e)) {
        log.debug(
            "The items of {} host(s) may or may not have been counted against their failure"
                + " bars (the answer was lost); they are not counted again: {}",
            counted.size(),
            context.database().describe(e));
        return;
      }
      hostOutcomes.putBack(counted);
      log.debug(
          "Could not count {} host(s)' items against their failure bars: {}",
          counted.size(),
          context.database().describe(e));
    }
  }

  @Override
  public void logClaims() {
    if (!context.settings().fifoClaims()) {
      log.info(claims.describe());
    }
    if (lateClaims.get() > 0) {
      log.info(
          "{} claimed turn(s) began more than half an interval before their claim answered"
              + " (a slow or busy database) and were given up for fresh ones",
          lateClaims.get());
    }
  }

  @Override
  public long requestCount() {
    return hosts.requestCount();
  }

  @Override
  public long throttledCount() {
    return hosts.throttledCount();
  }

  @Override
  public double rate() {
    return hosts.rate();
  }

  @Override
  public LimiterFigures figures() {
    return limiterCounts.figures(
        hosts.widestBackoff(), hosts.anyDegraded(), hosts.isCursorLatched());
  }

  @Override
  public boolean lockedOut() {
    return false;
  }
}
