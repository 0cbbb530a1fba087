package dev.pacer.cli.run;

import dev.pacer.cli.db.Database;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.util.Optional;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One of a destination's {@code maxDispatches} fleet-wide conveyor slots: a PostgreSQL session
 * advisory lock {@code (hashtext('pacer-dispatch:' || destination), slot)} held on a dedicated
 * connection for as long as the worker runs. Every host using the same database sees the same
 * locks, so the cap holds across hosts; a worker that dies (even by kill -9) loses its connection
 * and with it the slot. Its connections are opened by {@link Database#open()}, under the database's
 * outage policy: while PostgreSQL is down a slot is not asked for, and costs no connection attempt.
 */
public final class DispatchSlot implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(DispatchSlot.class);

  private final Connection connection;
  /** The server session holding the lock: its backend pid and start time identify it. */
  private final int backendPid;
  private final Timestamp backendStart;

  private DispatchSlot(Connection connection) throws SQLException {
    this.connection = connection;
    try (PreparedStatement s = connection.prepareStatement(
            "SELECT pid, backend_start FROM pg_stat_activity WHERE pid = pg_backend_pid()");
        ResultSet r = s.executeQuery()) {
      r.next();
      this.backendPid = r.getInt(1);
      this.backendStart = r.getTimestamp(2);
    }
  }

  /**
   * Waits for a free slot, polling every second, until one is taken or {@code giveUp} says the
   * wait is pointless (for example the job has no work left). That all slots are taken is logged
   * once, and so is PostgreSQL failing to answer.
   */
  public static Optional<DispatchSlot> acquire(Database db, String destination, int maxDispatches,
      BooleanSupplier giveUp) throws InterruptedException {
    return waitForSlot(db, destination, maxDispatches, giveUp, Optional.empty());
  }

  /**
   * Waits for a slot again, as {@link #acquire} does, once this one's lock is gone ({@link
   * #isHeld} false): first this slot's session is ended if it outlived the worker's view of it
   * ({@link #endAbandonedSession}), so that the worker does not wait for a lock it holds itself.
   */
  public Optional<DispatchSlot> takeAgain(Database db, String destination, int maxDispatches,
      BooleanSupplier giveUp) throws InterruptedException {
    close();
    return waitForSlot(db, destination, maxDispatches, giveUp, Optional.of(this));
  }

  private static Optional<DispatchSlot> waitForSlot(Database db, String destination,
      int maxDispatches, BooleanSupplier giveUp, Optional<DispatchSlot> lost)
      throws InterruptedException {
    boolean lostSessionEnded = lost.isEmpty();
    boolean announced = false;
    boolean unreachableAnnounced = false;
    while (true) {
      try {
        if (!lostSessionEnded) {
          lost.get().endAbandonedSession(db);
          lostSessionEnded = true;
        }
        Optional<DispatchSlot> slot = tryAcquire(db, destination, maxDispatches);
        if (slot.isPresent()) {
          return slot;
        }
        if (!announced) {
          log.info("All {} dispatch slots of destination {} are taken; waiting for one",
              maxDispatches, destination);
          announced = true;
        }
      } catch (SQLException e) {
        if (!unreachableAnnounced) {
          log.warn("Could not ask PostgreSQL for a dispatch slot ({}); retrying", db.describe(e));
          unreachableAnnounced = true;
        }
      }
      if (giveUp.getAsBoolean()) {
        return Optional.empty();
      }
      Thread.sleep(1000);
    }
  }

  /** One pass over the slots: the first free one, or empty if all are held. */
  private static Optional<DispatchSlot> tryAcquire(Database db, String destination,
      int maxDispatches) throws SQLException {
    Connection c = db.open();
    try (PreparedStatement s = c.prepareStatement("SELECT pg_try_advisory_lock(hashtext(?), ?)")) {
      for (int slot = 0; slot < maxDispatches; slot++) {
        s.setString(1, "pacer-dispatch:" + destination);
        s.setInt(2, slot);
        try (ResultSet r = s.executeQuery()) {
          r.next();
          if (r.getBoolean(1)) {
            log.info("Holding dispatch slot {} of {} for destination {}", slot + 1,
                maxDispatches, destination);
            DispatchSlot taken = new DispatchSlot(c);
            c = null;
            return Optional.of(taken);
          }
        }
      }
      return Optional.empty();
    } finally {
      closeQuietly(c);
    }
  }

  /**
   * Whether the session holding the lock is still there. After a PostgreSQL restart it is not:
   * the lock went with it, and the worker must take a slot again ({@link #takeAgain}) before it
   * fetches again.
   */
  public boolean isHeld() {
    try {
      return connection.isValid(2);
    } catch (SQLException e) {
      return false;
    }
  }

  /**
   * Ends this slot's server session if it is still there. When the network to PostgreSQL hangs
   * (rather than the server restarting) the session outlives the worker's view of it and keeps
   * the lock, so the worker would find every slot held, one of them by itself. Only this very
   * session is ended: the same backend pid and start time.
   */
  private void endAbandonedSession(Database db) throws SQLException {
    try (Connection c = db.open();
        PreparedStatement s = c.prepareStatement("SELECT pg_terminate_backend(pid, 5000)"
            + " FROM pg_stat_activity WHERE pid = ? AND backend_start = ?")) {
      s.setInt(1, backendPid);
      s.setTimestamp(2, backendStart);
      try (ResultSet r = s.executeQuery()) {
        if (r.next() && r.getBoolean(1)) {
          log.info("Ended this worker's abandoned session (pid {}) that still held its dispatch"
              + " slot", backendPid);
        }
      }
    }
  }

  @Override
  public void close() {
    closeQuietly(connection);
  }

  private static void closeQuietly(Connection c) {
    if (c == null) {
      return;
    }
    try {
      c.close();
    } catch (SQLException ignored) {
      // Closing the session releases its advisory locks; a dead connection already has.
    }
  }
}
