package dev.pacer.postgres;

import dev.pacer.TimeSource;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Predicate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What a process does while one database is unreachable: one instance per database per process,
 * shared by everything that talks to that database (the cursor, work stores, dispatch slots), so
 * that an outage is one state, costs one connection attempt per retry boundary and logs one WARN,
 * whichever component noticed it first.
 *
 * <p>States: <em>up</em> (every attempt goes through) and <em>down</em> (no attempt touches the
 * network, except the one probe per boundary). A failure reported by any user turns the policy
 * down; the next <em>retry boundary</em> is the next multiple of the cooldown on the wall clock
 * ({@link TimeSource#epochMillis()}), however close. At a boundary exactly one attempt is let
 * through: the probe scheduled for it, or, if the scheduler is late or absent, the first caller.
 * Its success turns the policy up; its failure moves the boundary one cooldown on.
 *
 * <p><b>Every attempt ends.</b> An attempt is made only through the policy ({@link #open}, {@link
 * KeptConnection}, the probe), which runs it and judges how it ended, whatever it threw, so that no
 * outcome can leave a boundary taken and every later attempt refused. A failure that says the
 * database cannot be used now ({@link #isUnavailable}: a lost connection, too many connections, a
 * login refused, a read-only server, a statement cancelled) counts as an outage: the fleet paces
 * locally and retries at the next boundary, one attempt per boundary, however many of the fleet's
 * connections the server turns away. Any other {@link SQLException} is the database answering: it
 * ends an outage like a success. Anything else thrown (a {@link RuntimeException}, an {@link
 * Error}) says nothing about the database: while up it is the caller's alone, and a boundary's
 * attempt that ends so leaves the database down until the next boundary, whose attempt is scheduled
 * as after any failure.
 *
 * <p>Why absolute multiples, and why the very next one. Every process of a fleet must return to the
 * shared cursor at the same instant: one that returns first paces at the full rate while the others
 * still pace locally at a fraction of it, and the sum exceeds the ceiling. With a cooldown of 5 s
 * and the database gone at 09.8:
 *
 * <pre>
 *   process A notices at 09.9, process B at 10.1; the database is back at 12.0
 *   first retry at ceil(failure + cooldown):  A at 15, B at 20   (5 s apart: over the ceiling)
 *   first retry at the next multiple:         A at 10 (refused, then 15), B at 15   (together)
 * </pre>
 *
 * A process that failed just before a boundary retries on it, and waits for the next only if the
 * database still refuses; every process that noticed the failure before the database came back
 * therefore returns on the first boundary after the return. Only a process that noticed a failure
 * the database no longer has (its own connection killed while the server stayed up, a read stuck on
 * a hung server that times out after it answers again) can return a boundary late, which is why the
 * policy also reports a <em>hand-over</em>: from a return until one cooldown after the next
 * boundary, {@link #isHandingOver()} is true, and the cursor marks its turns so that a limiter
 * paces them no faster than locally as well ({@code Reservation#handOver}). Not until the next
 * boundary alone: the late process returns when its attempt at that boundary answers, some time
 * after it, and paces locally until then; the others' full-rate turns beside its local ones would
 * exceed the ceiling. One cooldown covers any attempt that ends before the boundary after. A
 * process that stays away longer than that (its attempt at that boundary failing too) is not
 * covered.
 *
 * <p>A late boundary (every thread asleep on a local turn when it passed, a slow probe) never
 * shifts the grid: after a failed probe the next boundary is one cooldown after the one it was
 * scheduled for, or the next multiple after now if that has passed too.
 *
 * <p>Failures are counted ({@link #failureCount()}); the WARN is logged once, when the policy goes
 * down, and one INFO when it comes back, with the number of failed attempts in between.
 */
public final class OutagePolicy {

  private static final Logger log = LoggerFactory.getLogger(OutagePolicy.class);
  private static final long UP = Long.MIN_VALUE;
  private static final long NONE = 0;

  /** An attempt at the database made at a boundary on the policy's own initiative. */
  @FunctionalInterface
  public interface Probe {
    /**
     * Attempts the database.
     *
     * @throws SQLException if the attempt failed
     */
    void attempt() throws SQLException;
  }

  /**
   * What one attempt does on the database, run by {@link #attempt}.
   *
   * @param <T> what it returns
   */
  @FunctionalInterface
  interface Attempt<T> {
    T run(Admission admission) throws SQLException;
  }

  /** How the policy let an attempt through: while up, or as the one attempt of a boundary. */
  final class Admission {
    /** The boundary attempt's number ({@link OutagePolicy#boundaryAttempts()}), or NONE. */
    private final long boundaryAttempt;

    private Admission(long boundaryAttempt) {
      this.boundaryAttempt = boundaryAttempt;
    }

    /**
     * Whether the attempt may still touch the network, for a second try inside it: the boundary's
     * attempt always may; one let through while up only while the policy is still up, since another
     * user may meanwhile have found the database down.
     */
    boolean holds() {
      return boundaryAttempt != NONE || !down;
    }

    private boolean isBoundaryAttempt() {
      return boundaryAttempt != NONE;
    }
  }

  /** Runs a probe after a delay; injected so that tests run boundaries on a fake clock. */
  @FunctionalInterface
  public interface Scheduler {
    /**
     * Runs {@code task} once, {@code delay} from now.
     *
     * @param task the probe to run
     * @param delay how long from now
     */
    void schedule(Runnable task, Duration delay);

    /**
     * No background probe: the first caller after a boundary makes the attempt.
     *
     * @return a scheduler that runs nothing
     */
    static Scheduler none() {
      return (task, delay) -> {};
    }

    /**
     * One daemon thread, started at the first outage.
     *
     * @param name the thread's name
     * @return the scheduler
     */
    static DaemonScheduler daemonThread(String name) {
      return new DaemonScheduler(name);
    }
  }

  /** A {@link Scheduler} on one daemon thread, started when first needed. */
  public static final class DaemonScheduler implements Scheduler, AutoCloseable {
    private final String threadName;
    private ScheduledExecutorService executor;
    private boolean closed;

    private DaemonScheduler(String threadName) {
      this.threadName = threadName;
    }

    @Override
    public synchronized void schedule(Runnable task, Duration delay) {
      if (closed) {
        return;
      }
      if (executor == null) {
        executor =
            Executors.newSingleThreadScheduledExecutor(
                r -> {
                  Thread t = new Thread(r, threadName);
                  t.setDaemon(true);
                  return t;
                });
      }
      executor.schedule(task, delay.toNanos(), TimeUnit.NANOSECONDS);
    }

    /** Stops the thread; later schedules are dropped. */
    @Override
    public synchronized void close() {
      closed = true;
      if (executor != null) {
        executor.shutdownNow();
      }
    }
  }

  private final String name;
  private final long cooldownMillis;
  private final TimeSource time;
  private final Scheduler scheduler;
  private final Probe probe;
  private final AtomicLong failures = new AtomicLong();
  private final AtomicLong probes = new AtomicLong();

  /** Every attempt let through while up: it holds no boundary. */
  private final Admission whileUp = new Admission(NONE);

  /** The boundary (epoch ms) the policy waits for while down; UP while up. */
  private long boundaryMillis = UP;

  /** The number of the boundary's attempt in flight, or NONE: at most one at a time. */
  private long boundaryAttemptInFlight = NONE;

  private long failuresThisOutage;
  private long downSinceMillis;

  /** One cooldown after the boundary after the last return: until then turns are handed over. */
  private volatile long handOverUntilMillis = UP;

  private volatile boolean down;

  /**
   * A policy for one database, up until its first failure.
   *
   * @param name what the WARN calls the database (never a URL: it may carry a password)
   * @param cooldown the spacing of retry boundaries; zero retries at every attempt
   * @param time the clock of the retry grid (its wall clock places the boundaries)
   * @param scheduler runs the probe at each boundary
   * @param probe the attempt made at a boundary (see {@link Scheduler#none()} for none)
   */
  public OutagePolicy(
      String name, Duration cooldown, TimeSource time, Scheduler scheduler, Probe probe) {
    if (cooldown == null || cooldown.isNegative()) {
      throw new IllegalArgumentException("cooldown must be >= 0, got " + cooldown);
    }
    this.name = Objects.requireNonNull(name, "name");
    this.cooldownMillis = cooldown.toMillis();
    this.time = Objects.requireNonNull(time, "time");
    this.scheduler = Objects.requireNonNull(scheduler, "scheduler");
    this.probe = Objects.requireNonNull(probe, "probe");
  }

  /**
   * Runs {@code attempt} if the policy lets an attempt through now, and judges how it ended (see
   * the class comment): the one place an attempt is admitted, so that every admitted attempt ends.
   *
   * @param <T> what the attempt returns
   * @param isOutage which failures of the attempt also count as an outage, besides those that
   *     always do ({@link #isUnavailable})
   * @param attempt the attempt
   * @return what the attempt returned
   * @throws SQLException 08001 without touching the network if the policy refuses an attempt now,
   *     or what the attempt threw
   */
  <T> T attempt(Predicate<SQLException> isOutage, Attempt<T> attempt) throws SQLException {
    Optional<Admission> admission = admit();
    if (admission.isEmpty()) {
      throw refusal();
    }
    return run(admission.get(), isOutage, attempt);
  }

  private <T> T run(Admission admission, Predicate<SQLException> isOutage, Attempt<T> attempt)
      throws SQLException {
    T result;
    try {
      result = attempt.run(admission);
    } catch (SQLException e) {
      if (isUnavailable(e) || isOutage.test(e)) {
        failed(admission, e);
      } else {
        answered(admission);
      }
      throw e;
    } catch (RuntimeException | Error e) {
      endedWithoutVerdict(admission, e);
      throw e;
    }
    answered(admission);
    return result;
  }

  /** Lets an attempt through: while up, always; while down, one at or after the boundary. */
  private Optional<Admission> admit() {
    if (!down) {
      return Optional.of(whileUp);
    }
    synchronized (this) {
      if (boundaryMillis == UP) {
        return Optional.of(whileUp);
      }
      if (boundaryAttemptInFlight != NONE || time.epochMillis() < boundaryMillis) {
        return Optional.empty();
      }
      boundaryAttemptInFlight = probes.incrementAndGet();
      return Optional.of(new Admission(boundaryAttemptInFlight));
    }
  }

  /**
   * True while an attempt now would be refused: down, and the boundary not reached or its attempt
   * already in flight. A quick look that claims nothing, for callers that would otherwise queue for
   * a connection first.
   *
   * @return whether an attempt now would be refused
   */
  public boolean refusesNow() {
    if (!down) {
      return false;
    }
    synchronized (this) {
      return boundaryMillis != UP
          && (boundaryAttemptInFlight != NONE || time.epochMillis() < boundaryMillis);
    }
  }

  /**
   * How long until the policy lets the next attempt through: zero while up, else the time to the
   * next boundary. A caller that retries on its own waits this long (and a little more, so that the
   * boundary's probe goes first) instead of keeping a schedule of its own.
   *
   * @return the time to the next boundary, or zero while up
   */
  public Duration untilNextAttempt() {
    if (!down) {
      return Duration.ZERO;
    }
    synchronized (this) {
      return boundaryMillis == UP
          ? Duration.ZERO
          : Duration.ofMillis(Math.max(0, boundaryMillis - time.epochMillis()));
    }
  }

  /**
   * How long until the next retry boundary, up or down: while down, the boundary the policy waits
   * for; while up, the grid's next multiple of the cooldown. A user that must reconnect on its own
   * while nobody has told the policy of a failure (a listener whose connection dropped) waits this
   * long, and a little more: if the database is down, the policy has most likely heard of it by
   * then, and the attempt is left to its probe; if it is up, one attempt per boundary is the most
   * an outage nobody reported costs.
   *
   * @return the time to the next boundary
   */
  public Duration untilNextBoundary() {
    Duration waiting = untilNextAttempt();
    if (!waiting.isZero()) {
      return waiting;
    }
    long now = time.epochMillis();
    return Duration.ofMillis(nextBoundaryAfter(now) - now);
  }

  /**
   * Opens a connection under the policy, for a user that holds it itself (a lock session): refused
   * while down without touching the network, and the outcome reported. Every failure to open one
   * counts as an outage: without a connection, the database cannot be used.
   *
   * @param opener opens the connection
   * @return the open connection, the caller's to close
   * @throws SQLException 08001 while down, or the opener's failure
   */
  public Connection open(KeptConnection.Opener opener) throws SQLException {
    return attempt(e -> true, admission -> opener.open());
  }

  /**
   * What an attempt refused while down fails with.
   *
   * @return an exception with SQLState 08001, made without touching the network
   */
  public SQLException refusal() {
    return new SQLException(
        "PostgreSQL is unavailable ("
            + name
            + "); the next attempt is at the"
            + " next multiple of "
            + cooldownMillis
            + " ms on the wall clock",
        "08001");
  }

  /**
   * True while down: callers answer without the database.
   *
   * @return whether the database is held down
   */
  public boolean isDown() {
    return down;
  }

  /** The database answered {@code admission}'s attempt: an outage, if any, is over. */
  private void answered(Admission admission) {
    if (!down && !admission.isBoundaryAttempt()) {
      return;
    }
    synchronized (this) {
      endBoundaryAttempt(admission);
      if (boundaryMillis == UP) {
        return;
      }
      long now = time.epochMillis();
      log.info(
          "PostgreSQL answers again ({}) after {} failed attempt(s) over {} s",
          name,
          failuresThisOutage,
          (now - downSinceMillis) / 1000);
      boundaryMillis = UP;
      handOverUntilMillis = nextBoundaryAfter(now) + cooldownMillis;
      down = false;
    }
  }

  /** {@code admission}'s attempt found the database unavailable ({@code cause}). */
  private void failed(Admission admission, SQLException cause) {
    failures.incrementAndGet();
    long delayMillis;
    synchronized (this) {
      long now = time.epochMillis();
      failuresThisOutage++;
      boolean boundaryAttempt = endBoundaryAttempt(admission);
      if (boundaryMillis == UP) {
        failuresThisOutage = 1;
        downSinceMillis = now;
        boundaryMillis = nextBoundaryAfter(now);
        down = true;
        log.warn(
            "PostgreSQL ({}) unavailable: {} [SQLState {}]; pacing locally, retrying at every"
                + " multiple of {} ms on the wall clock, the first at {}",
            name,
            cause.getMessage(),
            cause.getSQLState(),
            cooldownMillis,
            Instant.ofEpochMilli(boundaryMillis));
      } else if (boundaryAttempt) {
        boundaryMillis = nextBoundaryAfterAttempt(now);
        log.debug(
            "PostgreSQL ({}) still unavailable ({} failed attempts): {} [SQLState {}]",
            name,
            failuresThisOutage,
            cause.getMessage(),
            cause.getSQLState());
      } else {
        // Another user's attempt, begun before the outage was noticed: same outage, same boundary.
        return;
      }
      delayMillis = boundaryMillis - now;
    }
    scheduler.schedule(this::probeAtBoundary, Duration.ofMillis(delayMillis));
  }

  /**
   * {@code admission}'s attempt threw something that is no answer of the database's: the boundary's
   * attempt ends as if it had failed, so that the next boundary's attempt is made.
   */
  private void endedWithoutVerdict(Admission admission, Throwable thrown) {
    long next;
    long delayMillis;
    synchronized (this) {
      if (!endBoundaryAttempt(admission) || boundaryMillis == UP) {
        return;
      }
      long now = time.epochMillis();
      failures.incrementAndGet();
      failuresThisOutage++;
      next = nextBoundaryAfterAttempt(now);
      boundaryMillis = next;
      delayMillis = next - now;
    }
    log.warn(
        "PostgreSQL ({}): an attempt at a retry boundary threw; still pacing locally, the"
            + " next attempt at {}",
        name,
        Instant.ofEpochMilli(next),
        thrown);
    scheduler.schedule(this::probeAtBoundary, Duration.ofMillis(delayMillis));
  }

  /** Ends {@code admission}'s claim on the boundary, if it holds it; whether it did. */
  private boolean endBoundaryAttempt(Admission admission) {
    if (!admission.isBoundaryAttempt() || boundaryAttemptInFlight != admission.boundaryAttempt) {
      return false;
    }
    boundaryAttemptInFlight = NONE;
    return true;
  }

  /** After a boundary's attempt failed: one cooldown on, or the next multiple if that passed. */
  private long nextBoundaryAfterAttempt(long now) {
    return Math.max(boundaryMillis + cooldownMillis, nextBoundaryAfter(now));
  }

  /**
   * True from a return until one cooldown after the next boundary: another process of the fleet may
   * return only when its attempt at that boundary answers (see the class comment), so turns taken
   * meanwhile are paced locally as well.
   *
   * @return whether a hand-over is under way
   */
  public boolean isHandingOver() {
    return !handOverLeft().isZero();
  }

  /**
   * How long the hand-over still lasts (see {@link #isHandingOver()}); zero when there is none.
   *
   * @return the hand-over left
   */
  public Duration handOverLeft() {
    long until = handOverUntilMillis;
    return until == UP ? Duration.ZERO : Duration.ofMillis(Math.max(0, until - time.epochMillis()));
  }

  /**
   * Failed attempts so far, every outage together.
   *
   * @return the number of failed attempts
   */
  public long failureCount() {
    return failures.get();
  }

  /**
   * Attempts let through at boundaries so far (probes and callers that came first).
   *
   * @return the number of attempts at boundaries
   */
  public long boundaryAttempts() {
    return probes.get();
  }

  /**
   * The clock the policy and its users measure on.
   *
   * @return the clock
   */
  public TimeSource time() {
    return time;
  }

  /**
   * The spacing of the retry boundaries on the wall clock.
   *
   * @return the cooldown
   */
  public Duration cooldown() {
    return Duration.ofMillis(cooldownMillis);
  }

  private void probeAtBoundary() {
    long early;
    synchronized (this) {
      early = boundaryMillis == UP ? 0 : boundaryMillis - time.epochMillis();
    }
    if (early > 0) {
      // The wall clock and the scheduler's clock disagree: wait for the boundary itself.
      scheduler.schedule(this::probeAtBoundary, Duration.ofMillis(early));
      return;
    }
    // None while up, and none while another user makes the boundary's attempt: its end schedules
    // the next.
    admit()
        .filter(Admission::isBoundaryAttempt)
        .ifPresent(
            admission -> {
              try {
                run(
                    admission,
                    e -> true,
                    a -> {
                      probe.attempt();
                      return null;
                    });
              } catch (SQLException | RuntimeException e) {
                // Judged (and anything unexpected logged) by run, which scheduled the next
                // boundary.
              }
            });
  }

  private long nextBoundaryAfter(long epochMillis) {
    if (cooldownMillis == 0) {
      return epochMillis;
    }
    return Math.floorDiv(epochMillis, cooldownMillis) * cooldownMillis + cooldownMillis;
  }

  /**
   * Whether a failure means this process cannot use the database now, whatever it was doing: the
   * connection is lost ({@link #isConnectionLoss}); the server refuses a session (class 28: a login
   * refused, 28P01 a wrong password) or lacks the resources for one (class 53: 53300 too many
   * connections, which a whole fleet reconnecting on one boundary may meet, memory, disk); it takes
   * no writes (25006: a standby, or {@code default_transaction_read_only}), and every user of the
   * policy writes; or it cancelled the statement (57014: a statement timeout).
   *
   * @param e the failure
   * @return whether it counts as an outage for every user of the policy
   */
  public static boolean isUnavailable(SQLException e) {
    if (isConnectionLoss(e)) {
      return true;
    }
    String state = e.getSQLState();
    return state.startsWith("28")
        || state.startsWith("53")
        || state.equals("25006")
        || state.equals("57014");
  }

  /**
   * Whether a failure means the connection is gone (rather than one statement failing).
   *
   * @param e the failure
   * @return whether its SQLState says the connection is lost (08, 57P, or none)
   */
  public static boolean isConnectionLoss(SQLException e) {
    String state = e.getSQLState();
    return state == null || state.startsWith("08") || state.startsWith("57P");
  }

  @Override
  public String toString() {
    return "OutagePolicy{"
        + name
        + ", cooldown="
        + cooldownMillis
        + " ms, "
        + (down ? "down" : "up")
        + "}";
  }
}
