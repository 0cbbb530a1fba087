package dev.pacer.spi;

import java.util.Objects;

/**
 * Where a destination's fleet-wide concurrency slots live, for destinations built with {@link
 * dev.pacer.Destination.Builder#maxConcurrencyFleetWide(int)}: {@code n} numbered slots per
 * destination, each held by at most one request anywhere in the fleet. The PostgreSQL
 * implementation in {@code pacer-postgres} keeps them as expiring leases in a table, so that a slot
 * whose holder died without giving it back is free again within a bounded time.
 *
 * <p>{@link #tryTake} never waits for a slot and never throws: it answers with a {@link Claim}, a
 * value that says taken, full or unavailable. The waiting, and what a process does while the store
 * is unavailable, are the limiter's (see {@code FleetCap} in {@code dev.pacer}). A destination
 * without the cap never calls these methods.
 *
 * <p>Implementations must be safe for concurrent use by many threads.
 */
public interface FleetSlots {

  /**
   * Takes one of the {@code slots} slots of {@code destination} if one is free now (never held,
   * given back, or its lease run out); otherwise answers {@link Claim#full()}, or {@link
   * Claim#unavailable()} when the store cannot be asked. At most one round trip; never throws.
   *
   * @param destination the destination's name
   * @param slots how many slots the destination has, its fleet-wide cap
   * @return a taken slot, full, or unavailable
   */
  Claim tryTake(String destination, int slots);

  /** A slot taken by this process; hold it while the request is in flight. */
  interface Lease {

    /**
     * Which of the destination's slots, 0 to n - 1.
     *
     * @return the slot's number
     */
    int slot();

    /**
     * Gives the slot back. Never throws: a slot that could not be given back (the store away) is
     * freed when its lease runs out. Giving back twice is the same as once.
     */
    void giveBack();
  }

  /** What {@link #tryTake} answers: a taken slot, a full set, or an unavailable store. */
  final class Claim {

    /** The three kinds of answer. */
    public enum Outcome {
      /** A slot was taken: {@link #lease()} holds it. */
      TAKEN,
      /** Every slot is held. */
      FULL,
      /** The store could not be asked. */
      UNAVAILABLE
    }

    private static final Claim FULL = new Claim(Outcome.FULL, null);
    private static final Claim UNAVAILABLE = new Claim(Outcome.UNAVAILABLE, null);

    private final Outcome outcome;
    private final Lease lease;

    private Claim(Outcome outcome, Lease lease) {
      this.outcome = outcome;
      this.lease = lease;
    }

    /**
     * A slot was taken.
     *
     * @param lease the slot
     * @return a claim holding it
     */
    public static Claim taken(Lease lease) {
      return new Claim(Outcome.TAKEN, Objects.requireNonNull(lease, "lease"));
    }

    /**
     * Every slot is held by a live lease; nothing was taken.
     *
     * @return the full claim
     */
    public static Claim full() {
      return FULL;
    }

    /**
     * The store could not be asked; nothing was taken.
     *
     * @return the unavailable claim
     */
    public static Claim unavailable() {
      return UNAVAILABLE;
    }

    /**
     * What kind of answer this is.
     *
     * @return the outcome
     */
    public Outcome outcome() {
      return outcome;
    }

    /**
     * The slot taken.
     *
     * @return the lease
     * @throws IllegalStateException unless taken
     */
    public Lease lease() {
      if (outcome != Outcome.TAKEN) {
        throw new IllegalStateException("no lease: the claim was " + outcome);
      }
      return lease;
    }

    @Override
    public String toString() {
      return outcome == Outcome.TAKEN ? "TAKEN(slot " + lease.slot() + ")" : outcome.name();
    }
  }
}
