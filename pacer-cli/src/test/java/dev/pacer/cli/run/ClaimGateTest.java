package dev.pacer.cli.run;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.FakeTime;
import dev.pacer.cli.db.FrontierStore.Claim;
import dev.pacer.cli.db.ItemStore.Item;
import java.time.Duration;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** The per-host worker's claim gate, on a fake clock: what each thread at it is told to do. */
class ClaimGateTest {

  private static final ClaimGate.Pass GO = new ClaimGate.Pass.Go();
  private static final ClaimGate.Pass WAIT = new ClaimGate.Pass.Wait();

  private final FakeTime time = new FakeTime();

  private static Claim claimed() {
    return new Claim.Claimed(new Item("j", "k", "http://a/", 0, 0, "t"), "a", 1, Duration.ZERO, 1);
  }

  private static Claim idle(long wakeMillis, boolean held) {
    return new Claim.Idle(wakeMillis < 0 ? Optional.empty()
        : Optional.of(Duration.ofMillis(wakeMillis)), held);
  }

  private static ClaimGate.Pass sleep(long millis) {
    return new ClaimGate.Pass.Sleep(Duration.ofMillis(millis).toNanos());
  }

  @Test
  void theFirstClaimGoesAloneAndEachThatFindsAHostLetsTwoGo() {
    ClaimGate gate = new ClaimGate(time, 8);
    assertThat(gate.pass()).isEqualTo(GO);
    assertThat(gate.pass()).as("the first claim is in flight").isEqualTo(WAIT);
    gate.answered(claimed());
    assertThat(gate.pass()).as("its thread's next claim").isEqualTo(GO);
    assertThat(gate.pass()).as("and one more: another host may be due").isEqualTo(GO);
    assertThat(gate.pass()).isEqualTo(WAIT);
  }

  @Test
  void theWidthDoublesWithEachRoundThatFindsHostsUntilEveryThreadClaims() {
    ClaimGate gate = new ClaimGate(time, 8);
    for (int expected : new int[] {1, 2, 4, 8}) {
      for (int i = 0; i < expected; i++) {
        assertThat(gate.pass()).as("claim %d of a round %d wide", i + 1, expected).isEqualTo(GO);
      }
      assertThat(gate.pass()).as("a round %d wide is full", expected).isEqualTo(WAIT);
      for (int i = 0; i < expected; i++) {
        gate.answered(claimed());
      }
    }
    for (int i = 0; i < 8; i++) {
      assertThat(gate.pass()).as("no wider than the threads: claim %d", i + 1).isEqualTo(GO);
    }
    assertThat(gate.pass()).isEqualTo(WAIT);
  }

  @Test
  void anIdleAnswerMakesOneThreadTheWakerAndAWakeCostsAFewClaimsNotOnePerThread() {
    ClaimGate gate = new ClaimGate(time, 8);
    assertThat(gate.pass()).isEqualTo(GO);
    gate.answered(idle(100, false));
    assertThat(gate.pass()).as("the waker").isEqualTo(sleep(100));
    assertThat(gate.pass()).as("the other idle threads").isEqualTo(WAIT);
    assertThat(gate.pass()).isEqualTo(WAIT);

    time.advance(Duration.ofMillis(100));
    gate.woke();
    assertThat(gate.pass()).isEqualTo(GO);
    assertThat(gate.pass()).as("one claim at the wake, not one per idle thread").isEqualTo(WAIT);
    gate.answered(claimed());
    assertThat(gate.pass()).isEqualTo(GO);
    assertThat(gate.pass()).isEqualTo(GO);
    assertThat(gate.pass()).isEqualTo(WAIT);
    gate.answered(idle(1_900, false));
    assertThat(gate.pass()).as("no second host was due: closed until the next wake")
        .isEqualTo(sleep(1_900));
    gate.answered(idle(1_900, false));
    assertThat(gate.pass()).isEqualTo(WAIT);
  }

  @Test
  void aWakerCutShortSleepsWhatIsLeft() {
    ClaimGate gate = new ClaimGate(time, 8);
    gate.pass();
    gate.answered(idle(100, false));
    assertThat(gate.pass()).isEqualTo(sleep(100));
    time.advance(Duration.ofMillis(30));
    gate.woke();
    assertThat(gate.pass()).isEqualTo(sleep(70));
  }

  @Test
  void aHeldHostClosesTheGateForAtMostThePollAndANotDueOneForTheWholeWake() {
    ClaimGate gate = new ClaimGate(time, 8);
    for (boolean held : new boolean[] {false, true}) {
      gate.pass();
      gate.answered(idle(2_000, held));
      assertThat(gate.pass()).as("held: %s", held).isEqualTo(sleep(held ? 250 : 2_000));
      gate.woke();
      time.advance(Duration.ofSeconds(2));
    }
    gate.pass();
    gate.answered(idle(-1, false));
    assertThat(gate.pass()).as("no wake known").isEqualTo(sleep(250));
  }

  @Test
  void anEmptyClaimNarrowsTheGateToOneAndALateClaimThatFoundAHostWidensItAgain() {
    ClaimGate gate = new ClaimGate(time, 2);
    assertThat(gate.pass()).isEqualTo(GO);
    gate.answered(claimed());
    assertThat(gate.pass()).isEqualTo(GO);
    assertThat(gate.pass()).isEqualTo(GO);
    assertThat(gate.pass()).as("no wider than the threads").isEqualTo(WAIT);
    gate.answered(idle(50, false));
    assertThat(gate.pass()).isEqualTo(sleep(50));
    gate.woke();
    time.advance(Duration.ofMillis(50));
    assertThat(gate.pass()).as("one claim wide, and one still in flight").isEqualTo(WAIT);
    gate.answered(claimed());
    assertThat(gate.pass()).as("a host was due: two claims wide again").isEqualTo(GO);
    assertThat(gate.pass()).isEqualTo(GO);
  }

  @Test
  void refusedLostAndLockedOutAreClaimedAgainAtOnceWithoutOpeningTheGate() {
    ClaimGate gate = new ClaimGate(time, 2);
    gate.pass();
    gate.answered(idle(500, false));
    time.advance(Duration.ofMillis(500));
    for (Claim c : new Claim[] {new Claim.Refused("a"), new Claim.Lost("a"),
        new Claim.LockedOut("a", "403")}) {
      assertThat(gate.pass()).isEqualTo(GO);
      gate.answered(c);
    }
    assertThat(gate.pass()).isEqualTo(GO);
    assertThat(gate.pass()).as("still one claim at a time").isEqualTo(WAIT);
  }

  @Test
  void anAbandonedClaimLetsTheNextGoAndFinishLetsEveryThreadGo() {
    ClaimGate gate = new ClaimGate(time, 8);
    assertThat(gate.pass()).isEqualTo(GO);
    gate.abandoned();
    assertThat(gate.pass()).isEqualTo(GO);
    gate.answered(idle(1_000, false));
    gate.finish();
    assertThat(gate.pass()).isEqualTo(new ClaimGate.Pass.Finished());
  }
}
