package dev.pacer.cli.run;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.cli.db.FrontierStore.Claim;
import dev.pacer.cli.db.ItemStore.Item;
import java.time.Duration;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** The per-host claims' tally: which answers count as empty while a host was eligible. */
class ClaimTallyTest {

  @Test
  void contendedRefusedAndLostAreEmptyWhileAHostWasEligibleAndIdleOrHeldAreNot() {
    ClaimTally tally = new ClaimTally();
    tally.count(
        new Claim.Claimed(new Item("j", "k", "http://a/", 0, 0, "t"), "a", 1, Duration.ZERO, 1));
    tally.count(new Claim.Idle(Optional.of(Duration.ofMillis(5)), false, false));
    tally.count(new Claim.Idle(Optional.empty(), true, false));
    tally.count(new Claim.Idle(Optional.empty(), true, true));
    tally.count(new Claim.Refused("a"));
    tally.count(new Claim.Lost("a"));
    tally.count(new Claim.LockedOut("b", "403"));

    assertThat(tally.made()).isEqualTo(7);
    assertThat(tally.emptyWhileEligible()).isEqualTo(3);
    assertThat(tally.describe())
        .isEqualTo(
            "Claims: 7 made, 1 leased an item, 1 found no host due, 3 came back empty while a host"
                + " was eligible (1 contended, 1 refused, 1 lost), 1 found the due hosts held, 1"
                + " met a lockout");
  }
}
