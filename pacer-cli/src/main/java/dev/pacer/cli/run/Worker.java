package dev.pacer.cli.run;

import dev.pacer.Cursor;
import dev.pacer.Destination;
import dev.pacer.DestinationFetcher;
import dev.pacer.DestinationLimiter;
import dev.pacer.FetchFailedException;
import dev.pacer.FetchResponse;
import dev.pacer.LimiterRegistry;
import dev.pacer.LocalCursor;
import dev.pacer.LockedOutException;
import dev.pacer.ThrottledException;
import dev.pacer.TimeSource;
import dev.pacer.cli.db.Database;
import dev.pacer.cli.db.FrontierStore;
import dev.pacer.cli.db.ItemStore;
import dev.pacer.cli.db.TripStore;
import dev.pacer.cli.db.WorkState;
import dev.pacer.cli.db.WorkerStore;
import dev.pacer.cli.db.RequestLog;
import dev.pacer.cli.model.HaltReason;
import dev.pacer.cli.model.LimiterFigures;
import dev.pacer.cli.model.UrlList;
import dev.pacer.postgres.KeptConnection;
import dev.pacer.postgres.PostgresCursor;
import dev.pacer.postgres.PostgresFleetSlots;
import java.io.IOException;
import java.net.InetAddress;
import java.net.URI;
import java.net.UnknownHostException;
import java.nio.file.Path;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One worker process's share of a job: {@code threads} fetch threads that claim items one at a
 * time, fetch them through the destination's limiter, store the bodies and record the outcome (a
 * fetched item's with the thread's next claim, in one statement shared with the other threads
 * claiming then), checking the envelope between items; and a heartbeat that extends this worker's
 * leases, reports its figures and watches for a trip recorded by any other worker of the job.
 *
 * <p>While PostgreSQL cannot be reached the worker neither exits nor loses work: pacing degrades to
 * the divided local rate (the library's doing); claims wait and retry; an outcome already fetched
 * is kept (its body is already on disk) and its recording retried until PostgreSQL answers. If
 * the item's lease was taken over meanwhile, the record is refused by its lease token and the
 * item is counted once, by whoever holds it.
 *
 * <p><b>Per host</b> ({@link RunSettings#perHost()}): a claim is the reservation of the item's
 * host's turn ({@link FrontierStore}), and the thread sleeps until that turn, then fetches through
 * the host's own limiter ({@link HostFetchers}). When no host is due the claim says when the next
 * one will be, and the thread sleeps exactly that long (at most {@value #IDLE_POLL_MILLIS} ms while
 * some host is due but held at its in-flight cap, whose end no one can know). Without PostgreSQL
 * nothing can be claimed at all: the threads wait for it as they wait to claim in the single
 * destination mode, items already claimed are fetched at their claimed turns, and their redirect
 * hops pace locally at the divided rate (the library's degraded mode, per host). A host locked out
 * (403) keeps its items pending and is passed over; the other hosts go on, and the run reports it.
 * So is a host over its failure bar ({@link HostOutcomes}), its open items deferred to the next
 * run.
 * With {@code --robots} a fetch thread first settles any host's robots.txt that is due ({@link
 * RobotsReader}); a host's items are claimable only once its robots.txt is settled.
 *
 * <p><b>Connections.</b> A worker holds the work state's ({@link #storeConnections}, the request
 * log's statements among theirs: they are few and short), the cursor's reservation connection and
 * its listener's (each its own, see {@link PostgresCursor} and {@code HoldListener}), and the
 * fleet slots' (the dispatch slot and any fleet cap's slots, see {@link PostgresFleetSlots}); the
 * outage policy's probe connects only at a retry boundary, for a moment. docs/operations.md counts
 * them for sizing {@code max_connections}.
 */
public final class Worker {

  private static final Logger log = LoggerFactory.getLogger(Worker.class);
  private static final long IDLE_POLL_MILLIS = 250;
  private static final Duration STARTUP_CONNECT = Duration.ofSeconds(10);
  private static final long FAILURE_RETRY_MILLIS = 2000;
  private static final Duration RECORD_GIVE_UP = Duration.ofMinutes(10);
  /** Clocks drift apart slowly; once a minute or so keeps the request log's stamps honest. */
  private static final int CALIBRATE_EVERY_BEATS = 60;
  private static final int MAX_STORE_CONNECTIONS = 8;
  /**
   * The line each worker logs as it ends, or is terminated, on the turns its limiters gave up as
   * late, with its two figures: given up, and taken. A fleet's are these summed over its workers.
   */
  public static final String LATE_TURNS = "{} turn(s) given up because this process woke too"
      + " late for them, beside {} turn(s) taken (a busy host slows the run, not the ceiling)";

  /** What this worker did; {@code halted} says why, if the run was halted. */
  public record Result(long requests, long throttled, long done, long failed,
      Optional<HaltReason> halted,
      boolean lockedOut) {}

  private final Database database;
  private final RunSettings settings;
  private final String workerId;
  private final String host;
  private final long pid = ProcessHandle.current().pid();
  private final AtomicBoolean stop = new AtomicBoolean();
  private final AtomicReference<HaltReason> haltedBar = new AtomicReference<>();
  private final AtomicBoolean tripRecorded = new AtomicBoolean();
  private final AtomicBoolean lateTurnsReported = new AtomicBoolean();
  private final AtomicLong done = new AtomicLong();
  private final AtomicLong failed = new AtomicLong();
  /** Lease tokens of the items this worker's threads hold right now. */
  private final Set<String> held = ConcurrentHashMap.newKeySet();
  private final Envelope envelope;
  private final StartLine startLine;
  private final Retrying retrying;
  private WorkState store;
  private RequestLog requestLog;
  private RequestRecorder recorder;
  /** The destination's limiter and fetcher; null in per-host mode. */
  private DestinationLimiter limiter;
  private LimiterRegistry limiters;
  /** What the limiter did, reported with every heartbeat for the run's summary. */
  private final LimiterCounts limiterCounts = new LimiterCounts();
  private DestinationFetcher fetcher;
  /** Per-host mode's fetchers; null otherwise. */
  private HostFetchers hosts;
  /** Per-host mode's failure bar, this process's counts between heartbeats; null otherwise. */
  private HostOutcomes hostOutcomes;
  /** With --robots, the hosts' robots.txt; null otherwise. */
  private RobotsReader robots;
  /** Claims whose turn began more than half an interval before the claim answered. */
  private final AtomicLong lateClaims = new AtomicLong();
  /** What this worker's per-host claims came back with. */
  private final ClaimTally claims = new ClaimTally();
  /** Hosts this process has reported as locked out. */
  private final Set<String> lockedOutHosts = ConcurrentHashMap.newKeySet();
  private BodyStore bodies;
  /** The dispatch slot this worker holds; null before it has one, or if it takes none. */
  private volatile DispatchSlot slot;
  /** Held by the one fetch thread that waits for a dispatch slot again. */
  private final ReentrantLock slotLock = new ReentrantLock();
  private int beats;

  public Worker(Database database, RunSettings settings, Envelope envelope, StartLine startLine) {
    this.database = database;
    this.settings = settings;
    this.envelope = envelope;
    this.startLine = startLine;
    this.host = hostName();
    this.workerId = host + ":" + pid + ":" + UUID.randomUUID().toString().substring(0, 8);
    this.retrying = new Retrying(TimeSource.SYSTEM, RECORD_GIVE_UP, stop::get,
        database::describe, database::connectionAttempts,
        database.outagePolicy()::untilNextAttempt);
  }

  /** Runs until the job has no open item, or the run halts. */
  public Result run() throws InterruptedException {
    store = WorkState.forWorker(database,
        storeConnections(settings.threads(), settings.perHost()));
    Cursor cursor = settings.perProcessPacing()
        ? new LocalCursor()
        : database.cursor(resetBeyond(settings.destination()));
    // At start-up a slow first connection costs nothing; left to the first reservation, it
    // would degrade this worker until the next retry boundary. The work-state connection goes
    // first: its bound is wider than the cursor's, and it loads the driver in a cold JVM. It also
    // names a URL of the job, so the HTTP client's warm-up can prepare for that destination.
    Optional<String> sampleUrl = Optional.empty();
    try {
      sampleUrl = store.items().nextOpenUrl(settings.job());
    } catch (SQLException e) {
      log.debug("Work state not reachable at start-up: {}", database.describe(e));
    }
    if (cursor instanceof PostgresCursor pg) {
      pg.connect(STARTUP_CONNECT);
    }
    requestLog = store.requestLog();
    recorder = new RequestRecorder(requestLog,
        settings.perHost() ? null : settings.destination().name(), settings.job(), workerId);
    try {
      recorder.calibrate();
    } catch (SQLException e) {
      log.debug("Could not read the database clock at start-up: {}", database.describe(e));
    }
    // The fleet cap's slots and the dispatch slot are leases of one kind: one connection, one
    // renewal. A worker that needs neither opens nothing.
    boolean fleetCapped = settings.destination().maxConcurrencyFleetWide().isPresent();
    Optional<PostgresFleetSlots> fleetSlots = fleetCapped || settings.maxDispatches() > 0
        ? Optional.of(database.fleetSlots(workerId)) : Optional.empty();
    if (settings.perHost()) {
      hosts = new HostFetchers(settings, cursor, recorder, limiterCounts, TimeSource.SYSTEM);
      hostOutcomes = new HostOutcomes();
      hosts.warmUp(sampleUrl.map(URI::create).orElse(null));
      if (settings.robots()) {
        robots = new RobotsReader(settings, workerId, hosts, store::robots, retrying);
      }
    } else {
      limiters = fleetCapped ? new LimiterRegistry(cursor, fleetSlots.get())
          : new LimiterRegistry(cursor);
      limiters.addListener(limiterCounts);
      limiter = limiters.limiter(settings.destination());
      fetcher = DestinationFetcher.builder(limiter)
          .maxBodyBytes(settings.maxBodyBytes())
          .requestTimeout(settings.requestTimeout())
          .maxRedirects(settings.maxRedirects())
          .header("User-Agent", RunSettings.USER_AGENT)
          .header("X-Pacer-Worker", Long.toString(pid))
          .onRequest(recorder)
          .build();
      // Before the first turn, never after it: a cold client's first request would otherwise hold
      // its turn (and the turns after it) while classes load, and they would leave together.
      if (sampleUrl.isPresent()) {
        fetcher.warmUp(URI.create(sampleUrl.get()));
      } else {
        fetcher.warmUp();
      }
    }
    // Every fetch thread claims at the start line: the connections they will claim on are opened
    // before it, not beside the first turns.
    try {
      store.openConnections();
    } catch (SQLException e) {
      log.debug("Could not open every work-state connection at start-up: {}",
          database.describe(e));
    }
    bodies = new BodyStore(settings.out(), settings.job());
    startLine.await();

    ScheduledExecutorService heartbeat = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "pacer-heartbeat");
      t.setDaemon(true);
      return t;
    });
    // Terminated (SIGTERM, Ctrl-C) rather than finished: give the items back at once instead of
    // letting their leases run out. A fetch that completes meanwhile is refused by its lease token
    // and fetched again later: never counted twice.
    Thread releaseOnExit = new Thread(this::releaseOnShutdown, "pacer-release");
    Runtime.getRuntime().addShutdownHook(releaseOnExit);
    try {
      if (settings.maxDispatches() > 0) {
        Optional<DispatchSlot> taken = DispatchSlot.acquire(fleetSlots.get(),
            settings.destination().name(), settings.maxDispatches(), this::nothingLeft);
        if (taken.isEmpty()) {
          log.info("Job {} has no work left; this worker is not needed", settings.job());
          return result();
        }
        slot = taken.get();
      }
      long beat = Math.max(200, Math.min(1000, settings.leaseMillis() / 3));
      scheduleHeartbeat(heartbeat, this::heartbeat, beat);
      List<Thread> threads = new ArrayList<>();
      for (int i = 0; i < settings.threads(); i++) {
        Thread t = new Thread(this::fetchLoop, "pacer-fetch-" + (i + 1));
        threads.add(t);
        t.start();
      }
      try {
        for (Thread t : threads) {
          t.join();
        }
      } catch (InterruptedException e) {
        stop.set(true);
        threads.forEach(Thread::interrupt);
        throw e;
      }
      return result();
    } finally {
      try {
        Runtime.getRuntime().removeShutdownHook(releaseOnExit);
      } catch (IllegalStateException shuttingDown) {
        // The hook is running or about to: it gives the items back.
      }
      heartbeat.shutdownNow();
      heartbeat.awaitTermination(5, TimeUnit.SECONDS);
      retrying.call("record the requests sent", () -> {
        recorder.flush();
        return true;
      }, false);
      if (hostOutcomes != null) {
        countHostItems();
      }
      report(haltedBar.get() != null ? "halted" : "finished");
      if (hosts != null && !settings.fifoClaims()) {
        log.info(claims.describe());
      }
      if (lateClaims.get() > 0) {
        log.info("{} claimed turn(s) began more than half an interval before their claim answered"
            + " (a slow or busy database) and were given up for fresh ones", lateClaims.get());
      }
      reportLateTurns();
      DispatchSlot held = slot;
      if (held != null) {
        held.close();
      }
      if (cursor instanceof PostgresCursor pg) {
        pg.close();
      }
      fleetSlots.ifPresent(PostgresFleetSlots::close);
      store.close();
    }
  }

  /**
   * The work-state connections a worker may open. With one destination, two: the fetch threads'
   * claims and records are statements shared by every thread waiting ({@link
   * ItemStore#recordAndClaim}), one at a time, and the other connection serves the rest (a failure
   * or a throttle recorded, an item released, the heartbeat, the request log's appends). Per host
   * each claim is a round trip of its own ({@link FrontierStore}): one for every two fetch
   * threads, up to 8, since each thread spends a round trip claiming and one recording around
   * every request, so half the threads at once is the most that can want one; beyond 8, two
   * cores' worth of PostgreSQL backends only take turns. They are opened before the start line
   * (see {@code StoreConnection#openAll}).
   */
  static int storeConnections(int threads, boolean perHost) {
    return perHost ? Math.max(1, Math.min(MAX_STORE_CONNECTIONS, threads / 2)) : 2;
  }

  /**
   * A stored cursor further ahead than this is reset rather than waited for: twice the
   * destination's {@linkplain Destination#longestHonestQueue() longest honest queue}, and at least
   * two minutes. The library's default bound, an hour, would stall a run for up to an hour.
   */
  static Duration resetBeyond(Destination d) {
    Duration queue = d.longestHonestQueue();
    return (queue.compareTo(Duration.ofMinutes(1)) < 0 ? Duration.ofMinutes(1) : queue)
        .multipliedBy(2);
  }

  private Result result() {
    return new Result(requestCount(), throttledCount(), done.get(), failed.get(),
        Optional.ofNullable(haltedBar.get()), hosts == null && limiter.isLockedOut());
  }

  private long requestCount() {
    return hosts != null ? hosts.requestCount() : fetcher.requestCount();
  }

  private LimiterFigures limiterFigures() {
    return hosts != null
        ? limiterCounts.figures(hosts.widestBackoff(), hosts.anyDegraded(), hosts.isCursorLatched())
        : limiterCounts.figures(limiter.backoffMultiplier(), limiter.isDegraded(),
            limiters.isCursorLatched());
  }

  private long throttledCount() {
    return hosts != null ? hosts.throttledCount() : fetcher.throttledCount();
  }

  /**
   * A fetch thread: one item after another until the job or the run ends. Whatever an item throws,
   * an {@link Error} included, ends that item, not the thread: a thread that died would leave its
   * share of the job undone with nothing said.
   */
  private void fetchLoop() {
    Unrecorded unrecorded = new Unrecorded();
    try {
      while (!stop.get()) {
        try {
          if (!nextItem(unrecorded)) {
            return;
          }
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return;
        } catch (Throwable t) {
          log.error("Fetch thread {} met an unexpected error and goes on with the next item (an"
              + " item it held returns to the job when its lease lapses)",
              Thread.currentThread().getName(), t);
          try {
            Thread.sleep(IDLE_POLL_MILLIS);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return;
          }
        }
      }
    } finally {
      if (unrecorded.done != null && !Thread.currentThread().isInterrupted()) {
        try {
          record(unrecorded.done);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
    }
  }

  /**
   * A fetch thread's last fetched item whose outcome is still to be recorded (single destination):
   * its next claim records it in the same statement ({@link ItemStore#recordAndClaim}). Its lease
   * token stays among those the heartbeat extends until then.
   */
  private static final class Unrecorded {
    private ItemStore.Done done;
  }

  /**
   * Checks the envelope, then claims and processes one item, recording the thread's last outcome
   * with the claim. False when the thread is done; an outcome still unrecorded is then recorded on
   * its own.
   */
  private boolean nextItem(Unrecorded unrecorded) throws InterruptedException {
    // In per-host mode a lockout stops its host, not the run: the claims pass over it.
    Optional<Envelope.Breach> breach = hosts != null ? envelope.checkBars()
        : envelope.check(limiter);
    if (breach.isPresent()) {
      halt(breach.get());
      return false;
    }
    if (hosts != null && !settings.fifoClaims()) {
      return (robots != null && robots.settleNext()) || nextClaim();
    }
    ItemStore.Done done = unrecorded.done;
    // One token for every attempt: an attempt whose answer was lost leased under it, and the next
    // answers that item instead of leasing another.
    String claimToken = ItemStore.newLeaseToken();
    // With an outcome to record, the call is not given up when the run stops: the outcome is worth
    // waiting for, as on its own.
    Retrying.Attempt<ItemStore.RecordedAndClaimed> claimed = retrying.call(
        done == null ? "claim an item" : "record a fetched item",
        () -> store.items().recordAndClaim(settings.job(), done, workerId, claimToken,
            settings.leaseMillis()),
        done == null);
    if (done != null) {
      unrecorded.done = null;
      recorded(done, claimed instanceof Retrying.Attempt.Answered<ItemStore.RecordedAndClaimed> a
          ? (a.value().recorded() ? Retrying.Recorded.RECORDED : Retrying.Recorded.LEASE_LOST)
          : Retrying.Recorded.GAVE_UP);
    }
    if (!(claimed instanceof Retrying.Attempt.Answered<ItemStore.RecordedAndClaimed> answered)) {
      // Stopped while PostgreSQL was away; or an outcome given up on, and the thread claims again.
      return done != null;
    }
    Optional<ItemStore.Item> item = answered.value().next();
    if (item.isEmpty()) {
      if (nothingLeft()) {
        return false;
      }
      Thread.sleep(IDLE_POLL_MILLIS);
      return true;
    }
    if (!holdsDispatchSlot()) {
      retrying.record("release an item", () -> store.items().release(item.get()));
      return takeDispatchSlotAgain();
    }
    held.add(item.get().token());
    try {
      unrecorded.done = process(item.get(), () -> hosts == null ? fetcher : hosts.forHost(
          UrlList.hostOf(item.get().url()), settings.destination().ratePerSecond())).orElse(null);
    } finally {
      if (unrecorded.done == null) {
        held.remove(item.get().token());
      }
    }
    return true;
  }

  /**
   * Per-host mode: one claim, which reserves its host's turn, then the item at that turn; or the
   * sleep until the next host's turn. False when the thread is done.
   */
  private boolean nextClaim() throws InterruptedException {
    Retrying.Attempt<FrontierStore.Claim> claimed = retrying.call("claim an item",
        () -> store.frontier().claim(settings.job(), workerId,
            workerId + "/" + Thread.currentThread().getName(), settings.leaseMillis()), true);
    if (!(claimed instanceof Retrying.Attempt.Answered<FrontierStore.Claim> answered)) {
      return false; // stopped while PostgreSQL was away
    }
    FrontierStore.Claim claim = answered.value();
    claims.count(claim);
    if (claim instanceof FrontierStore.Claim.Claimed c) {
      if (!holdsDispatchSlot()) {
        retrying.record("release an item", () -> store.items().release(c.item()));
        return takeDispatchSlotAgain();
      }
      if (stop.get()) {
        retrying.record("release an item", () -> store.items().release(c.item()));
        return false;
      }
      held.add(c.item().token());
      try {
        Optional<ItemStore.Done> fetched = process(c.item(), () -> atClaimedTurn(c));
        if (fetched.isPresent()) {
          record(fetched.get());
        }
      } finally {
        held.remove(c.item().token());
        hosts.turns().forget();
      }
    } else if (claim instanceof FrontierStore.Claim.Idle idle) {
      if (idle.wake().isEmpty() && !idle.held() && nothingLeft()) {
        return false;
      }
      long sleep = idle.wake().map(Duration::toNanos)
          .orElse(TimeUnit.MILLISECONDS.toNanos(IDLE_POLL_MILLIS));
      if (idle.held()) {
        sleep = Math.min(sleep, TimeUnit.MILLISECONDS.toNanos(IDLE_POLL_MILLIS));
      }
      TimeUnit.NANOSECONDS.sleep(sleep);
    } else if (claim instanceof FrontierStore.Claim.LockedOut l) {
      if (lockedOutHosts.add(l.host())) {
        log.error("Host {} is locked out ({}): its items stay pending and are passed over; the"
            + " other hosts go on. Acknowledge it with: pacer trips ack --destination {} --note"
            + " TEXT", l.host(), l.reason(), l.host());
      }
    }
    // Refused (the host's copy of its cursor is healed) and Lost (another claim leased the item
    // first): claim again at once.
    return true;
  }

  /**
   * The fetcher of a claimed item's host, its first request to go at the turn the claim reserved.
   * A turn the claim answered too late for (the library's bound: half the interval, at least 1 ms)
   * is given up, as the limiter gives up one it woke too late for: the host's limiter then reserves
   * a fresh turn on the host's cursor row instead.
   */
  private DestinationFetcher atClaimedTurn(FrontierStore.Claim.Claimed c) {
    DestinationFetcher hostFetcher = hosts.forHost(c.host(), c.rate());
    Duration late = c.turnIn().negated();
    if (late.compareTo(hostFetcher.limiter().currentInterval().dividedBy(2)) <= 0
        || late.toNanos() <= 1_000_000) {
      hosts.turns().prepay(c.host(), c.turnIn(), hostFetcher.limiter().destination().interval(),
          c.backoff());
    } else {
      lateClaims.incrementAndGet();
    }
    return hostFetcher;
  }

  /**
   * Fetches a claimed item through the fetcher {@code fetcherOf} makes, and stores its body. Every
   * outcome but a fetched body is recorded here; a fetched body's is answered, for the caller to
   * record (alone, or with its next claim). Whatever throws on the way, from making the fetcher
   * (a host name or a ceiling no destination may have) to storing the body, fails the item with
   * the reason, as an ordinary failure: left to its lease, the item would be claimed again after
   * every lapse, and throw again, for ever.
   */
  private Optional<ItemStore.Done> process(ItemStore.Item item,
      Supplier<DestinationFetcher> fetcherOf) throws InterruptedException {
    if (stop.get()) {
      retrying.record("release an item", () -> store.items().release(item));
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
      response = fetcher.fetchTo(URI.create(item.url()), part);
    } catch (ThrottledException e) {
      bodies.discard(part);
      long retry = Math.max(1000,
          fetcher.limiter().currentInterval().multipliedBy(4).toMillis());
      retrying.record("record a throttled item",
          () -> store.items().markThrottled(item, e.status(), retry, settings.maxThrottles()));
      return Optional.empty();
    } catch (LockedOutException e) {
      bodies.discard(part);
      // Not an attempt: the item goes back untouched; the next envelope check halts the run.
      retrying.record("release an item", () -> store.items().release(item));
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
    Path path;
    try {
      path = bodies.commit(item, part);
    } catch (IOException e) {
      count(item, ItemOutcome.OWN_FAILURE, null, null);
      fail(item, response.status(), "could not store the body: " + e);
      return Optional.empty();
    }
    count(item, ItemOutcome.ANSWERED, fetcher, null);
    return Optional.of(new ItemStore.Done(item, response.status(), path.toString(),
        response.bodyBytes()));
  }

  /**
   * Counts an item against its failure bars at its first attempt, and never again: an item counts
   * once however many attempts it takes (one whose first attempt failed counts as failed, even if
   * a later one is done). A throttled attempt is not counted at all. With one destination the
   * run's bar ({@link Envelope}) counts every failure; per host, the host's bar ({@link
   * HostOutcomes}) counts what its host answered, through {@code fetcher} ({@code failure} its
   * message), and the run's only what this process failed.
   */
  private void count(ItemStore.Item item, ItemOutcome outcome, DestinationFetcher fetcher,
      String failure) {
    if (item.failures() > 0) {
      return;
    }
    if (hostOutcomes == null) {
      envelope.recordOutcome(outcome != ItemOutcome.ANSWERED);
      return;
    }
    envelope.recordOutcome(outcome == ItemOutcome.OWN_FAILURE);
    if (outcome != ItemOutcome.OWN_FAILURE) {
      hostOutcomes.count(fetcher.limiter().destination().name(),
          outcome == ItemOutcome.UNANSWERED, failure);
    }
  }

  /** Records a fetched item's outcome on its own. */
  private void record(ItemStore.Done fetched) throws InterruptedException {
    recorded(fetched, retrying.record("record a fetched item",
        () -> store.items().markDone(fetched)));
  }

  /** Counts a fetched item's outcome as recorded, or not; its lease is no longer extended. */
  private void recorded(ItemStore.Done fetched, Retrying.Recorded recorded) {
    held.remove(fetched.item().token());
    switch (recorded) {
      case RECORDED -> done.incrementAndGet();
      case LEASE_LOST -> log.warn("Lease on {} was lost before it could be recorded; its current"
          + " holder records it", fetched.item().url());
      case GAVE_UP -> { } // the lease lapses and the item is fetched again
    }
  }

  private void fail(ItemStore.Item item, Integer status, String error) throws InterruptedException {
    Retrying.Recorded recorded = retrying.record("record a failed item",
        () -> store.items().markFailed(item, status, error, FAILURE_RETRY_MILLIS,
            settings.maxAttempts()));
    if (recorded == Retrying.Recorded.RECORDED && item.failures() + 1 >= settings.maxAttempts()) {
      failed.incrementAndGet();
    }
    log.debug("Fetch failed for {}: {}", item.url(), error);
  }

  private void halt(Envelope.Breach breach) {
    if (!haltedBar.compareAndSet(null, breach.bar())) {
      return;
    }
    stop.set(true);
    if (tripRecorded.compareAndSet(false, true)) {
      try {
        String key = UUID.randomUUID().toString();
        Retrying.Attempt<Long> trip = retrying.call("record the trip", () -> store.trips()
            .recordTrip(key, settings.job(), breach.bar(), breach.figures(), host, pid), false);
        if (trip instanceof Retrying.Attempt.Answered<Long> recorded) {
          log.error("Envelope breached: {} ({}). Halting job {}: no new items are taken, items in"
                  + " flight finish. Trip #{} refuses new runs of this job until: pacer trips ack"
                  + " {} --note TEXT", breach.bar(), breach.figures(), settings.job(),
              recorded.value(), recorded.value());
        } else {
          log.error("Envelope breached: {} ({}). Halting job {}: no new items are taken, items in"
              + " flight finish. The trip could not be recorded: other workers of the job are not"
              + " halted by it", breach.bar(), breach.figures(), settings.job());
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }

  private void releaseOnShutdown() {
    stop.set(true);
    try {
      int released = store.items().releaseAll(workerId);
      log.info("Terminated: gave {} leased item(s) back to job {}", released, settings.job());
      report("terminated");
    } catch (SQLException | RuntimeException e) {
      log.warn("Terminated: could not give leased items back ({}); their leases expire in {} s",
          e.getMessage(), settings.leaseMillis() / 1000);
    }
    reportLateTurns();
    // A waiting worker takes the slot now rather than when its lease runs out.
    DispatchSlot held = slot;
    if (held != null) {
      held.close();
    }
  }

  /**
   * Whether this worker may fetch the item it has just claimed: it holds its dispatch slot (or
   * takes none). A slot whose lease could not be renewed for a whole lease (an outage) may be
   * another worker's by now.
   */
  private boolean holdsDispatchSlot() {
    DispatchSlot current = slot;
    return current == null || current.isHeld();
  }

  /**
   * Waits for a dispatch slot again, as at the start of the run, after the one this worker held
   * was lost; meanwhile this worker fetches nothing new, so the cap on fetching runners holds
   * however the slots are taken again. One fetch thread waits, the others queue behind it and
   * find the slot it took. False once the wait is given up: the run stops, or the job has no work
   * left. Never asked of the heartbeat, which goes on extending the leases of the items in flight.
   */
  private boolean takeDispatchSlotAgain() throws InterruptedException {
    slotLock.lockInterruptibly();
    try {
      DispatchSlot lost = slot;
      if (lost.isHeld()) {
        return true;
      }
      if (stop.get()) {
        return false;
      }
      log.info("Lost the dispatch slot of destination {} (its lease was not renewed in time); this"
          + " worker takes no new item until it holds one again", settings.destination().name());
      Optional<DispatchSlot> again = lost.takeAgain(settings.destination().name(),
          settings.maxDispatches(), () -> stop.get() || nothingLeft());
      if (again.isEmpty()) {
        return false;
      }
      slot = again.get();
      return true;
    } finally {
      slotLock.unlock();
    }
  }

  /**
   * Schedules the heartbeat so that nothing it throws, an {@link Error} included, ends it: a
   * scheduled task that throws is never run again, and this worker's leases would lapse unsaid.
   */
  static void scheduleHeartbeat(ScheduledExecutorService executor, Runnable beat,
      long periodMillis) {
    executor.scheduleWithFixedDelay(() -> {
      try {
        beat.run();
      } catch (Throwable t) {
        log.error("Heartbeat failed; it beats again in {} ms", periodMillis, t);
      }
    }, 0, periodMillis, TimeUnit.MILLISECONDS);
  }

  /**
   * Heartbeat: leases, figures, and trips recorded elsewhere; per host, the hosts idle for a minute
   * forgotten ({@link HostFetchers#evictIdle}). Never throws.
   */
  private void heartbeat() {
    beats++;
    try {
      store.items().extendLeases(workerId, List.copyOf(held), settings.leaseMillis());
      if (robots != null && robots.reading()) {
        store.robots().extendLeases(settings.job(), workerId, settings.leaseMillis());
      }
      if (hosts != null) {
        int evicted = hosts.evictIdle();
        if (evicted > 0) {
          log.debug("Forgot {} host(s) idle for {} s; {} fetcher(s) held", evicted,
              HostFetchers.IDLE.toSeconds(), hosts.fetchersHeld());
        }
        store.frontier().retireDrainedHosts(settings.job());
        countHostItems();
        Map<String, Integer> clean = hosts.turns().drainCleanAnswers();
        try {
          store.frontier().countCleanAnswers(clean);
        } catch (SQLException e) {
          // Not counted is only slower to recover from a backoff; they are not kept.
          log.debug("Could not count {} host(s)' clean answers: {}", clean.size(),
              database.describe(e));
        }
      }
      report(stop.get() ? "stopping" : "running");
      if (!stop.get()) {
        Optional<TripStore.Trip> trip = store.trips().openTrip(settings.job());
        if (trip.isPresent() && haltedBar.compareAndSet(null, trip.get().bar())) {
          log.error("Job {} was halted by trip #{} ({}: {}) on {} pid {}; stopping",
              settings.job(), trip.get().id(), trip.get().bar(), trip.get().figures(),
              trip.get().host(), trip.get().pid());
          stop.set(true);
        }
      }
    } catch (SQLException e) {
      log.debug("Heartbeat could not reach PostgreSQL: {}", database.describe(e));
    } catch (RuntimeException e) {
      log.warn("Heartbeat failed", e);
    }
    try {
      if (beats % CALIBRATE_EVERY_BEATS == 0) {
        recorder.calibrate();
      }
      recorder.flush();
    } catch (SQLException e) {
      log.debug("Could not append to the request log: {}", database.describe(e));
    } catch (RuntimeException e) {
      log.warn("Appending to the request log failed", e);
    }
  }

  /**
   * Adds the items this process counted per host to the hosts' failure bars, and logs the hosts
   * that this passes over. Counts that could not be added go with the next heartbeat; those whose
   * answer was lost may have been added, and are not added again: a bar may count too few, never
   * an item twice.
   */
  private void countHostItems() {
    Map<String, FrontierStore.HostItems> counted = hostOutcomes.drain();
    try {
      for (FrontierStore.PassedOver p : store.frontier().countItems(settings.job(), counted,
          Envelope.FAILURE_WINDOW, Envelope.MAX_FAILURES)) {
        log.warn("Host {} is passed over: {}. Its open items are deferred to the next run of job"
            + " {}; the other hosts go on", p.host(), p.reason(), settings.job());
      }
    } catch (SQLException e) {
      if (KeptConnection.isOutcomeUnknown(e)) {
        log.debug("The items of {} host(s) may or may not have been counted against their failure"
            + " bars (the answer was lost); they are not counted again: {}", counted.size(),
            database.describe(e));
        return;
      }
      hostOutcomes.putBack(counted);
      log.debug("Could not count {} host(s)' items against their failure bars: {}",
          counted.size(), database.describe(e));
    }
  }

  private void report(String state) {
    try {
      store.workers().upsertWorker(new WorkerStore.WorkerRow(workerId, settings.runId(), settings.job(),
          settings.destination().name(), host, pid, state, requestCount(),
          hosts != null ? hosts.rate() : limiter.currentRate(), limiterFigures()));
    } catch (SQLException e) {
      log.debug("Could not report worker state: {}", database.describe(e));
    }
  }

  /**
   * Logs {@link #LATE_TURNS} once, even when no turn was given up: whoever judges the fleet's late
   * turns sums every worker's. Once, though a run terminated as it ends reaches both of its ends.
   */
  private void reportLateTurns() {
    if (lateTurnsReported.compareAndSet(false, true)) {
      log.info(LATE_TURNS, limiterCounts.lateTurnsSkipped(), limiterFigures().turns());
    }
  }

  private boolean nothingLeft() {
    try {
      return hosts != null ? !store.frontier().hasClaimableWork(settings.job(), settings.robots())
          : !store.items().hasOpenItems(settings.job());
    } catch (SQLException e) {
      return false;
    }
  }

  private static String hostName() {
    try {
      return InetAddress.getLocalHost().getHostName();
    } catch (UnknownHostException e) {
      return "unknown-host";
    }
  }
}
