package dev.pacer.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.FakeTime;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The retry grid on a fake wall clock, with a scheduler that records its probes instead of running
 * them: nothing here waits. {@link FakeTime} starts at epoch 1,800,000,001,000 ms, 1 s after a
 * boundary of the 5-s grid.
 */
class OutagePolicyTest {

  private static final long BOUNDARY_5 = 1_800_000_005_000L;
  private static final SQLException REFUSED = new SQLException("Connection refused", "08001");

  /** A database that refuses until told otherwise, counting the attempts it sees. */
  private static final class Database implements OutagePolicy.Probe {
    boolean up;
    int attempts;

    @Override
    public void attempt() throws SQLException {
      attempts++;
      if (!up) {
        throw REFUSED;
      }
    }
  }

  /** Records scheduled probes; {@link #runDue} runs those whose time has come. */
  private static final class RecordingScheduler implements OutagePolicy.Scheduler {
    final FakeTime time;
    final List<Long> dueAtMillis = new ArrayList<>();
    final List<Runnable> tasks = new ArrayList<>();

    RecordingScheduler(FakeTime time) {
      this.time = time;
    }

    @Override
    public void schedule(Runnable task, Duration delay) {
      dueAtMillis.add(time.epochMillis() + delay.toMillis());
      tasks.add(task);
    }

    void runDue() {
      for (int i = 0; i < tasks.size(); i++) {
        if (dueAtMillis.get(i) <= time.epochMillis()) {
          Runnable task = tasks.remove(i);
          dueAtMillis.remove(i);
          task.run();
          i = -1;
        }
      }
    }
  }

  private static void advanceTo(FakeTime time, long epochMillis) {
    time.advance(Duration.ofMillis(epochMillis - time.epochMillis()));
  }

  @Test
  void upPolicyLetsEveryAttemptThrough() {
    FakeTime time = new FakeTime();
    OutagePolicy policy = new OutagePolicy("db", Duration.ofSeconds(5), time,
        OutagePolicy.Scheduler.none(), () -> { });
    assertThat(policy.tryAttempt()).isTrue();
    assertThat(policy.tryAttempt()).isTrue();
    assertThat(policy.refusesNow()).isFalse();
    assertThat(policy.boundaryAttempts()).isZero();
  }

  @Test
  void afterAFailureTheProbeRunsOnEachBoundaryUntilTheDatabaseAnswers() {
    FakeTime time = new FakeTime();
    RecordingScheduler scheduler = new RecordingScheduler(time);
    Database database = new Database();
    OutagePolicy policy = new OutagePolicy("db", Duration.ofSeconds(5), time, scheduler, database);

    policy.failed(REFUSED); // at ...01.000
    assertThat(scheduler.dueAtMillis).as("the very next multiple, 4 s away").containsExactly(BOUNDARY_5);
    for (long t = 1_000; t < 5_000; t += 500) {
      advanceTo(time, 1_800_000_000_000L + t);
      assertThat(policy.tryAttempt()).as("refused at +%d ms", t).isFalse();
    }
    advanceTo(time, BOUNDARY_5);
    scheduler.runDue();
    assertThat(database.attempts).as("one probe at the boundary").isEqualTo(1);
    assertThat(policy.isDown()).isTrue();
    assertThat(scheduler.dueAtMillis).containsExactly(BOUNDARY_5 + 5_000);

    database.up = true;
    advanceTo(time, BOUNDARY_5 + 4_999);
    scheduler.runDue();
    assertThat(policy.tryAttempt()).as("1 ms before the next boundary").isFalse();
    advanceTo(time, BOUNDARY_5 + 5_000);
    scheduler.runDue();
    assertThat(database.attempts).isEqualTo(2);
    assertThat(policy.isDown()).isFalse();
    assertThat(policy.tryAttempt()).isTrue();
    assertThat(policy.failureCount()).isEqualTo(2);
  }

  @Test
  void oneAttemptPerBoundaryWhoeverComesFirst() {
    FakeTime time = new FakeTime();
    Database database = new Database();
    OutagePolicy policy = new OutagePolicy("db", Duration.ofSeconds(5), time,
        OutagePolicy.Scheduler.none(), database);
    policy.failed(REFUSED);
    advanceTo(time, BOUNDARY_5);
    assertThat(policy.tryAttempt()).as("the first caller makes the boundary's attempt").isTrue();
    assertThat(policy.tryAttempt()).as("one at a time").isFalse();
    assertThat(policy.refusesNow()).isTrue();
    policy.failed(REFUSED);
    assertThat(policy.tryAttempt()).isFalse();
    advanceTo(time, BOUNDARY_5 + 5_000);
    assertThat(policy.tryAttempt()).isTrue();
    policy.succeeded();
    assertThat(policy.tryAttempt()).isTrue();
    assertThat(policy.boundaryAttempts()).isEqualTo(2);
  }

  @Test
  void aLateAttemptKeepsToTheGrid() {
    FakeTime time = new FakeTime();
    OutagePolicy policy = new OutagePolicy("db", Duration.ofSeconds(5), time,
        OutagePolicy.Scheduler.none(), () -> { });
    policy.failed(REFUSED);
    advanceTo(time, BOUNDARY_5 + 3_000); // every thread slept through the boundary
    assertThat(policy.tryAttempt()).isTrue();
    policy.failed(REFUSED);
    advanceTo(time, BOUNDARY_5 + 4_999);
    assertThat(policy.tryAttempt()).isFalse();
    advanceTo(time, BOUNDARY_5 + 5_000);
    assertThat(policy.tryAttempt()).as("the next boundary, not one later").isTrue();
  }

  /**
   * The case the grid exists for: two processes notice the outage 0.2 s apart, one just before a
   * boundary and one just after it, and the database comes back 2 s later. Both return on the same
   * boundary. Retrying first at ceil(failure + cooldown) would have returned them 5 s apart (15 s
   * and 20 s), one pacing at the full rate while the other still paced locally.
   */
  @Test
  void twoProcessesFailing200MsApartAcrossABoundaryReturnTogether() {
    FakeTime clockA = new FakeTime();
    FakeTime clockB = new FakeTime();
    Database database = new Database();
    RecordingScheduler schedulerA = new RecordingScheduler(clockA);
    RecordingScheduler schedulerB = new RecordingScheduler(clockB);
    OutagePolicy a = new OutagePolicy("A", Duration.ofSeconds(5), clockA, schedulerA, database);
    OutagePolicy b = new OutagePolicy("B", Duration.ofSeconds(5), clockB, schedulerB, database);

    advanceTo(clockA, BOUNDARY_5 - 100);
    a.failed(REFUSED);
    advanceTo(clockB, BOUNDARY_5 + 100);
    b.failed(REFUSED);
    assertThat(schedulerA.dueAtMillis).as("A, 0.1 s before the boundary, retries on it")
        .containsExactly(BOUNDARY_5);
    assertThat(schedulerB.dueAtMillis).containsExactly(BOUNDARY_5 + 5_000);

    advanceTo(clockA, BOUNDARY_5);
    schedulerA.runDue();
    assertThat(a.isDown()).as("the database still refuses on the boundary").isTrue();
    assertThat(schedulerA.dueAtMillis).as("so A waits for the next").containsExactly(BOUNDARY_5 + 5_000);

    database.up = true; // back at +2 s
    for (FakeTime clock : List.of(clockA, clockB)) {
      advanceTo(clock, BOUNDARY_5 + 4_999);
    }
    schedulerA.runDue();
    schedulerB.runDue();
    assertThat(a.isDown()).isTrue();
    assertThat(b.isDown()).isTrue();
    for (FakeTime clock : List.of(clockA, clockB)) {
      advanceTo(clock, BOUNDARY_5 + 5_000);
    }
    schedulerA.runDue();
    schedulerB.runDue();
    assertThat(a.isDown()).as("A back on the boundary").isFalse();
    assertThat(b.isDown()).as("B back on the same boundary").isFalse();
  }

  @Test
  void aFailureJustBeforeABoundaryThatTheDatabaseAnswersReturnsOnIt() {
    FakeTime time = new FakeTime();
    RecordingScheduler scheduler = new RecordingScheduler(time);
    Database database = new Database();
    OutagePolicy policy = new OutagePolicy("db", Duration.ofSeconds(5), time, scheduler, database);
    advanceTo(time, BOUNDARY_5 - 200);
    policy.failed(REFUSED);
    database.up = true;
    advanceTo(time, BOUNDARY_5);
    scheduler.runDue();
    assertThat(policy.isDown()).as("back 0.2 s after the failure, not a cooldown later").isFalse();
  }

  @Test
  void theNextBoundaryIsTheGridsWhileUpAndTheAwaitedOneWhileDown() {
    FakeTime time = new FakeTime();
    OutagePolicy policy = new OutagePolicy("db", Duration.ofSeconds(5), time,
        OutagePolicy.Scheduler.none(), () -> { });
    advanceTo(time, BOUNDARY_5 - 1_200);
    assertThat(policy.untilNextAttempt()).as("up: an attempt now").isEqualTo(Duration.ZERO);
    assertThat(policy.untilNextBoundary()).isEqualTo(Duration.ofMillis(1_200));
    policy.failed(REFUSED);
    advanceTo(time, BOUNDARY_5);
    assertThat(policy.tryAttempt()).isTrue();
    policy.failed(REFUSED);
    assertThat(policy.untilNextBoundary()).as("down: the boundary after the failed probe")
        .isEqualTo(policy.untilNextAttempt()).isEqualTo(Duration.ofSeconds(5));
  }

  @Test
  void aHandOverLastsUntilTheBoundaryAfterTheReturn() {
    FakeTime time = new FakeTime();
    OutagePolicy policy = new OutagePolicy("db", Duration.ofSeconds(5), time,
        OutagePolicy.Scheduler.none(), () -> { });
    assertThat(policy.isHandingOver()).as("no return yet").isFalse();
    policy.failed(REFUSED);
    assertThat(policy.untilNextAttempt())
        .isEqualTo(Duration.ofMillis(BOUNDARY_5 - time.epochMillis())).isPositive();
    advanceTo(time, BOUNDARY_5);
    assertThat(policy.tryAttempt()).isTrue();
    policy.succeeded();
    assertThat(policy.untilNextAttempt()).isEqualTo(Duration.ZERO);
    assertThat(policy.handOverLeft()).isEqualTo(Duration.ofSeconds(5));
    advanceTo(time, BOUNDARY_5 + 4_999);
    assertThat(policy.isHandingOver()).isTrue();
    assertThat(policy.handOverLeft()).isEqualTo(Duration.ofMillis(1));
    advanceTo(time, BOUNDARY_5 + 5_000);
    assertThat(policy.isHandingOver()).as("one more boundary has passed").isFalse();
    assertThat(policy.handOverLeft()).isEqualTo(Duration.ZERO);
  }

  @Test
  void failuresOfOtherUsersDuringTheOutageKeepTheBoundary() {
    FakeTime time = new FakeTime();
    RecordingScheduler scheduler = new RecordingScheduler(time);
    OutagePolicy policy = new OutagePolicy("db", Duration.ofSeconds(5), time, scheduler, () -> { });
    policy.failed(REFUSED);
    advanceTo(time, BOUNDARY_5 - 1);
    policy.failed(REFUSED); // a store's statement, begun before the outage was noticed
    assertThat(scheduler.dueAtMillis).as("one probe per boundary").containsExactly(BOUNDARY_5);
    assertThat(policy.failureCount()).isEqualTo(2);
  }
}
