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
    queue =
        new QueuedClaims(
            context,
            work,
            gate,
            this::nothingLeft,
            item ->
                hosts.forHost(UrlList.hostOf(item.url()), settings.destination().ratePerSecond()),
            new LeasedAhead(0, settings.leaseMillis(), TimeSource.SYSTEM),
            TimeSource.SYSTEM);
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

  @Override
  public void threadEnds() throws InterruptedException {
    if (context.settings().fifoClaims()) {
      queue.threadEnds();
    }
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
   * next host's turn. False when the thread is done.
   */
  private boolean nextClaim() throws InterruptedException {
    RunSettings settings = context.settings();
    String workerId = context.workerId();
    Retrying.Attempt<FrontierStore.Claim> claimed =
        context
            .retrying()
            .call(
                "claim an item",
                () ->
                    context
                        .store()
                        .frontier()
                        .claim(
                            settings.job(),
                            workerId,
                            workerId + "/" + Thread.currentThread().getName(),
                            settings.leaseMillis()),
                true);
    if (!(claimed instanceof Retrying.Attempt.Answered<FrontierStore.Claim> answered)) {
      return false; // stopped while PostgreSQL was away
    }
    FrontierStore.Claim claim = answered.value();
    claims.count(claim);
    if (claim instanceof FrontierStore.Claim.Claimed c) {
      return fetchClaimed(c);
    } else if (claim instanceof FrontierStore.Claim.Idle idle) {
      return sleepIdle(idle);
    } else if (claim instanceof FrontierStore.Claim.LockedOut l) {
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
