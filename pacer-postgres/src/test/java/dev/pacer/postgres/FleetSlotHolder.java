package dev.pacer.postgres;

import dev.pacer.spi.FleetSlots;
import java.time.Duration;

/**
 * A process that takes fleet slots and holds them until it is killed, run as its own JVM by {@link
 * PostgresFleetSlotsTest}: prints {@code TAKEN <slot>} for each, then {@code HOLDING}, and sleeps.
 *
 * <p>Arguments: {@code jdbcUrl destination slots count leaseMillis}.
 */
public final class FleetSlotHolder {

  public static void main(String[] args) throws Exception {
    PostgresCursorConfig config = PostgresCursorConfig.forUrl(args[0]).build();
    OutagePolicy policy =
        new OutagePolicy(
            "holder",
            Duration.ofSeconds(5),
            dev.pacer.TimeSource.SYSTEM,
            OutagePolicy.Scheduler.none(),
            () -> {});
    PostgresFleetSlots slots =
        new PostgresFleetSlots(
            config,
            policy,
            "holder:" + ProcessHandle.current().pid(),
            Duration.ofMillis(Long.parseLong(args[4])));
    for (int i = 0; i < Integer.parseInt(args[3]); i++) {
      FleetSlots.Claim claim = slots.tryTake(args[1], Integer.parseInt(args[2]));
      System.out.println("TAKEN " + claim.lease().slot());
    }
    System.out.println("HOLDING");
    System.out.flush();
    Thread.sleep(Long.MAX_VALUE);
  }
}
