package dev.pacer.postgres;

import dev.pacer.postgres.internal.ConcurrentCreate;
import dev.pacer.postgres.internal.FleetSlotSql;
import dev.pacer.spi.FleetSlots;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Fleet-wide concurrency slots as expiring leases in a PostgreSQL table ({@code pacer_fleet_slot};
 * the statements and their reasoning are in {@code FleetSlotSql}). A take is one statement, a give
 * back another: a capped request costs two round trips on top of its turn.
 *
 * <p><b>Leases, not session locks.</b> A slot is a row holding its holder's token and an expiry on
 * the database's clock, {@link #lease()} ahead (10 s by default). While this process holds slots,
 * one daemon thread renews all of them in one statement every quarter lease. A process killed with
 * {@code -9} renews nothing more, so each of its slots is free at most one lease after its last
 * renewal, and so <em>at most one lease after the kill</em>; a waiter takes it at its next poll
 * (every 40 ms at most). A session advisory lock would be held for as long as the server believes
 * the session alive, which a hung network or a half-open TCP connection can stretch to the kernel's
 * keepalive timeouts. The other side of a lease: a holder that cannot renew for a whole lease (its
 * database away while its request still runs) loses the slot, and another process may take it while
 * that request is still in flight. {@link #holds} tells a holder that must not go on without its
 * slot (the CLI's dispatch slots) whether it may still count on it.
 *
 * <p><b>Its own connection.</b> The slots keep one connection of their own ({@link
 * KeptConnection}), under the database's {@link OutagePolicy}, shared with the cursor, opened at
 * the first take. Polls for a slot come from every waiting thread at up to 200 a second each; on
 * the cursor's connection they would queue in front of reservations and make turns late. Nor do
 * they share the caller's other connections: a renewal is bounded by the operation timeout so that
 * a lease is renewed well within itself, and queued behind statements with wider bounds it could
 * lapse while its holder still runs. One more connection per process is the price, and only for a
 * process that takes slots; every holder in the process shares it, whatever its slots are for.
 *
 * <p><b>Every statement may be made twice.</b> A take names itself by a token chosen before it is
 * made, and a take made again with that token (its first answer lost with the connection after it
 * committed: {@link KeptConnection#call} makes it again) answers the slot it took instead of taking
 * another (see {@code FleetSlotSql}); a give back frees only its token's slot, and a renewal made
 * twice only renews twice.
 *
 * <p>Failures: while the policy holds the database down, {@link #tryTake} answers {@link
 * Claim#unavailable()} without touching the network (the limiter then keeps its local share in
 * flight); a statement that fails answers unavailable too, and one that means the database cannot
 * be used now ({@link OutagePolicy#isUnavailable}: a lost connection, too many connections, a
 * read-only server) tells the policy, so that the polls wait for its next boundary. A give back or
 * renewal that fails is logged at DEBUG: the lease runs out by itself.
 */
public final class PostgresFleetSlots implements FleetSlots, AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(PostgresFleetSlots.class);

  /** How long a slot outlives its holder's last renewal, unless given another. */
  public static final Duration DEFAULT_LEASE = Duration.ofSeconds(10);

  private final PostgresCursorConfig config;
  private final FleetSlotSql sql = new FleetSlotSql(FleetSlotSql.DEFAULT_TABLE);
  private final OutagePolicy policy;
  private final String holder;
  private final long leaseMillis;
  private final int timeoutMillis;
  private final KeptConnection session;
  private final ReentrantLock connectionLock = new ReentrantLock();

  /** {@link #connectionLock} as {@link ConnectionGuard} takes it: until free or interrupted. */
  private final ConnectionGuard.Lock connectionLockInterruptibly =
      new ConnectionGuard.Lock() {
        @Override
        public boolean take() throws InterruptedException {
          connectionLock.lockInterruptibly();
          return true;
        }

        @Override
        public void release() {
          connectionLock.unlock();
        }
      };

  private final Set<PgLease> held = ConcurrentHashMap.newKeySet();
  private ScheduledExecutorService renewal;
  private boolean tableEnsured;

  /** What the server behind the session keeps; set with each connection opened. */
  private volatile ServerSession server = ServerSession.OWN;

  private volatile boolean closed;

  /**
   * Fleet slots in {@code pacer_fleet_slot}, on a connection of their own.
   *
   * @param config where the database is and how long an operation may take (its layout and outage
   *     policy are the cursor's business and ignored here)
   * @param policy the database's outage policy, the one the cursor answers to
   * @param holder what {@code pacer_fleet_slot.holder} says of this process (host and pid, say)
   * @param lease how long a slot outlives its last renewal: the bound on a dead holder's slots
   */
  public PostgresFleetSlots(
      PostgresCursorConfig config, OutagePolicy policy, String holder, Duration lease) {
    if (lease == null || lease.compareTo(Duration.ofMillis(400)) < 0) {
      throw new IllegalArgumentException("lease must be >= 400 ms, got " + lease);
    }
    this.config = Objects.requireNonNull(config, "config");
    this.policy = Objects.requireNonNull(policy, "policy");
    this.holder = Objects.requireNonNull(holder, "holder");
    this.leaseMillis = lease.toMillis();
    this.timeoutMillis =
        (int) Math.max(1, Math.min(Integer.MAX_VALUE, config.operationTimeout().toMillis()));
    this.session =
        new KeptConnection(
            policy,
            this::openSession,
            e -> false,
            config.dataSource() != null,
            config.operationTimeout().dividedBy(2));
  }

  /**
   * Slots on the cursor's database, under the cursor's outage policy, with the default lease.
   *
   * @param cursor the cursor whose database and outage policy the slots use
   * @param holder who holds the slots, as {@code status} shows it
   * @return the fleet slots
   */
  public static PostgresFleetSlots sharing(PostgresCursor cursor, String holder) {
    return new PostgresFleetSlots(cursor.config(), cursor.outagePolicy(), holder, DEFAULT_LEASE);
  }

  @Override
  public Claim tryTake(String destination, int slots) {
    if (closed || policy.refusesNow()) {
      return Claim.unavailable();
    }
    try {
      return ConnectionGuard.run(
          connectionLockInterruptibly,
          () -> closed,
          () -> {
            UUID token = UUID.randomUUID();
            long sent = System.nanoTime();
            Integer slot = session.call(c -> take(c, destination, slots, token));
            if (slot == null) {
              return Claim.full();
            }
            PgLease lease = new PgLease(destination, slot, token, sent + leaseNanos());
            held.add(lease);
            startRenewal();
            return Claim.taken(lease);
          },
          why -> Claim.unavailable());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return Claim.unavailable();
    } catch (SQLException e) {
      log.debug(
          "Taking a fleet slot of {} failed: {} [SQLState {}]",
          destination,
          e.getMessage(),
          e.getSQLState());
      return Claim.unavailable();
    } catch (RuntimeException e) {
      // A take answers with a value, whatever the driver or a pool throws.
      log.warn("Taking a fleet slot of {} threw", destination, e);
      return Claim.unavailable();
    }
  }

  /**
   * How long a slot outlives its holder's last renewal.
   *
   * @return the lease
   */
  public Duration lease() {
    return Duration.ofMillis(leaseMillis);
  }

  /**
   * Whether {@code lease}, taken here and not given back, is still this process's for certain: its
   * last take or renewal that answered was sent less than one lease ago (the database's expiry is
   * later still), and no renewal found its slot taken by another holder. False for a lease not
   * taken here. Asks nothing of the database.
   *
   * @param lease a lease this instance's {@link #tryTake} answered
   * @return whether no other process can hold its slot now
   */
  public boolean holds(Lease lease) {
    return lease instanceof PgLease mine
        && held.contains(mine)
        && System.nanoTime() - mine.heldUntilNanos < 0;
  }

  /**
   * Slots this process holds now.
   *
   * @return the number of slots held
   */
  public int heldByThisProcess() {
    return held.size();
  }

  /**
   * Live leases per destination, read on {@code c} (for a status display); none if no table.
   *
   * @param c a connection to the database
   * @return the live leases per destination
   * @throws SQLException if they cannot be read
   */
  public static List<Holding> holdings(Connection c) throws SQLException {
    List<Holding> out = new ArrayList<>();
    try (PreparedStatement s =
            c.prepareStatement(new FleetSlotSql(FleetSlotSql.DEFAULT_TABLE).holdings());
        ResultSet r = s.executeQuery()) {
      while (r.next()) {
        out.add(new Holding(r.getString(1), r.getInt(2), r.getInt(3)));
      }
    } catch (SQLException e) {
      if (!"42P01".equals(e.getSQLState())) {
        throw e;
      }
    }
    return out;
  }

  /**
   * A destination's slots held under live leases, by how many distinct holders.
   *
   * @param destination the destination's name
   * @param slotsHeld the slots held
   * @param holders the distinct processes holding them
   */
  public record Holding(String destination, int slotsHeld, int holders) {}

  /**
   * Gives back every slot still held, stops renewing and closes the connection. Later takes answer
   * unavailable.
   */
  @Override
  public void close() {
    closed = true;
    synchronized (this) {
      if (renewal != null) {
        renewal.shutdownNow();
      }
    }
    connectionLock.lock();
    try {
      List<PgLease> left = new ArrayList<>(held);
      held.clear();
      if (!left.isEmpty() && !policy.refusesNow()) {
        try {
          session.call(
              c -> {
                for (PgLease lease : left) {
                  giveBack(c, lease);
                }
                return null;
              });
        } catch (SQLException e) {
          log.debug(
              "Could not give back {} fleet slot(s) at close; their leases run out: {}",
              left.size(),
              e.getMessage());
        }
      }
      session.close();
    } finally {
      connectionLock.unlock();
    }
  }

  private Integer take(Connection c, String destination, int slots, UUID token)
      throws SQLException {
    try (PreparedStatement s = server.prepare(c, sql.take(), timeoutMillis)) {
      s.setString(1, destination);
      s.setInt(2, slots);
      s.setString(3, holder);
      s.setObject(4, token);
      s.setLong(5, leaseMillis);
      try (ResultSet r = s.executeQuery()) {
        return r.next() ? r.getInt(1) : null;
      }
    }
  }

  private void giveBack(Connection c, PgLease lease) throws SQLException {
    try (PreparedStatement s = server.prepare(c, sql.giveBack(), timeoutMillis)) {
      s.setString(1, lease.destination);
      s.setInt(2, lease.slot);
      s.setObject(3, lease.token);
      s.executeUpdate();
    }
  }

  private synchronized void startRenewal() {
    if (renewal != null || closed) {
      return;
    }
    renewal =
        Executors.newSingleThreadScheduledExecutor(
            r -> {
              Thread t = new Thread(r, "pacer-fleet-slot-renewal");
              t.setDaemon(true);
              return t;
            });
    long every = Math.max(100, leaseMillis / 4);
    renewal.scheduleWithFixedDelay(this::renew, every, every, TimeUnit.MILLISECONDS);
  }

  /**
   * Extends every held slot's lease by one lease from now, in one statement. A lease the statement
   * did not renew is no longer held: another holder took its slot after it ran out.
   */
  private void renew() {
    if (held.isEmpty() || closed || policy.refusesNow()) {
      return;
    }
    connectionLock.lock();
    List<PgLease> leases = List.of();
    try {
      leases = List.copyOf(held);
      if (leases.isEmpty()) {
        return;
      }
      Object[] tokens = leases.stream().map(l -> l.token).toArray();
      long sent = System.nanoTime();
      Set<UUID> renewed =
          session.call(
              c -> {
                try (PreparedStatement s = server.prepare(c, sql.renew(), timeoutMillis)) {
                  s.setLong(1, leaseMillis);
                  s.setArray(2, c.createArrayOf("uuid", tokens));
                  Set<UUID> answered = new HashSet<>();
                  try (ResultSet r = s.executeQuery()) {
                    while (r.next()) {
                      answered.add(r.getObject(1, UUID.class));
                    }
                  }
                  return answered;
                }
              });
      for (PgLease lease : leases) {
        if (renewed.contains(lease.token)) {
          lease.heldUntilNanos = sent + leaseNanos();
        } else if (held.remove(lease)) {
          log.info(
              "Fleet slot {} of {} is no longer this process's: the database no longer holds"
                  + " its lease (it ran out unrenewed and another holder took the slot, or a crash"
                  + " lost it)",
              lease.slot,
              lease.destination);
        }
      }
    } catch (SQLException e) {
      log.debug("Renewing {} fleet slot lease(s) failed: {}", leases.size(), e.getMessage());
    } catch (RuntimeException e) {
      // The renewal thread must survive anything: a dead one would let every lease run out.
      log.warn("Renewing fleet slot leases threw", e);
    } finally {
      connectionLock.unlock();
    }
  }

  private long leaseNanos() {
    return TimeUnit.MILLISECONDS.toNanos(leaseMillis);
  }

  private Connection openSession() throws SQLException {
    Connection fresh =
        config.openConnection(
            config.operationTimeout().toNanos(), PostgresCursorConfig.SLOTS_CONNECTION);
    try {
      fresh.setAutoCommit(true);
      fresh.setNetworkTimeout(Runnable::run, timeoutMillis);
      server = ServerSession.probe(fresh);
      try (Statement s = fresh.createStatement()) {
        server.set(
            s,
            Map.of(
                "statement_timeout",
                Integer.toString(timeoutMillis),
                "lock_timeout",
                Integer.toString(timeoutMillis),
                "synchronous_commit",
                config.synchronousCommit() ? "on" : "off"));
        if (!tableEnsured) {
          createTable(s);
        }
      }
      return fresh;
    } catch (SQLException e) {
      try {
        fresh.close();
      } catch (SQLException ignored) {
        // Thrown away because it failed; its close may fail the same way.
      }
      throw e;
    }
  }

  private void createTable(Statement s) throws SQLException {
    ConcurrentCreate.execute(s, sql.createTable());
    tableEnsured = true;
  }

  @Override
  public String toString() {
    return "PostgresFleetSlots{" + sql + ", lease " + leaseMillis + " ms}";
  }

  private final class PgLease implements Lease {
    private final String destination;
    private final int slot;
    private final UUID token;
    private final AtomicBoolean given = new AtomicBoolean();

    /** Before this {@link System#nanoTime()} no other holder can take the slot. */
    private volatile long heldUntilNanos;

    PgLease(String destination, int slot, UUID token, long heldUntilNanos) {
      this.destination = destination;
      this.slot = slot;
      this.token = token;
      this.heldUntilNanos = heldUntilNanos;
    }

    @Override
    public int slot() {
      return slot;
    }

    @Override
    public void giveBack() {
      if (!given.compareAndSet(false, true) || !held.remove(this)) {
        return;
      }
      if (closed || policy.refusesNow()) {
        return;
      }
      connectionLock.lock();
      try {
        session.call(
            c -> {
              PostgresFleetSlots.this.giveBack(c, this);
              return null;
            });
      } catch (SQLException e) {
        log.debug(
            "Giving back fleet slot {} of {} failed; its lease runs out: {}",
            slot,
            destination,
            e.getMessage());
      } catch (RuntimeException e) {
        log.warn("Giving back fleet slot {} of {} threw; its lease runs out", slot, destination, e);
      } finally {
        connectionLock.unlock();
      }
    }
  }
}
