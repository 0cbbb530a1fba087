package dev.pacer.postgres;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.pacer.testing.FakeTime;
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

  /** One attempt at {@code database} under the policy: whether the policy let it through. */
  private static boolean attempt(OutagePolicy policy, Database database) {
    int before = database.attempts;
    try {
      policy.attempt(
          e -> true,
          admission -> {
            database.attempt();
            return null;
          });
    } catch (SQLException e) {
      // Refused by the policy, or by the database: the count tells which.
    }
    return database.attempts > before;
  }

  /** Another user of the policy finds the database refusing. */
  private static void someoneFails(OutagePolicy policy) {
    attempt(policy, new Database());
  }

  @Test
  void upPolicyLetsEveryAttemptThrough() {
    FakeTime time = new FakeTime();
    OutagePolicy policy =
        new OutagePolicy(
            "db", Duration.ofSeconds(5), time, OutagePolicy.Scheduler.none(), () -> {});
    Database database = new Database();
    database.up = true;
    assertThat(attempt(policy, database)).isTrue();
    assertThat(attempt(policy, database)).isTrue();
    assertThat(policy.refusesNow()).isFalse();
    assertThat(policy.boundaryAttempts()).isZero();
  }

  @Test
  void afterAFailureTheProbeRunsOnEachBoundaryUntilTheDatabaseAnswers() {
    FakeTime time = new FakeTime();
    RecordingScheduler scheduler = new RecordingScheduler(time);
    Database database = new Database();
    OutagePolicy policy = new OutagePolicy("db", Duration.ofSeconds(5), time, scheduler, database);

    someoneFails(policy); // at ...01.000
    assertThat(scheduler.dueAtMillis)
        .as("the very next multiple, 4 s away")
        .containsExactly(BOUNDARY_5);
    for (long t = 1_000; t < 5_000; t += 500) {
      advanceTo(time, 1_800_000_000_000L + t);
      assertThat(attempt(policy, database)).as("refused at +%d ms", t).isFalse();
    }
    advanceTo(time, BOUNDARY_5);
    scheduler.runDue();
    assertThat(database.attempts).as("one probe at the boundary").isEqualTo(1);
    assertThat(policy.isDown()).isTrue();
    assertThat(scheduler.dueAtMillis).containsExactly(BOUNDARY_5 + 5_000);

    database.up = true;
    advanceTo(time, BOUNDARY_5 + 4_999);
    scheduler.runDue();
    assertThat(attempt(policy, database)).as("1 ms before the next boundary").isFalse();
    advanceTo(time, BOUNDARY_5 + 5_000);
    scheduler.runDue();
    assertThat(database.attempts).isEqualTo(2);
    assertThat(policy.isDown()).isFalse();
    assertThat(attempt(policy, database)).isTrue();
    assertThat(policy.failureCount()).isEqualTo(2);
  }

  @Test
  void oneAttemptPerBoundaryWhoeverComesFirst() {
    FakeTime time = new FakeTime();
    Database database = new Database();
    OutagePolicy policy =
        new OutagePolicy(
            "db", Duration.ofSeconds(5), time, OutagePolicy.Scheduler.none(), database);
    someoneFails(policy);
    advanceTo(time, BOUNDARY_5);
    boolean[] othersRefused = new boolean[1];
    assertThatThrownBy(
            () ->
                policy.attempt(
                    e -> true,
                    admission -> {
                      othersRefused[0] = policy.refusesNow() && !attempt(policy, database);
                      throw REFUSED;
                    }))
        .as("the first caller makes the boundary's attempt")
        .isSameAs(REFUSED);
    assertThat(othersRefused[0]).as("one at a time").isTrue();
    assertThat(attempt(policy, database)).isFalse();
    advanceTo(time, BOUNDARY_5 + 5_000);
    database.up = true;
    assertThat(attempt(policy, database)).isTrue();
    assertThat(attempt(policy, database)).isTrue();
    assertThat(policy.boundaryAttempts()).isEqualTo(2);
  }

  @Test
  void aLateAttemptKeepsToTheGrid() {
    FakeTime time = new FakeTime();
    OutagePolicy policy =
        new OutagePolicy(
            "db", Duration.ofSeconds(5), time, OutagePolicy.Scheduler.none(), () -> {});
    Database database = new Database();
    someoneFails(policy);
    advanceTo(time, BOUNDARY_5 + 3_000); // every thread slept through the boundary
    assertThat(attempt(policy, database)).isTrue();
    advanceTo(time, BOUNDARY_5 + 4_999);
    assertThat(attempt(policy, database)).isFalse();
    advanceTo(time, BOUNDARY_5 + 5_000);
    assertThat(attempt(policy, database)).as("the next boundary, not one later").isTrue();
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
    someoneFails(a);
    advanceTo(clockB, BOUNDARY_5 + 100);
    someoneFails(b);
    assertThat(schedulerA.dueAtMillis)
        .as("A, 0.1 s before the boundary, retries on it")
        .containsExactly(BOUNDARY_5);
    assertThat(schedulerB.dueAtMillis).containsExactly(BOUNDARY_5 + 5_000);

    advanceTo(clockA, BOUNDARY_5);
    schedulerA.runDue();
    assertThat(a.isDown()).as("the database still refuses on the boundary").isTrue();
    assertThat(schedulerA.dueAtMillis)
        .as("so A waits for the next")
        .containsExactly(BOUNDARY_5 + 5_000);

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
    someoneFails(policy);
    database.up = true;
    advanceTo(time, BOUNDARY_5);
    scheduler.runDue();
    assertThat(policy.isDown()).as("back 0.2 s after the failure, not a cooldown later").isFalse();
  }

  @Test
  void theNextBoundaryIsTheGridsWhileUpAndTheAwaitedOneWhileDown() {
    FakeTime time = new FakeTime();
    OutagePolicy policy =
        new OutagePolicy(
            "db", Duration.ofSeconds(5), time, OutagePolicy.Scheduler.none(), () -> {});
    advanceTo(time, BOUNDARY_5 - 1_200);
    assertThat(policy.untilNextAttempt()).as("up: an attempt now").isEqualTo(Duration.ZERO);
    assertThat(policy.untilNextBoundary()).isEqualTo(Duration.ofMillis(1_200));
    someoneFails(policy);
    advanceTo(time, BOUNDARY_5);
    assertThat(attempt(policy, new Database())).isTrue();
    assertThat(policy.untilNextBoundary())
        .as("down: the boundary after the failed probe")
        .isEqualTo(policy.untilNextAttempt())
        .isEqualTo(Duration.ofSeconds(5));
  }

  @Test
  void aHandOverLastsOneCooldownPastTheBoundaryAfterTheReturn() {
    FakeTime time = new FakeTime();
    OutagePolicy policy =
        new OutagePolicy(
            "db", Duration.ofSeconds(5), time, OutagePolicy.Scheduler.none(), () -> {});
    assertThat(policy.isHandingOver()).as("no return yet").isFalse();
    someoneFails(policy);
    assertThat(policy.untilNextAttempt())
        .isEqualTo(Duration.ofMillis(BOUNDARY_5 - time.epochMillis()))
        .isPositive();
    advanceTo(time, BOUNDARY_5);
    Database database = new Database();
    database.up = true;
    assertThat(attempt(policy, database)).isTrue();
    assertThat(policy.untilNextAttempt()).isEqualTo(Duration.ZERO);
    assertThat(policy.handOverLeft()).isEqualTo(Duration.ofSeconds(10));
    advanceTo(time, BOUNDARY_5 + 5_000);
    assertThat(policy.isHandingOver())
        .as("at the next boundary, where a late process's attempt has yet to answer")
        .isTrue();
    advanceTo(time, BOUNDARY_5 + 9_999);
    assertThat(policy.handOverLeft()).isEqualTo(Duration.ofMillis(1));
    advanceTo(time, BOUNDARY_5 + 10_000);
    assertThat(policy.isHandingOver()).as("one cooldown past the next boundary").isFalse();
    assertThat(policy.handOverLeft()).isEqualTo(Duration.ZERO);
  }

  @Test
  void failuresOfOtherUsersDuringTheOutageKeepTheBoundary() {
    FakeTime time = new FakeTime();
    RecordingScheduler scheduler = new RecordingScheduler(time);
    OutagePolicy policy = new OutagePolicy("db", Duration.ofSeconds(5), time, scheduler, () -> {});
    // A store's statement, begun before the outage was noticed, fails after it.
    assertThatThrownBy(
            () ->
                policy.attempt(
                    e -> true,
                    admission -> {
                      someoneFails(policy);
                      advanceTo(time, BOUNDARY_5 - 1);
                      assertThat(admission.holds())
                          .as("no second try of its own while down")
                          .isFalse();
                      throw REFUSED;
                    }))
        .isSameAs(REFUSED);
    assertThat(scheduler.dueAtMillis).as("one probe per boundary").containsExactly(BOUNDARY_5);
    assertThat(policy.failureCount()).isEqualTo(2);
  }

  /**
   * The first caller after a boundary takes its attempt (the probe is late, or there is none) and
   * its opener throws what no database says (a driver's bug, a pool's own exception). The attempt
   * still ends: the boundary's probe finds it taken, and the next boundary's attempt goes through.
   */
  @Test
  void aBoundaryAttemptThatThrowsSomethingUnexpectedStillLetsTheNextBoundaryTry() throws Exception {
    FakeTime time = new FakeTime();
    RecordingScheduler scheduler = new RecordingScheduler(time);
    Database database = new Database();
    OutagePolicy policy = new OutagePolicy("db", Duration.ofSeconds(5), time, scheduler, database);
    assertThatThrownBy(
            () ->
                policy.open(
                    () -> {
                      throw REFUSED;
                    }))
        .isSameAs(REFUSED);
    advanceTo(time, BOUNDARY_5);
    IllegalStateException bug = new IllegalStateException("not a database's answer (test)");
    assertThatThrownBy(
            () ->
                policy.open(
                    () -> {
                      throw bug;
                    }))
        .as("the caller gets what it threw")
        .isSameAs(bug);
    scheduler.runDue();
    assertThat(database.attempts).as("the boundary's attempt was the caller's").isZero();
    assertThat(policy.isDown()).as("an unexpected exception proves nothing: still down").isTrue();

    database.up = true;
    advanceTo(time, BOUNDARY_5 + 5_000);
    scheduler.runDue();
    assertThat(database.attempts).as("the next boundary's probe").isEqualTo(1);
    assertThat(policy.isDown()).isFalse();
  }

  /** The same through {@link KeptConnection}, whose opener throws a {@link RuntimeException}. */
  @Test
  void aKeptConnectionsUnexpectedExceptionAtABoundaryEndsItsAttempt() throws Exception {
    FakeTime time = new FakeTime();
    OutagePolicy policy =
        new OutagePolicy(
            "db", Duration.ofSeconds(5), time, OutagePolicy.Scheduler.none(), () -> {});
    assertThatThrownBy(
            () ->
                policy.open(
                    () -> {
                      throw REFUSED;
                    }))
        .isSameAs(REFUSED);
    advanceTo(time, BOUNDARY_5);
    try (KeptConnection kept =
        new KeptConnection(
            policy,
            () -> {
              throw new IllegalStateException("a pool's own failure (test)");
            },
            e -> false,
            false,
            Duration.ofMillis(500))) {
      assertThatThrownBy(() -> kept.call(c -> 1)).isInstanceOf(IllegalStateException.class);
    }
    advanceTo(time, BOUNDARY_5 + 5_000);
    assertThat(policy.refusesNow()).as("the next boundary's attempt is let through").isFalse();
    assertThat(policy.open(() -> null)).isNull();
    assertThat(policy.isDown()).isFalse();
  }

  /**
   * A whole fleet reconnecting on one boundary meets the server's connection limit (53300), or a
   * login refused, at its boundary's attempt, through a connection whose user counts only lost
   * connections as an outage (a store, the fleet slots). The database is still unusable: down until
   * the next boundary, whose attempt goes through, and nothing touches the server between.
   */
  @Test
  void aConnectionRefusedByTheServerAtABoundaryKeepsTheDatabaseDownUntilTheNext() throws Exception {
    for (String state : List.of("53300", "28P01")) {
      FakeTime time = new FakeTime();
      OutagePolicy policy =
          new OutagePolicy(
              "db", Duration.ofSeconds(5), time, OutagePolicy.Scheduler.none(), () -> {});
      assertThatThrownBy(
              () ->
                  policy.open(
                      () -> {
                        throw REFUSED;
                      }))
          .isSameAs(REFUSED);
      advanceTo(time, BOUNDARY_5);
      int[] opens = new int[1];
      try (KeptConnection kept =
          new KeptConnection(
              policy,
              () -> {
                opens[0]++;
                throw new SQLException("refused by the server (test)", state);
              },
              e -> false,
              false,
              Duration.ofMillis(500))) {
        assertThatThrownBy(() -> kept.call(c -> 1)).isInstanceOf(SQLException.class);
        assertThat(policy.isDown()).as("%s: no usable connection, still down", state).isTrue();
        advanceTo(time, BOUNDARY_5 + 4_999);
        assertThatThrownBy(() -> kept.call(c -> 1)).isInstanceOf(SQLException.class);
        assertThat(opens[0])
            .as("%s: nothing reaches the server before the next boundary", state)
            .isEqualTo(1);
        advanceTo(time, BOUNDARY_5 + 5_000);
        assertThat(policy.refusesNow()).as("%s: the next boundary's attempt", state).isFalse();
        assertThatThrownBy(() -> kept.call(c -> 1)).isInstanceOf(SQLException.class);
        assertThat(opens[0]).isEqualTo(2);
      }
    }
  }

  /** A failure that is the database answering (a unique violation) ends an outage at a boundary. */
  @Test
  void aFailureThatIsTheDatabaseAnsweringEndsAnOutage() throws Exception {
    FakeTime time = new FakeTime();
    OutagePolicy policy =
        new OutagePolicy(
            "db", Duration.ofSeconds(5), time, OutagePolicy.Scheduler.none(), () -> {});
    someoneFails(policy);
    advanceTo(time, BOUNDARY_5);
    SQLException duplicate = new SQLException("duplicate key (test)", "23505");
    assertThatThrownBy(
            () ->
                policy.attempt(
                    e -> false,
                    admission -> {
                      throw duplicate;
                    }))
        .isSameAs(duplicate);
    assertThat(policy.isDown()).isFalse();
  }

  @Test
  void whatCountsAsTheDatabaseBeingUnavailable() {
    // 08P01: what PgBouncer answers for a server it cannot reach or has lost.
    for (String state :
        new String[] {
          "08001", "08006", "08P01", "57P01", "57P03", "53300", "53100", "28P01", "28000", "25006",
          "57014"
        }) {
      assertThat(OutagePolicy.isUnavailable(new SQLException("test", state))).as(state).isTrue();
    }
    assertThat(OutagePolicy.isUnavailable(new SQLException("no state"))).isTrue();
    for (String state : new String[] {"23505", "42P01", "40001", "22P02", "55P03"}) {
      assertThat(OutagePolicy.isUnavailable(new SQLException("test", state))).as(state).isFalse();
    }
  }
}
