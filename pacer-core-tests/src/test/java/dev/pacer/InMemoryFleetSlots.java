package dev.pacer;

import dev.pacer.spi.FleetSlots;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * {@link FleetSlots} in this JVM's memory, for unit tests: one store shared by several registries
 * stands for the fleet's table. Leases never expire. It can be made unavailable, and counts every
 * call, so that a test sees what a limiter asked of it.
 */
public final class InMemoryFleetSlots implements FleetSlots {

  private final Map<String, boolean[]> held = new HashMap<>();
  private boolean unavailable;
  private int takes;
  private int giveBacks;

  @Override
  public synchronized Claim tryTake(String destination, int slots) {
    takes++;
    if (unavailable) {
      return Claim.unavailable();
    }
    boolean[] taken = held.computeIfAbsent(destination, d -> new boolean[slots]);
    for (int slot = 0; slot < Math.min(slots, taken.length); slot++) {
      if (!taken[slot]) {
        taken[slot] = true;
        return Claim.taken(lease(destination, slot));
      }
    }
    return Claim.full();
  }

  private Lease lease(String destination, int slot) {
    AtomicBoolean given = new AtomicBoolean();
    return new Lease() {
      @Override
      public int slot() {
        return slot;
      }

      @Override
      public void giveBack() {
        if (given.compareAndSet(false, true)) {
          synchronized (InMemoryFleetSlots.this) {
            giveBacks++;
            held.get(destination)[slot] = false;
          }
        }
      }
    };
  }

  public synchronized void setUnavailable(boolean unavailable) {
    this.unavailable = unavailable;
  }

  /** Slots of {@code destination} held now. */
  public synchronized int held(String destination) {
    int n = 0;
    for (boolean b : held.getOrDefault(destination, new boolean[0])) {
      n += b ? 1 : 0;
    }
    return n;
  }

  /** Calls of {@link #tryTake} so far, whatever they answered. */
  public synchronized int takes() {
    return takes;
  }

  public synchronized int giveBacks() {
    return giveBacks;
  }
}
