package dev.pacer.postgres;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.FutureTask;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

/**
 * One connection kept open between calls, under the database's {@link OutagePolicy}: the one "retry
 * once if the connection died" of the process.
 *
 * <p>A call first asks the policy; while the database is down it fails at once (SQLState 08001)
 * without touching the network. Otherwise it runs on the kept connection, opening one if there is
 * none. A kept connection that turns out to have died since its last use (a restart, a terminated
 * backend) is replaced in the same call: that costs a restart one failed round trip instead of an
 * outage. Only a failure that came quickly counts so: one that took longer than {@code
 * quickFailure} is a hung server timing out, and a second try would only double the caller's wait.
 * Any other failure discards the connection and is thrown, for the caller to answer as it must (the
 * cursor: "unavailable"; a store: the caller retries later). The policy judges every call's
 * outcome, whatever it threw ({@link OutagePolicy}'s "every attempt ends"): a connection that
 * cannot be opened and a failure that means the database cannot be used now ({@link
 * OutagePolicy#isUnavailable}, or the user's own {@code isOutage}) count as an outage.
 *
 * <p><b>Work that may be done twice, and work that must not.</b> A lost connection does not say
 * whether the statement reached the server: one cut after the server committed and before its
 * answer arrived fails exactly as one that died between calls. So the caller says which its work
 * is. {@link #call} is for work that may be done twice (a read, an upsert of values, a statement
 * that recognises its own earlier run by a token the caller chose): after a quick loss of a reused
 * connection it runs the work once more on a new one. {@link #callOnce} is for work that must not
 * (an increment, a claim that also spends a turn): it never runs the work again, and when the
 * connection is lost while the work runs, the call fails with SQLState {@value #OUTCOME_UNKNOWN}
 * (transaction resolution unknown); its caller then finds out what was done, by a token the work
 * wrote, or settles the doubt in the direction that cannot do the work twice. After a quick loss of
 * a reused connection it opens the new connection all the same, so that the policy hears the
 * database answer, as after {@code call}'s second run, instead of an outage.
 *
 * <p><b>An interrupt costs its caller, never the connection.</b> A virtual thread (JDK 21 and
 * later) interrupted while it reads from a socket has the socket closed under it: that is the JDK's
 * rule for virtual threads, and it would close the connection every thread of the process shares,
 * for one caller's cancelled task, and count as an outage (the database held down, every caller
 * pacing locally until the next retry boundary). So a call made on a virtual thread runs on a
 * platform thread of this connection's own, whose socket an interrupt does not touch, while the
 * caller waits for it without answering interrupts; an interrupt that came meanwhile is set again
 * on the caller when the call returns, and the caller's next wait (a limiter's sleep for its turn)
 * sees it, as a platform thread's would: a platform thread's blocking read ignores the interrupt
 * and its flag stays set. The work's result is the same, and so is the connection. Platform threads
 * run the work themselves, at the cost of one check. The platform thread is started at the first
 * such call and ends after {@value #ROUND_TRIP_THREAD_IDLE_SECONDS} s without one; it never waits
 * for a lock of its user's, which the caller holds for it, so the hand-over cannot deadlock.
 *
 * <p>Not thread-safe: its users take turns (the cursor under its lock; a store lends each of its
 * connections to one call at a time).
 */
public final class KeptConnection implements AutoCloseable {

  /** Opens a connection ready for work (session settings applied). */
  @FunctionalInterface
  public interface Opener {
    /**
     * Opens the connection.
     *
     * @return a connection ready for work
     * @throws SQLException if it cannot be opened
     */
    Connection open() throws SQLException;
  }

  /**
   * A unit of work on the connection.
   *
   * @param <T> what the work returns
   */
  @FunctionalInterface
  public interface Work<T> {
    /**
     * Does the work.
     *
     * @param c the kept connection
     * @return the work's result
     * @throws SQLException if the work fails
     */
    T apply(Connection c) throws SQLException;
  }

  /**
   * The SQLState of a {@link #callOnce} whose connection was lost while its work ran: the work may
   * or may not have been done (the standard's "transaction resolution unknown"). A connection
   * failure (class 08) for everything that judges failures so, the outage policy among them.
   */
  public static final String OUTCOME_UNKNOWN = "08007";

  /** {@code Thread.isVirtual()}, looked up once: null before JDK 21, where no thread is virtual. */
  private static final MethodHandle IS_VIRTUAL = isVirtualHandle();

  static final long ROUND_TRIP_THREAD_IDLE_SECONDS = 30;

  private final OutagePolicy policy;
  private final Opener opener;
  private final Predicate<SQLException> isOutage;
  private final boolean resetOnRelease;
  private final long quickFailureNanos;

  /** Runs the calls of virtual threads; see the class comment. No thread until the first. */
  private final ThreadPoolExecutor roundTripThread;

  private Connection connection;

  /** Whether the current call failed to open a connection: always an outage. */
  private boolean openFailed;

  private boolean closed;

  /**
   * A connection kept under {@code policy}, not yet opened.
   *
   * @param policy the database's outage policy, told of each outcome
   * @param opener opens the connection, and a new one when it died
   * @param isOutage which failures of the work also mean the database is unreachable, besides those
   *     that always do ({@link OutagePolicy#isUnavailable}) and a connection that cannot be opened
   * @param resetOnRelease whether a connection given back is first reset ({@code RESET ALL}): set
   *     it when the opener borrows from a pool, which would otherwise hand this session's settings
   *     to its next borrower
   * @param quickFailure the longest a failure of a dead connection takes (see the class comment)
   */
  public KeptConnection(
      OutagePolicy policy,
      Opener opener,
      Predicate<SQLException> isOutage,
      boolean resetOnRelease,
      Duration quickFailure) {
    this.policy = Objects.requireNonNull(policy, "policy");
    this.opener = Objects.requireNonNull(opener, "opener");
    this.isOutage = Objects.requireNonNull(isOutage, "isOutage");
    this.resetOnRelease = resetOnRelease;
    this.quickFailureNanos = quickFailure.toNanos();
    this.roundTripThread =
        new ThreadPoolExecutor(
            1,
            1,
            ROUND_TRIP_THREAD_IDLE_SECONDS,
            TimeUnit.SECONDS,
            new LinkedBlockingQueue<>(),
            r -> {
              Thread t = new Thread(r, "pacer-db-round-trip");
              t.setDaemon(true);
              return t;
            });
    this.roundTripThread.allowCoreThreadTimeOut(true);
  }

  /**
   * A connection whose failures count as an outage only when they mean the database cannot be used
   * now ({@link OutagePolicy#isUnavailable}, or the connection cannot be opened), opened by {@code
   * opener} whose reads are bounded by {@code readTimeout}.
   *
   * @param policy the database's outage policy, told of each outcome
   * @param opener opens the connection, and a new one when it died
   * @param readTimeout the bound on the connection's reads
   * @return the kept connection, not yet opened
   */
  public static KeptConnection whenUnavailable(
      OutagePolicy policy, Opener opener, Duration readTimeout) {
    return new KeptConnection(policy, opener, e -> false, false, readTimeout.dividedBy(2));
  }

  /**
   * Runs {@code work}, which may be done twice: a connection that died since its last use is
   * replaced and the work run once more; on a platform thread if the caller is virtual. See the
   * class comment.
   *
   * @param <T> what the work returns
   * @param work the work, run once or twice
   * @return the work's result
   * @throws SQLException 08001 while the policy holds the database down or after {@link #close()},
   *     or the failure of the work
   */
  public <T> T call(Work<T> work) throws SQLException {
    return run(work, true);
  }

  /**
   * Runs {@code work}, which must not be done twice, at most once; on a platform thread if the
   * caller is virtual. See the class comment.
   *
   * @param <T> what the work returns
   * @param work the work, run once
   * @return the work's result
   * @throws SQLException {@value #OUTCOME_UNKNOWN} if the connection was lost while the work ran
   *     (it may have been done), 08001 while the policy holds the database down or after {@link
   *     #close()}, or the work's other failure (then it was not done)
   */
  public <T> T callOnce(Work<T> work) throws SQLException {
    return run(work, false);
  }

  /**
   * Whether {@code e} says that a {@link #callOnce}'s work may or may not have been done.
   *
   * @param e a failure of a call
   * @return whether its SQLState is {@value #OUTCOME_UNKNOWN}
   */
  public static boolean isOutcomeUnknown(SQLException e) {
    return OUTCOME_UNKNOWN.equals(e.getSQLState());
  }

  private <T> T run(Work<T> work, boolean mayRepeat) throws SQLException {
    if (closed) {
      throw new SQLException("closed", "08003");
    }
    Ran<T> ran = onPlatformThread(() -> callHere(work, mayRepeat));
    if (ran.lost() != null) {
      throw outcomeUnknown(ran.lost());
    }
    return ran.value();
  }

  /** What a call's attempt came to: the work's result, or the loss that hid it. */
  private record Ran<T>(T value, SQLException lost) {}

  private <T> Ran<T> callHere(Work<T> work, boolean mayRepeat) throws SQLException {
    openFailed = false;
    return policy.attempt(
        e -> openFailed || isOutage.test(e),
        admission -> {
          boolean reused = connection != null;
          long started = policy.time().nanoTime();
          try {
            return new Ran<>(work.apply(connection()), null);
          } catch (SQLException first) {
            discard(first);
            boolean lost = OutagePolicy.isConnectionLoss(first);
            boolean diedBetweenCalls =
                reused && lost && policy.time().nanoTime() - started < quickFailureNanos;
            // Another user of the policy may have found the database down meanwhile (its
            // connections
            // died with this one): then the retry is theirs to make, at the boundary.
            boolean replace = diedBetweenCalls && admission.holds();
            if (!mayRepeat && lost) {
              if (replace) {
                replaceLost(first);
                return new Ran<>(null, first);
              }
              throw outcomeUnknown(first);
            }
            if (!replace) {
              throw first;
            }
          } catch (RuntimeException | Error e) {
            discard(e);
            throw e;
          }
          try {
            return new Ran<>(work.apply(connection()), null);
          } catch (SQLException | RuntimeException | Error second) {
            discard(second);
            throw second;
          }
        });
  }

  /**
   * Opens the connection that replaces one lost under a {@link #callOnce}: the database answering
   * it is what the policy hears; one that cannot be opened is an outage, and the work's outcome is
   * unknown all the same.
   */
  private void replaceLost(SQLException loss) throws SQLException {
    try {
      connection();
    } catch (SQLException notOpened) {
      SQLException unknown = outcomeUnknown(loss);
      unknown.addSuppressed(notOpened);
      throw unknown;
    }
  }

  private static SQLException outcomeUnknown(SQLException loss) {
    return new SQLException(
        "the connection was lost before PostgreSQL answered, so the work may"
            + " or may not have been done: "
            + loss.getMessage(),
        OUTCOME_UNKNOWN,
        loss);
  }

  /**
   * Opens the connection now if there is none, without asking or telling the policy: for the
   * policy's own probe (whose outcome the policy judges itself) and for a start-up connection that
   * may take longer than an operation. On a platform thread if the caller is virtual, as {@link
   * #call}.
   *
   * @throws SQLException if the connection cannot be opened, or with 08003 after {@link #close()}
   */
  public void open() throws SQLException {
    if (closed) {
      throw new SQLException("closed", "08003");
    }
    onPlatformThread(this::connection);
  }

  /**
   * Whether a connection is open (it may still turn out to have died).
   *
   * @return whether a connection is held
   */
  public boolean isConnected() {
    return connection != null;
  }

  /** Gives the connection back (reset first if borrowed from a pool) and refuses later calls. */
  @Override
  public void close() {
    closed = true;
    roundTripThread.shutdown();
    release();
  }

  /** Gives the connection back, healthy: the next call opens another. */
  public void release() {
    Connection c = connection;
    connection = null;
    if (c == null) {
      return;
    }
    if (resetOnRelease) {
      try (Statement reset = c.createStatement()) {
        reset.execute("RESET ALL");
      } catch (SQLException e) {
        abortQuietly(c);
      }
    }
    closeQuietly(c);
  }

  /** What runs on the connection, here or on the round-trip thread. */
  @FunctionalInterface
  private interface RoundTrip<T> {
    T run() throws SQLException;
  }

  /**
   * Runs {@code trip} here on a platform thread; on a virtual thread, runs it on {@link
   * #roundTripThread} and waits for it through interrupts, setting the caller's interrupt again
   * afterwards (see the class comment). The task's start and completion order this connection's
   * state between the two threads.
   */
  private <T> T onPlatformThread(RoundTrip<T> trip) throws SQLException {
    if (!isVirtual(Thread.currentThread())) {
      return trip.run();
    }
    FutureTask<T> task = new FutureTask<>(trip::run);
    try {
      roundTripThread.execute(task);
    } catch (RejectedExecutionException e) {
      throw new SQLException("closed", "08003", e);
    }
    boolean interrupted = false;
    try {
      while (true) {
        try {
          return task.get();
        } catch (InterruptedException e) {
          interrupted = true;
        }
      }
    } catch (ExecutionException e) {
      Throwable cause = e.getCause();
      if (cause instanceof SQLException sqlException) {
        throw sqlException;
      }
      if (cause instanceof RuntimeException runtime) {
        throw runtime;
      }
      throw (Error) cause;
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  private static boolean isVirtual(Thread thread) {
    if (IS_VIRTUAL == null) {
      return false;
    }
    try {
      return (boolean) IS_VIRTUAL.invokeExact(thread);
    } catch (Throwable e) {
      throw new IllegalStateException("Thread.isVirtual failed", e);
    }
  }

  private static MethodHandle isVirtualHandle() {
    try {
      return MethodHandles.publicLookup()
          .findVirtual(Thread.class, "isVirtual", MethodType.methodType(boolean.class));
    } catch (NoSuchMethodException | IllegalAccessException e) {
      return null;
    }
  }

  private Connection connection() throws SQLException {
    if (connection == null) {
      try {
        connection = opener.open();
      } catch (SQLException e) {
        openFailed = true;
        throw e;
      }
    }
    return connection;
  }

  /**
   * Throws the connection away after {@code cause}; a lost one is not reset, only abandoned, and so
   * is one whose work threw something unexpected, which may have left it in any state.
   */
  private void discard(Throwable cause) {
    if (connection == null) {
      return;
    }
    if (!(cause instanceof SQLException e) || OutagePolicy.isConnectionLoss(e)) {
      Connection c = connection;
      connection = null;
      abortQuietly(c);
      closeQuietly(c);
    } else {
      release();
    }
  }

  private static void abortQuietly(Connection c) {
    try {
      c.abort(Runnable::run);
    } catch (SQLException | RuntimeException ignored) {
      // Abandoned because it failed; the close that follows is the last word.
    }
  }

  private static void closeQuietly(Connection c) {
    try {
      c.close();
    } catch (SQLException | RuntimeException ignored) {
      // Discarded because it failed; closing it may fail the same way.
    }
  }
}
