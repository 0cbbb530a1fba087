package dev.pacer.cli.run;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.testing.FakeTime;
import java.sql.SQLException;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** A worker's calls to the work state while PostgreSQL is away, on a fake clock. */
class RetryingTest {

  private final FakeTime time = new FakeTime();
  private final AtomicBoolean stopped = new AtomicBoolean();

  /** The outage policy's time to its next attempt, as the test sets it. */
  private volatile Duration untilBoundary = Duration.ZERO;

  private final Retrying retrying =
      new Retrying(
          time,
          Duration.ofMinutes(10),
          stopped::get,
          SQLException::getMessage,
          () -> 1L,
          () -> untilBoundary);

  /** Fails {@code times} times, then answers {@code value}. */
  private static <T> Retrying.SqlCall<T> failing(int times, T value) {
    AtomicInteger calls = new AtomicInteger();
    return () -> {
      if (calls.incrementAndGet() <= times) {
        throw new SQLException("connection refused", "08001");
      }
      return value;
    };
  }

  @Test
  void anAnswerComesBackAsAValueWithoutWaiting() throws Exception {
    assertThat(retrying.call("claim", failing(0, 42), true))
        .isEqualTo(new Retrying.Attempt.Answered<>(42));
    assertThat(time.sleepsMillis()).isEmpty();
  }

  @Test
  void retriesDoubleTheirWaitUpToFiveSeconds() throws Exception {
    assertThat(retrying.call("claim", failing(7, "ok"), true))
        .isEqualTo(new Retrying.Attempt.Answered<>("ok"));
    assertThat(time.sleepsMillis()).containsExactly(250L, 500L, 1000L, 2000L, 4000L, 5000L, 5000L);
  }

  @Test
  void whileThePolicyHoldsTheDatabaseDownARetryWaitsForItsBoundary() throws Exception {
    untilBoundary = Duration.ofMillis(3700);
    AtomicInteger calls = new AtomicInteger();
    Retrying.SqlCall<String> backAtTheBoundary =
        () -> {
          if (calls.incrementAndGet() == 1) {
            throw new SQLException("connection refused", "08001");
          }
          return "ok";
        };
    assertThat(retrying.call("claim", backAtTheBoundary, true))
        .isEqualTo(new Retrying.Attempt.Answered<>("ok"));
    assertThat(time.sleepsMillis())
        .as("to the boundary, just after its probe, not 250 ms")
        .containsExactly(3800L);
  }

  @Test
  void anOutcomeIsRetriedForTenMinutesThenGivenUp() throws Exception {
    Retrying.SqlCall<Boolean> never = failing(Integer.MAX_VALUE, true);
    stopped.set(true); // an outcome already fetched is kept even after the run stops
    assertThat(retrying.record("record a fetched item", never))
        .isEqualTo(Retrying.Recorded.GAVE_UP);
    long waited = time.sleepsMillis().stream().mapToLong(Long::longValue).sum();
    assertThat(waited).isBetween(600_000L, 605_000L);
  }

  @Test
  void aClaimIsGivenUpAsSoonAsTheRunStops() throws Exception {
    stopped.set(true);
    assertThat(retrying.call("claim", failing(Integer.MAX_VALUE, 1), true))
        .isInstanceOf(Retrying.Attempt.GaveUp.class);
    assertThat(time.sleepsMillis()).isEmpty();
  }

  @Test
  void aRecordRefusedByItsLeaseTokenIsLeaseLostNotGaveUp() throws Exception {
    assertThat(retrying.record("record", failing(2, false)))
        .isEqualTo(Retrying.Recorded.LEASE_LOST);
    assertThat(retrying.record("record", failing(0, true))).isEqualTo(Retrying.Recorded.RECORDED);
    assertThat(time.sleepsMillis()).containsExactly(250L, 500L);
  }
}
