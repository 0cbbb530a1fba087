package dev.pacer.cli.run;

import dev.pacer.Destination;
import dev.pacer.LocalCursor;
import dev.pacer.TimeSource;
import dev.pacer.cli.db.Database;
import dev.pacer.cli.db.FrontierStore;
import dev.pacer.cli.db.ItemStore;
import dev.pacer.cli.db.TripStore;
import dev.pacer.cli.db.WorkState;
import dev.pacer.cli.db.WorkerStore;
import dev.pacer.cli.model.HaltReason;
import dev.pacer.postgres.PostgresCursor;
import dev.pacer.postgres.PostgresFleetSlots;
import dev.pacer.spi.Cursor;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
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
 * the divided local rate (the library's doing); the fetch threads go on fetching the items the
 * worker leased ahead ({@link LeasedAhead}; per host, spread over the hosts); outcomes already
 * fetched are kept (their bodies are already on disk) and recorded when PostgreSQL answers. If an
 * item's lease was taken over meanwhile, the record is refused by its lease token and the item is
 * counted once, by whoever holds it.
 *
 * <p>What the threads claim and what fetches it depends on the mode, one {@link WorkSource} each:
 * {@link SingleDestination}, and {@link PerHostFrontier} ({@link RunSettings#perHost()}), where a
 * claim is the reservation of the item's host's turn. Without PostgreSQL nothing can be claimed in
 * either: items already claimed are fetched, and then the buffer leased ahead, their requests paced
 * locally at the divided rate (the library's degraded mode, per host its host's), and then the
 * threads wait for it.
 *
 * <p><b>Connections.</b> A worker holds the work state's ({@link #storeConnections}, the request
 * log's statements among theirs: they are few and short), the cursor's reservation connection and
 * its listener's (each its own, see {@link PostgresCursor} and {@code HoldListener}), and the fleet
 * slots' (the dispatch slot and any fleet cap's slots, see {@link PostgresFleetSlots}); the outage
 * policy's probe connects only at a retry boundary, for a moment. docs/operations.md counts them
 * for sizing {@code max_connections}.
 */
public final class Worker {

  private static final Logger log = LoggerFactory.getLogger(Worker.class);

  /** The longest a fetch thread sleeps before it claims again, when nothing says how long. */
  static final long IDLE_POLL_MILLIS = 250;

  private static final Duration STARTUP_CONNECT = Duration.ofSeconds(10);
  private static final Duration RECORD_GIVE_UP = Duration.ofMinutes(10);

  /** Clocks drift apart slowly; once a minute or so keeps the request log's stamps honest. */
  private static final int CALIBRATE_EVERY_BEATS = 60;

  private static final int MAX_STORE_CONNECTIONS = 8;

  /**
   * The line each worker logs as it ends, or is terminated, on the turns its limiters gave up as
   * late, with its two figures: given up, and taken. A fleet's are these summed over its workers.
   */
  public static final String LATE_TURNS =
      "{} turn(s) given up because this process woke too late for them, beside {} turn(s) taken;"
          + " the process itself ran more than {} ms late {} time(s), at most {} ms, which may cost"
          + " up to {} turn(s) (a busy host slows the run, not the ceiling)";

  /** What this worker did; {@code halted} says why, if the run was halted. */
  public record Result(
      long requests,
      long throttled,
      long done,
      long failed,
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
  private final Envelope envelope;
  private final StartLine startLine;
  private final Retrying retrying;
  private WorkState store;
  private RequestRecorder recorder;

  /** Stalls of this process, which cost turns however the worker is built. */
  private final ProcessStalls stalls;

  /** What the limiters did, reported with every heartbeat for the run's summary. */
  private final LimiterCounts limiterCounts = new LimiterCounts();

  /** The mode's items and fetchers. */
  private WorkSource source;

  private DispatchGate gate;

  /** Where the bodies go, and the points that make them durable in groups. */
  private DurablePoints durable;

  /** The fleet cap's slots and the dispatch slot's, if the run has either. */
  private Optional<PostgresFleetSlots> fleetSlots = Optional.empty();

  private int beats;

  public Worker(Database database, RunSettings settings, Envelope envelope, StartLine startLine) {
    this.database = database;
    this.settings = settings;
    this.envelope = envelope;
    this.startLine = startLine;
    this.host = hostName();
    this.workerId = host + ":" + pid + ":" + UUID.randomUUID().toString().substring(0, 8);
    this.stalls = new ProcessStalls(settings.destination().interval(), settings.threads());
    this.retrying =
        new Retrying(
            TimeSource.SYSTEM,
            RECORD_GIVE_UP,
            stop::get,
            database::describe,
            database::connectionAttempts,
            database.outagePolicy()::untilNextAttempt);
  }

  /** Runs until the job has no open item, or the run halts. */
  public Result run() throws InterruptedException {
    store = WorkState.forWorker(database, storeConnections(settings.threads(), settings.perHost()));
    Cursor cursor =
        settings.perProcessPacing()
            ? new LocalCursor()
            : database.cursor(resetBeyond(settings.destination()));
    source = prepare(cursor);
    startLine.await();
    stalls.start();
    try {
      return fetch();
    } finally {
      stalls.close();
      gate.close();
      if (cursor instanceof PostgresCursor pg) {
        pg.close();
      }
      fleetSlots.ifPresent(PostgresFleetSlots::close);
      store.close();
    }
  }

  /**
   * Connects, and makes the mode's work source with its fetchers warmed up: everything a fetch
   * thread needs before the start line.
   */
  private WorkSource prepare(Cursor cursor) throws InterruptedException {
    // At start-up a slow first connection costs nothing; left to the first reservation, it
    // would degrade this worker until the next retry boundary. The work-state connection goes
    // first: its bound is wider than the cursor's, and it loads the driver in a cold JVM. It also
    // names a URL of the job, so the HTTP client's warm-up can prepare for that destination.
    Optional<String> sampleUrl = sampleUrl();
    if (cursor instanceof PostgresCursor pg) {
      pg.connect(STARTUP_CONNECT);
    }
    recorder =
        new RequestRecorder(
            store.requestLog(),
            settings.perHost() ? null : settings.destination().name(),
            settings.job(),
            workerId);
    try {
      recorder.calibrate();
    } catch (SQLException e) {
      log.debug("Could not read the database clock at start-up: {}", database.describe(e));
    }
    // The fleet cap's slots and the dispatch slot are leases of one kind: one connection, one
    // renewal. A worker that needs neither opens nothing.
    boolean fleetCapped = settings.destination().maxConcurrencyFleetWide().isPresent();
    fleetSlots =
        fleetCapped || settings.maxDispatches() > 0
            ? Optional.of(database.fleetSlots(workerId))
            : Optional.empty();
    WorkerContext context = new WorkerContext(database, settings, workerId, store, retrying, stop);
    gate = new DispatchGate(context);
    WorkSource made = workSource(context, cursor, fleetCapped, sampleUrl);
    // Every fetch thread claims at the start line: the connections they will claim on are opened
    // before it, not beside the first turns.
    try {
      store.openConnections();
    } catch (SQLException e) {
      log.debug("Could not open every work-state connection at start-up: {}", database.describe(e));
    }
    return made;
  }

  /** A URL of the job, if the work state answers at start-up. */
  private Optional<String> sampleUrl() {
    try {
      return store.items().nextOpenUrl(settings.job());
    } catch (SQLException e) {
      log.debug("Work state not reachable at start-up: {}", database.describe(e));
      return Optional.empty();
    }
  }

  /** The mode's work source, with the store its bodies are written to. */
  private WorkSource workSource(
      WorkerContext context, Cursor cursor, boolean fleetCapped, Optional<String> sampleUrl)
      throws InterruptedException {
    Bodies bodies =
        settings.warc().isPresent()
            ? new WarcBodies(settings.warc().get(), settings.fsyncEach())
            : new BodyStore(settings.out(), settings.job(), settings.fsyncEach());
    durable = new DurablePoints(context, bodies);
    return settings.perHost()
        ? new PerHostFrontier(
            context, envelope, durable, gate, cursor, limiterCounts, recorder, sampleUrl)
        : new SingleDestination(
            context,
            envelope,
            durable,
            gate,
            cursor,
            fleetCapped ? fleetSlots : Optional.empty(),
            limiterCounts,
            recorder,
            sampleUrl);
  }

  /**
   * From the start line: takes the dispatch slot if the run caps them, then runs the heartbeat and
   * the fetch threads until they are done, and reports.
   */
  private Result fetch() throws InterruptedException {
    ScheduledExecutorService heartbeat =
        Executors.newSingleThreadScheduledExecutor(
            r -> {
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
        Optional<DispatchSlot> taken =
            DispatchSlot.acquire(
                fleetSlots.get(),
                settings.destination().name(),
                settings.maxDispatches(),
                source::nothingLeft);
        if (taken.isEmpty()) {
          log.info("Job {} has no work left; this worker is not needed", settings.job());
          return result();
        }
        gate.hold(taken.get());
      }
      scheduleHeartbeat(heartbeat, this::heartbeat, heartbeatMillis(settings.leaseMillis()));
      durable.start();
      runFetchThreads();
      return result();
    } finally {
      try {
        Runtime.getRuntime().removeShutdownHook(releaseOnExit);
      } catch (IllegalStateException shuttingDown) {
        // The hook is running or about to: it gives the items back.
      }
      heartbeat.shutdownNow();
      heartbeat.awaitTermination(5, TimeUnit.SECONDS);
      finish();
    }
  }

  /** Starts the fetch threads and waits for them; interrupted, interrupts them. */
  private void runFetchThreads() throws InterruptedException {
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
  }

  /** The run's last records and reports, once the threads and the heartbeat have stopped. */
  private void finish() throws InterruptedException {
    durable.close();
    retrying.call(
        "record the requests sent",
        () -> {
          recorder.flush();
          return true;
        },
        false);
    source.countAtEnd();
    report(haltedBar.get() != null ? "halted" : "finished");
    source.logClaims();
    reportLateTurns();
  }

  /** How often the heartbeat beats: a third of a lease, within 0.2 to 1 s. */
  static long heartbeatMillis(long leaseMillis) {
    return Math.max(200, Math.min(1000, leaseMillis / 3));
  }

  /**
   * The work-state connections a worker may open. With one destination, two: the fetch threads'
   * claims and records are statements shared by every thread waiting ({@link
   * ItemStore#recordAndClaim}), one at a time, and the other connection serves the rest (a failure
   * or a throttle recorded, an item released, the heartbeat, the request log's appends). Per host
   * each claim is a round trip of its own ({@link FrontierStore}): one for every two fetch threads,
   * up to 8, since each thread spends a round trip claiming and one recording around every request,
   * so half the threads at once is the most that can want one; beyond 8, two cores' worth of
   * PostgreSQL backends only take turns. They are opened before the start line (see {@code
   * StoreConnection#openAll}).
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

  /**
   * A fetch thread: one item after another until the job or the run ends. Whatever an item throws,
   * an {@link Error} included, ends that item, not the thread: a thread that died would leave its
   * share of the job undone with nothing said.
   */
  private void fetchLoop() {
    ThreadClaims claims = new ThreadClaims();
    try {
      while (!stop.get()) {
        try {
          if (!nextItem(claims)) {
            return;
          }
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return;
        } catch (Throwable t) {
          log.error(
              "Fetch thread {} met an unexpected error and goes on with the next item (an"
                  + " item it held returns to the job when its lease lapses)",
              Thread.currentThread().getName(),
              t);
          try {
            Thread.sleep(IDLE_POLL_MILLIS);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return;
          }
        }
      }
    } finally {
      if (!Thread.currentThread().isInterrupted()) {
        try {
          source.threadEnds();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        } catch (RuntimeException e) {
          log.error("Fetch thread {} could not finish", Thread.currentThread().getName(), e);
        }
      }
    }
  }

  /**
   * Checks the envelope, then takes the next step of the source: claims and processes one item, or
   * waits for one. False when the thread is done.
   */
  private boolean nextItem(ThreadClaims claims) throws InterruptedException {
    Optional<Envelope.Breach> breach = source.breach();
    if (breach.isPresent()) {
      halt(breach.get());
      return false;
    }
    return source.next(claims);
  }

  private Result result() {
    return new Result(
        source.requestCount(),
        source.throttledCount(),
        source.work().done(),
        source.work().failed(),
        Optional.ofNullable(haltedBar.get()),
        source.lockedOut());
  }

  private void halt(Envelope.Breach breach) {
    if (!haltedBar.compareAndSet(null, breach.bar())) {
      return;
    }
    stop.set(true);
    if (tripRecorded.compareAndSet(false, true)) {
      try {
        String key = UUID.randomUUID().toString();
        Retrying.Attempt<Long> trip =
            retrying.call(
                "record the trip",
                () ->
                    store
                        .trips()
                        .recordTrip(key, settings.job(), breach.bar(), breach.figures(), host, pid),
                false);
        if (trip instanceof Retrying.Attempt.Answered<Long> recorded) {
          log.error(
              "Envelope breached: {} ({}). Halting job {}: no new items are taken, items in"
                  + " flight finish. Trip #{} refuses new runs of this job until: pacer trips ack"
                  + " {} --note TEXT",
              breach.bar(),
              breach.figures(),
              settings.job(),
              recorded.value(),
              recorded.value());
        } else {
          log.error(
              "Envelope breached: {} ({}). Halting job {}: no new items are taken, items in flight"
                  + " finish. The trip could not be recorded: other workers of the job are not"
                  + " halted by it",
              breach.bar(),
              breach.figures(),
              settings.job());
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
      log.warn(
          "Terminated: could not give leased items back ({}); their leases expire in {} s",
          e.getMessage(),
          settings.leaseMillis() / 1000);
    }
    reportLateTurns();
    // A waiting worker takes the slot now rather than when its lease runs out.
    gate.close();
  }

  /**
   * Schedules the heartbeat so that nothing it throws, an {@link Error} included, ends it: a
   * scheduled task that throws is never run again, and this worker's leases would lapse unsaid.
   */
  static void scheduleHeartbeat(
      ScheduledExecutorService executor, Runnable beat, long periodMillis) {
    executor.scheduleWithFixedDelay(
        () -> {
          try {
            beat.run();
          } catch (Throwable t) {
            log.error("Heartbeat failed; it beats again in {} ms", periodMillis, t);
          }
        },
        0,
        periodMillis,
        TimeUnit.MILLISECONDS);
  }

  /**
   * Heartbeat: leases, the mode's part ({@link WorkSource#beat}), figures, and trips recorded
   * elsewhere. Never throws.
   */
  private void heartbeat() {
    beats++;
    try {
      recordAgain();
      extendLeases();
      source.beat();
      report(stop.get() ? "stopping" : "running");
      if (!stop.get()) {
        Optional<TripStore.Trip> trip = store.trips().openTrip(settings.job());
        if (trip.isPresent() && haltedBar.compareAndSet(null, trip.get().bar())) {
          log.error(
              "Job {} was halted by trip #{} ({}: {}) on {} pid {}; stopping",
              settings.job(),
              trip.get().id(),
              trip.get().bar(),
              trip.get().figures(),
              trip.get().host(),
              trip.get().pid());
          stop.set(true);
        }
      }
    } catch (SQLException e) {
      source.work().outageNoticed();
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
   * Records again the outcomes recorded in the last few seconds before the outage the heartbeat
   * noticed last, if they have not been yet: a crash of the server may have forgotten them ({@link
   * ItemStore}'s class comment). Before this worker reports, which is what lets the fleet claim
   * pending items again.
   */
  private void recordAgain() throws SQLException {
    List<ItemStore.Done> lately = source.work().recordedBeforeTheOutage();
    if (lately.isEmpty()) {
      return;
    }
    int forgotten = store.items().recordAgain(settings.job(), lately);
    if (forgotten > 0) {
      log.info(
          "Recorded again {} of the {} outcome(s) recorded before the outage: PostgreSQL had"
              + " forgotten them",
          forgotten,
          lately.size());
    }
    source.work().recordedAgain(lately);
  }

  /**
   * Extends the leases of the items this worker holds, in flight, fetched and waiting to be
   * recorded, or leased ahead, and takes back those nobody holds whose claims a crash of the server
   * forgot; not once the worker is stopping, as it gives its items back then.
   */
  private void extendLeases() throws SQLException {
    List<ItemStore.Item> leases = new ArrayList<>(source.work().held());
    List<ItemStore.Item> ahead = source.leasedAhead();
    leases.addAll(ahead);
    Set<String> spare = new HashSet<>();
    ahead.forEach(i -> spare.add(i.token()));
    long sent = System.nanoTime();
    ItemStore.Extension extension =
        store
            .items()
            .extendedLeases(
                workerId,
                leases,
                spare,
                LeasedAhead.spareAboveMillis(
                    settings.leaseMillis(),
                    settings.outageBuffer().toMillis(),
                    heartbeatMillis(settings.leaseMillis())),
                settings.leaseMillis(),
                !stop.get());
    // A lease left as it was is still this worker's, and runs from when it was last set.
    List<String> tokens = new ArrayList<>(leases.size());
    leases.forEach(
        i -> {
          if (!extension.fresh().contains(i.token())) {
            tokens.add(i.token());
          }
        });
    if (extension.takenBack() > 0) {
      log.info(
          "Took back {} item(s) this worker holds whose claims PostgreSQL had forgotten",
          extension.takenBack());
    }
    source.leasesExtended(tokens, extension.extended(), sent);
  }

  private void report(String state) {
    try {
      store
          .workers()
          .upsertWorker(
              new WorkerStore.WorkerRow(
                  workerId,
                  settings.runId(),
                  settings.job(),
                  settings.destination().name(),
                  host,
                  pid,
                  state,
                  source.requestCount(),
                  source.rate(),
                  source.figures()));
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
      ProcessStalls.Figures stalled = stalls.figures();
      log.info(
          LATE_TURNS,
          limiterCounts.lateTurnsSkipped(),
          source.figures().turns(),
          stalled.limitMillis(),
          stalled.stalls(),
          stalled.longestMillis(),
          stalled.turnsTheyMayCost());
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
