package dev.pacer.postgres;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Objects;
import java.util.function.Predicate;

/**
 * One connection kept open between calls, under the database's {@link OutagePolicy}: the one
 * "retry once if the connection died" of the process.
 *
 * <p>A call first asks the policy; while the database is down it fails at once (SQLState 08001)
 * without touching the network. Otherwise it runs on the kept connection, opening one if there is
 * none. A kept connection that turns out to have died since its last use (a restart, a terminated
 * backend) is replaced and the work run once more in the same call: that costs a restart one
 * failed round trip instead of an outage. Only a failure that came quickly is retried: one that
 * took longer than {@code quickFailure} is a hung server timing out, and a second try would only
 * double the caller's wait. Any other failure discards the connection; failures that
 * mean the database is unreachable are reported to the policy, and every failure is thrown, for the
 * caller to answer as it must (the cursor: "unavailable"; a store: the caller retries later).
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

  private final OutagePolicy policy;
  private final Opener opener;
  private final Predicate<SQLException> isOutage;
  private final boolean resetOnRelease;
  private final long quickFailureNanos;
  private Connection connection;
  private boolean closed;

  /**
   * A connection kept under {@code policy}, not yet opened.
   *
   * @param policy the database's outage policy, told of each outcome
   * @param opener opens the connection, and a new one when it died
   * @param isOutage which failures mean the database is unreachable (a lost connection always does)
   * @param resetOnRelease whether a connection given back is first reset ({@code RESET ALL}): set
   *     it when the opener borrows from a pool, which would otherwise hand this session's settings
   *     to its next borrower
   * @param quickFailure the longest a failure of a dead connection takes (see the class comment)
   */
  public KeptConnection(OutagePolicy policy, Opener opener, Predicate<SQLException> isOutage,
      boolean resetOnRelease, Duration quickFailure) {
    this.policy = Objects.requireNonNull(policy, "policy");
    this.opener = Objects.requireNonNull(opener, "opener");
    this.isOutage = isOutage.or(OutagePolicy::isConnectionLoss);
    this.resetOnRelease = resetOnRelease;
    this.quickFailureNanos = quickFailure.toNanos();
  }

  /**
   * A connection whose failures count as an outage only when the connection is lost, opened by
   * {@code opener} whose reads are bounded by {@code readTimeout}.
   *
   * @param policy the database's outage policy, told of each outcome
   * @param opener opens the connection, and a new one when it died
   * @param readTimeout the bound on the connection's reads
   * @return the kept connection, not yet opened
   */
  public static KeptConnection onConnectionLoss(OutagePolicy policy, Opener opener,
      Duration readTimeout) {
    return new KeptConnection(policy, opener, e -> false, false, readTimeout.dividedBy(2));
  }

  /**
   * Runs {@code work}, replacing a connection that died since its last use and running it once
   * more; see the class comment.
   *
   * @param <T> what the work returns
   * @param work the work, run once or twice
   * @return the work's result
   * @throws SQLException 08001 while the policy holds the database down or after {@link #close()},
   *     or the failure of the work
   */
  public <T> T call(Work<T> work) throws SQLException {
    if (closed) {
      throw new SQLException("closed", "08003");
    }
    if (!policy.tryAttempt()) {
      throw policy.refusal();
    }
    boolean reused = connection != null;
    long started = policy.time().nanoTime();
    try {
      return succeeded(work.apply(connection()));
    } catch (SQLException first) {
      discard(first);
      boolean diedBetweenCalls = reused && OutagePolicy.isConnectionLoss(first)
          && policy.time().nanoTime() - started < quickFailureNanos;
      if (!diedBetweenCalls) {
        throw failed(first);
      }
    }
    // Another user of the policy may have found the database down meanwhile (its connections
    // died with this one): then the retry is theirs to make, at the boundary.
    if (!policy.tryAttempt()) {
      throw policy.refusal();
    }
    try {
      return succeeded(work.apply(connection()));
    } catch (SQLException second) {
      discard(second);
      throw failed(second);
    }
  }

  /**
   * Opens the connection now if there is none, without asking or telling the policy: for the
   * policy's own probe (which reports its outcome itself) and for a start-up connection that may
   * take longer than an operation.
   *
   * @throws SQLException if the connection cannot be opened, or with 08003 after {@link #close()}
   */
  public void open() throws SQLException {
    if (closed) {
      throw new SQLException("closed", "08003");
    }
    connection();
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

  private Connection connection() throws SQLException {
    if (connection == null) {
      connection = opener.open();
    }
    return connection;
  }

  private <T> T succeeded(T value) {
    policy.succeeded();
    return value;
  }

  private SQLException failed(SQLException e) {
    if (isOutage.test(e)) {
      policy.failed(e);
    }
    return e;
  }

  /** Throws the connection away after {@code cause}; a lost one is not reset, only abandoned. */
  private void discard(SQLException cause) {
    if (connection == null) {
      return;
    }
    if (OutagePolicy.isConnectionLoss(cause)) {
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
