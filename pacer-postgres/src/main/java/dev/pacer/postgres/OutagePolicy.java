package dev.pacer.postgres;

import dev.pacer.TimeSource;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.Objects;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
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
 * <p>Why absolute multiples, and why the very next one. Every process of a fleet must return to
 * the shared cursor at the same instant: one that returns first paces at the full rate while the
 * others still pace locally at a fraction of it, and the sum exceeds the ceiling. With a cooldown
 * of 5 s and the database gone at 09.8:
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
 * the database no longer has (its own connection killed while the server stayed up) can return a
 * boundary late, which is why the policy also reports a <em>hand-over</em>: from a return until
 * the next boundary has passed, {@link #isHandingOver()} is true, and the cursor marks its turns so
 * that a limiter paces them no faster than locally as well ({@code Reservation#handOver}).
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
      return (task, delay) -> { };
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
        executor = Executors.newSingleThreadScheduledExecutor(r -> {
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

  /** The boundary (epoch ms) the policy waits for while down; UP while up. */
  private long boundaryMillis = UP;
  private boolean probing;
  private long failuresThisOutage;
  private long downSinceMillis;
  /** The boundary after the last return: until then turns are handed over. */
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
  public OutagePolicy(String name, Duration cooldown, TimeSource time, Scheduler scheduler,
      Probe probe) {
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
   * Whether the caller may try the database now. While up, always. While down, only the first
   * caller at or after the boundary, which then must report {@link #succeeded()} or {@link
   * #failed}.
   *
   * @return whether to try the database now
   */
  public boolean tryAttempt() {
    if (!down) {
      return true;
    }
    synchronized (this) {
      if (boundaryMillis == UP) {
        return true;
      }
      if (probing || time.epochMillis() < boundaryMillis) {
        return false;
      }
      probing = true;
      probes.incrementAndGet();
      return true;
    }
  }

  /**
   * True while an attempt now would be refused: down, and the boundary not reached or its attempt
   * already in flight. A quick look that claims nothing, for callers that would otherwise queue
   * for a connection first.
   *
   * @return whether an attempt now would be refused
   */
  public boolean refusesNow() {
    if (!down) {
      return false;
    }
    synchronized (this) {
      return boundaryMillis != UP && (probing || time.epochMillis() < boundaryMillis);
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
   * then, and the attempt is left to its probe; if it is up, one attempt per boundary is the most an
   * outage nobody reported costs.
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
   * while down without touching the network, and the outcome reported.
   *
   * @param opener opens the connection
   * @return the open connection, the caller's to close
   * @throws SQLException 08001 while down, or the opener's failure
   */
  public Connection open(KeptConnection.Opener opener) throws SQLException {
    if (!tryAttempt()) {
      throw refusal();
    }
    try {
      Connection c = opener.open();
      succeeded();
      return c;
    } catch (SQLException e) {
      if (isConnectionLoss(e)) {
        failed(e);
      }
      throw e;
    }
  }

  /**
   * What an attempt refused while down fails with.
   *
   * @return an exception with SQLState 08001, made without touching the network
   */
  public SQLException refusal() {
    return new SQLException("PostgreSQL is unavailable (" + name + "); the next attempt is at the"
        + " next multiple of " + cooldownMillis + " ms on the wall clock", "08001");
  }

  /**
   * True while down: callers answer without the database.
   *
   * @return whether the database is held down
   */
  public boolean isDown() {
    return down;
  }

  /** An attempt reached the database. */
  public void succeeded() {
    if (!down) {
      return;
    }
    synchronized (this) {
      if (boundaryMillis == UP) {
        return;
      }
      long now = time.epochMillis();
      log.info("PostgreSQL answers again ({}) after {} failed attempt(s) over {} s", name,
          failuresThisOutage, (now - downSinceMillis) / 1000);
      boundaryMillis = UP;
      probing = false;
      handOverUntilMillis = nextBoundaryAfter(now);
      down = false;
    }
  }

  /**
   * An attempt failed because the database could not be reached or did not answer in time.
   *
   * @param cause the failure, logged with the outage's one WARN
   */
  public void failed(SQLException cause) {
    failures.incrementAndGet();
    long delayMillis;
    synchronized (this) {
      long now = time.epochMillis();
      failuresThisOutage++;
      if (boundaryMillis == UP) {
        failuresThisOutage = 1;
        downSinceMillis = now;
        boundaryMillis = nextBoundaryAfter(now);
        down = true;
        log.warn("PostgreSQL ({}) unavailable: {} [SQLState {}]; pacing locally, retrying at every"
                + " multiple of {} ms on the wall clock, the first at {}", name, cause.getMessage(),
            cause.getSQLState(), cooldownMillis, Instant.ofEpochMilli(boundaryMillis));
      } else if (probing) {
        probing = false;
        boundaryMillis = Math.max(boundaryMillis + cooldownMillis, nextBoundaryAfter(now));
        log.debug("PostgreSQL ({}) still unavailable ({} failed attempts): {}", name,
            failuresThisOutage, cause.getMessage());
      } else {
        // Another user's attempt, begun before the outage was noticed: same outage, same boundary.
        return;
      }
      delayMillis = boundaryMillis - now;
    }
    scheduler.schedule(this::probeAtBoundary, Duration.ofMillis(delayMillis));
  }

  /**
   * True from a return until the next boundary has passed: another process of the fleet may
   * return only then (see the class comment), so turns taken meanwhile are paced locally as well.
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
    if (!down || !tryAttempt()) {
      return;
    }
    try {
      probe.attempt();
      succeeded();
    } catch (SQLException e) {
      failed(e);
    } catch (RuntimeException e) {
      failed(new SQLException("probe failed: " + e, "08000", e));
    }
  }

  private long nextBoundaryAfter(long epochMillis) {
    if (cooldownMillis == 0) {
      return epochMillis;
    }
    return Math.floorDiv(epochMillis, cooldownMillis) * cooldownMillis + cooldownMillis;
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
    return "OutagePolicy{" + name + ", cooldown=" + cooldownMillis + " ms, "
        + (down ? "down" : "up") + "}";
  }
}
