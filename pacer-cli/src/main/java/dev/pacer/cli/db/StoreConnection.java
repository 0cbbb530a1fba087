package dev.pacer.cli.db;

import dev.pacer.postgres.KeptConnection;
import dev.pacer.postgres.OutagePolicy;
import java.sql.SQLException;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;

/**
 * The work-state connections of one store, shared by the calling threads: up to {@code size} {@link
 * KeptConnection}s, each used by one call at a time, all under the database's one outage policy, so
 * a restarted database costs a failed call per connection, not a broken process, and while the
 * database is down no call touches the network (nor waits for a connection first). Failures are
 * thrown as {@link SQLException}: callers decide whether to retry.
 *
 * <p>Why several. A worker's fetch threads each claim and record an item around every request; on
 * one connection they would queue for it, and spend more of their time waiting for the connection
 * than fetching (docs/benchmarks.md has the measurement). A connection is opened only when every
 * open one is busy, so a command that makes one call at a time keeps one connection whatever {@code
 * size} allows; a worker, whose threads all call at once from its first moment, opens them all
 * before it starts ({@link #openAll}).
 *
 * <p><b>Commit mode.</b> A worker's store commits asynchronously ({@code synchronous_commit =
 * off}): its claims and records are many small commits, and each would otherwise wait for a flush
 * of the write-ahead log (measured in docs/benchmarks.md). What a crash of the server may then
 * forget is the last few hundred milliseconds of claims, records and lease extensions; the workers
 * record again and take back what they hold on its return, so their items are neither lost nor
 * fetched twice ({@link ItemStore}'s class comment). (The embedded database runs its whole server
 * so.) What someone acts on is committed durably whatever the session's mode: an enqueue, a trip
 * and its acknowledgement, the request log's rows ({@link #durableTransaction}, {@link
 * #commitDurably}).
 *
 * <p><b>Made twice, or at most once.</b> A statement whose answer was lost with the connection
 * after it committed is made again: by {@link #call} in the same call (see {@link KeptConnection}),
 * and by a caller that retries. A statement made with {@link #call} or {@link #transaction} must
 * therefore answer what its first run did when made again: a read, an upsert of values, or a
 * statement that recognises its own earlier run by a key or token its caller chose (an enqueue, a
 * trip, a claim of an item). One that would do its work twice (a sum added to, a turn and an item
 * claimed together) is made with {@link #callOnce} or {@link #transactionOnce}, which fail with
 * {@link KeptConnection#OUTCOME_UNKNOWN} when the answer is lost; its caller then settles the doubt
 * in the direction that cannot do the work twice.
 *
 * <p>After a call finds its connection lost, the idle ones are dropped too: they were connected to
 * the same server and are most likely dead with it; the next calls open new ones, under the policy.
 */
final class StoreConnection implements AutoCloseable {

  /** A unit of work on the connection. */
  @FunctionalInterface
  interface SqlCall<T> extends KeptConnection.Work<T> {}

  private final Database database;
  private final int size;
  private final boolean asynchronousCommit;

  /** Open connections nobody is using, the most recently used first (its session is warm). */
  private final ArrayDeque<KeptConnection> idle = new ArrayDeque<>();

  /** Every connection of this store, idle or in a call. */
  private final List<KeptConnection> open = new ArrayList<>();

  StoreConnection(Database database) {
    this(database, 1, false);
  }

  /**
   * @param size the most connections open at once (at least 1)
   * @param asynchronousCommit whether the sessions commit asynchronously (see above)
   */
  StoreConnection(Database database, int size, boolean asynchronousCommit) {
    if (size < 1) {
      throw new IllegalArgumentException("a store needs at least one connection, got " + size);
    }
    this.database = database;
    this.size = size;
    this.asynchronousCommit = asynchronousCommit;
  }

  Database database() {
    return database;
  }

  /**
   * Runs {@code body}, which may be made twice, on a connection of its own for the call; see {@link
   * KeptConnection#call}. Waits while all {@code size} are busy, unless the outage policy refuses
   * every attempt now.
   */
  <T> T call(SqlCall<T> body) throws SQLException {
    return run(body, true);
  }

  /**
   * Runs {@code body}, which must not be made twice, as {@link #call} does, at most once; see
   * {@link KeptConnection#callOnce}.
   */
  <T> T callOnce(SqlCall<T> body) throws SQLException {
    return run(body, false);
  }

  private <T> T run(SqlCall<T> body, boolean mayRepeat) throws SQLException {
    OutagePolicy policy = database.outagePolicy();
    if (policy.refusesNow()) {
      throw policy.refusal();
    }
    KeptConnection connection = borrow();
    boolean lost = false;
    try {
      return mayRepeat ? connection.call(body) : connection.callOnce(body);
    } catch (SQLException e) {
      lost = OutagePolicy.isConnectionLoss(e);
      throw e;
    } finally {
      giveBack(connection, lost);
    }
  }

  /**
   * Runs {@code body} as {@link #call} does, in one transaction: committed if it returns, rolled
   * back if it throws, the connection left in autocommit either way.
   */
  <T> T transaction(SqlCall<T> body) throws SQLException {
    return call(inTransaction(body));
  }

  /** Runs {@code body} as {@link #transaction} does, at most once, as {@link #callOnce} does. */
  <T> T transactionOnce(SqlCall<T> body) throws SQLException {
    return callOnce(inTransaction(body));
  }

  private static <T> SqlCall<T> inTransaction(SqlCall<T> body) {
    return c -> {
      c.setAutoCommit(false);
      try {
        T result = body.apply(c);
        c.commit();
        return result;
      } catch (SQLException | RuntimeException e) {
        c.rollback();
        throw e;
      } finally {
        c.setAutoCommit(true);
      }
    };
  }

  /**
   * Runs {@code body} as {@link #transaction} does, its commit flushed to the write-ahead log
   * before it returns, whatever the session's commit mode.
   */
  <T> T durableTransaction(SqlCall<T> body) throws SQLException {
    return transaction(
        c -> {
          commitDurably(c);
          return body.apply(c);
        });
  }

  /** Makes the open transaction on {@code c} commit durably, whatever the session's mode. */
  static void commitDurably(java.sql.Connection c) throws SQLException {
    try (java.sql.Statement s = c.createStatement()) {
      s.execute("SET LOCAL synchronous_commit = on");
    }
  }

  /**
   * Opens connections until {@code size} are open, before they are needed: for a worker, whose
   * fetch threads all make their first calls at once as the run starts. Opened then, each would
   * cost a PostgreSQL backend's start-up (a process and its catalog caches, several milliseconds of
   * CPU each) while the first turns are being taken, and delay the requests those turns send. A
   * connection that fails to open is left for a later call to open, under the outage policy.
   *
   * @throws SQLException if a connection could not be opened (those opened before it stay open)
   */
  void openAll() throws SQLException {
    while (true) {
      KeptConnection c;
      synchronized (this) {
        if (open.size() >= size) {
          return;
        }
        c = database.keptConnection(asynchronousCommit);
        open.add(c);
      }
      boolean opened = false;
      try {
        c.open();
        opened = true;
      } finally {
        synchronized (this) {
          if (opened && open.contains(c)) {
            idle.addLast(c);
            notify();
          } else {
            open.remove(c);
            c.release();
            notifyAll();
          }
        }
      }
    }
  }

  /** The most connections this store may open at once. */
  int size() {
    return size;
  }

  private synchronized KeptConnection borrow() throws SQLException {
    while (true) {
      KeptConnection c = idle.pollFirst();
      if (c != null) {
        return c;
      }
      if (open.size() < size) {
        c = database.keptConnection(asynchronousCommit);
        open.add(c);
        return c;
      }
      try {
        wait();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new SQLException("interrupted while waiting for a work-state connection", "57014", e);
      }
    }
  }

  private synchronized void giveBack(KeptConnection c, boolean lost) {
    if (lost) {
      for (KeptConnection other : idle) {
        open.remove(other);
        other.release();
      }
      idle.clear();
    }
    if (open.contains(c)) {
      idle.addFirst(c);
    } else {
      c.release(); // the store was closed while this call ran
    }
    if (lost) {
      notifyAll(); // room for new connections, not only this one
    } else {
      notify();
    }
  }

  /** Gives the connections back, each as its call ends; a later call opens another. */
  @Override
  public synchronized void close() {
    for (KeptConnection c : idle) {
      c.release();
    }
    idle.clear();
    open.clear();
    notifyAll();
  }
}
