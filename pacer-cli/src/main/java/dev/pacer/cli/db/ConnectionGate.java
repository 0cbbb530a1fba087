package dev.pacer.cli.db;

import java.sql.SQLException;
import java.time.Instant;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/**
 * One per process and database: after a failed connection attempt, no new connection is attempted
 * until the next retry boundary, whoever asks (the fleet-wide cursor, the work-state store, the
 * dispatch slot). An outage therefore costs this process one connection attempt per cooldown, not
 * one per component or per fetch thread.
 *
 * <p>Retry boundaries are the multiples of the cooldown on the wall clock, at least a whole cooldown
 * after the failure: the PostgreSQL cursor's own rule, so that the cursor's retry finds the gate
 * open and every process of the fleet returns at the same instants. At a boundary one attempt (a
 * probe) goes through; others are refused while it is in flight. While the database is up the gate
 * is open and attempts are never refused.
 */
public final class ConnectionGate {

  private final long cooldownMillis;
  private final LongSupplier epochMillis;
  private final AtomicLong attempts = new AtomicLong();
  private long latchedUntil = -1;
  private boolean probing;

  public ConnectionGate(long cooldownMillis, LongSupplier epochMillis) {
    this.cooldownMillis = cooldownMillis;
    this.epochMillis = epochMillis;
  }

  /** The default: 5-s cooldown on the system clock. */
  public static ConnectionGate standard() {
    return new ConnectionGate(5000, System::currentTimeMillis);
  }

  /**
   * Call before connecting.
   *
   * @throws SQLException (SQLState 08001) without touching the network while latched
   */
  public synchronized void beforeAttempt() throws SQLException {
    if (latchedUntil >= 0) {
      if (probing || epochMillis.getAsLong() < latchedUntil) {
        throw new SQLException("PostgreSQL was unreachable; next connection attempt at "
            + Instant.ofEpochMilli(latchedUntil) + " (one attempt per " + cooldownMillis
            + " ms per process)", "08001");
      }
      probing = true;
    }
    attempts.incrementAndGet();
  }

  public synchronized void succeeded() {
    latchedUntil = -1;
    probing = false;
  }

  /**
   * After a first failure the next boundary at least a cooldown away; after a failed probe,
   * the boundary one cooldown after the one it was let through at, even if it ran late, so that
   * this process never skips a boundary and falls a cooldown out of step with the fleet.
   */
  public synchronized void failed() {
    probing = false;
    long now = epochMillis.getAsLong();
    latchedUntil = latchedUntil < 0
        ? ceilToMultiple(now + cooldownMillis)
        : Math.max(latchedUntil + cooldownMillis, ceilToMultiple(now + 1));
  }

  private long ceilToMultiple(long value) {
    return Math.floorDiv(value + cooldownMillis - 1, cooldownMillis) * cooldownMillis;
  }

  /** Connection attempts let through so far. */
  public long attempts() {
    return attempts.get();
  }
}
