package dev.pacer.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.BackoffScope;
import org.junit.jupiter.api.Test;

class BackoffTest {

  @Test
  void doublesUpToSixteen() {
    Backoff backoff = new Backoff();
    int[] expected = {2, 4, 8, 16, 16, 16};
    for (int e : expected) {
      backoff.onRatePressure();
      assertThat(backoff.multiplier()).isEqualTo(e);
    }
  }

  @Test
  void halvesAfterHundredConsecutiveCleanResponsesNeverBelowOne() {
    Backoff backoff = new Backoff();
    backoff.onRatePressure();
    backoff.onRatePressure(); // x4
    cleanResponses(backoff, 99);
    assertThat(backoff.multiplier()).isEqualTo(4);
    backoff.onCleanResponse();
    assertThat(backoff.multiplier()).isEqualTo(2);
    cleanResponses(backoff, 100);
    assertThat(backoff.multiplier()).isEqualTo(1);
    cleanResponses(backoff, 1000);
    assertThat(backoff.multiplier()).isEqualTo(1);
  }

  @Test
  void pressureRestartsTheCleanStreak() {
    Backoff backoff = new Backoff();
    backoff.onRatePressure(); // x2
    cleanResponses(backoff, 99);
    backoff.onRatePressure(); // x4, streak 0
    cleanResponses(backoff, 99);
    assertThat(backoff.multiplier()).isEqualTo(4);
    backoff.onCleanResponse();
    assertThat(backoff.multiplier()).isEqualTo(2);
  }

  @Test
  void cleanResponseAtOneIsANoOp() {
    Backoff backoff = new Backoff();
    cleanResponses(backoff, 150);
    assertThat(backoff.cleanStreak()).isZero();
    backoff.onRatePressure();
    cleanResponses(backoff, 99);
    assertThat(backoff.multiplier()).as("no streak was banked at x1").isEqualTo(2);
  }

  @Test
  void theRuleItselfForTheCursorsThatKeepTheFleetsMultiplier() {
    assertThat(Backoff.doubled(1)).isEqualTo(2);
    assertThat(Backoff.doubled(8)).isEqualTo(16);
    assertThat(Backoff.doubled(16)).as("capped").isEqualTo(16);
    assertThat(Backoff.halved(16)).isEqualTo(8);
    assertThat(Backoff.halved(1)).as("never below 1").isEqualTo(1);
    assertThat(Backoff.halves(99)).isFalse();
    assertThat(Backoff.halves(100)).isTrue();
    assertThat(BackoffScope.MAX_MULTIPLIER)
        .as("what the SQL is written from")
        .isEqualTo(Backoff.MAX_MULTIPLIER)
        .isEqualTo(16);
    assertThat(BackoffScope.CLEAN_ANSWERS_TO_HALVE)
        .isEqualTo(Backoff.CLEAN_STREAK_TO_DECAY)
        .isEqualTo(100);
  }

  private static void cleanResponses(Backoff backoff, int n) {
    for (int i = 0; i < n; i++) {
      backoff.onCleanResponse();
    }
  }
}
