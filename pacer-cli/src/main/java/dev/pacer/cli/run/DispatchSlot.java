package dev.pacer.cli.run;

import dev.pacer.postgres.PostgresFleetSlots;
import dev.pacer.spi.FleetSlots;
import java.util.Optional;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One of a destination's {@code maxDispatches} fleet-wide conveyor slots, held for as long as the
 * worker runs: a fleet slot lease ({@link PostgresFleetSlots}, the same table and renewal as the
 * destinations' fleet concurrency caps) under the key {@link #key}. Every host using the same
 * database sees the same leases, so the cap holds across hosts, and behind a transaction pooler
 * too, since a lease belongs to its token and not to a server session. A worker that dies (even by
 * kill -9) stops renewing, and its slot is free within one lease. The slots ask PostgreSQL under
 * the database's outage policy: while PostgreSQL is down a slot is not asked for, and costs no
 * connection attempt.
 */
public final class DispatchSlot implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(DispatchSlot.class);

  private final PostgresFleetSlots slots;
  private final FleetSlots.Lease lease;

  private DispatchSlot(PostgresFleetSlots slots, FleetSlots.Lease lease) {
    this.slots = slots;
    this.lease = lease;
  }

  /**
   * The fleet slot key of a destination's dispatch slots. No destination name holds whitespace, so
   * the key is never a destination's own, whose fleet concurrency slots live in the same table.
   */
  public static String key(String destination) {
    return "pacer-dispatch " + destination;
  }

  /**
   * Waits for a free slot, polling every second, until one is taken or {@code giveUp} says the wait
   * is pointless (for example the job has no work left). That all slots are taken is logged once,
   * and so is PostgreSQL failing to answer.
   */
  public static Optional<DispatchSlot> acquire(
      PostgresFleetSlots slots, String destination, int maxDispatches, BooleanSupplier giveUp)
      throws InterruptedException {
    boolean announced = false;
    boolean unreachableAnnounced = false;
    while (true) {
      FleetSlots.Claim claim = slots.tryTake(key(destination), maxDispatches);
      switch (claim.outcome()) {
        case TAKEN -> {
          log.info(
              "Holding dispatch slot {} of {} for destination {}",
              claim.lease().slot() + 1,
              maxDispatches,
              destination);
          return Optional.of(new DispatchSlot(slots, claim.lease()));
        }
        case FULL -> {
          if (!announced) {
            log.info(
                "All {} dispatch slots of destination {} are taken; waiting for one",
                maxDispatches,
                destination);
            announced = true;
          }
        }
        case UNAVAILABLE -> {
          if (!unreachableAnnounced) {
            log.warn(
                "Could not ask PostgreSQL for a dispatch slot of destination {}; retrying",
                destination);
            unreachableAnnounced = true;
          }
        }
      }
      if (giveUp.getAsBoolean()) {
        return Optional.empty();
      }
      Thread.sleep(1000);
    }
  }

  /**
   * Gives this slot back and waits for one again, as {@link #acquire} does: once its lease is no
   * longer certainly held ({@link #isHeld} false), another worker may hold the slot.
   */
  public Optional<DispatchSlot> takeAgain(
      String destination, int maxDispatches, BooleanSupplier giveUp) throws InterruptedException {
    close();
    return acquire(slots, destination, maxDispatches, giveUp);
  }

  /**
   * Whether the slot is still this worker's: its lease was renewed within the last lease and never
   * went to another worker. After an outage longer than a lease it may not be, and the worker must
   * take a slot again ({@link #takeAgain}) before it fetches again. Asks nothing of PostgreSQL.
   */
  public boolean isHeld() {
    return slots.holds(lease);
  }

  /** Gives the slot back; if PostgreSQL cannot be told, its lease runs out. */
  @Override
  public void close() {
    lease.giveBack();
  }
}
