package dev.pacer.bench.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import dev.pacer.bench.model.RowSimulation.Inputs;
import dev.pacer.bench.model.RowSimulation.Result;
import org.junit.jupiter.api.Test;

/**
 * The simulation against what can be worked out by hand: one process alone is its round trip, one
 * row shared by many is its locked time, many rows are the cores, a lease of k turns is one
 * statement per k permits. Simulated time only; nothing sleeps.
 */
class RowSimulationTest {

  /** One process, one caller, one core it shares with the server, nothing waking. */
  private static final Inputs ALONE =
      new Inputs(1, 1, 1, 1, true, 20, 50, 0.4, 10, 0, 0, 100, 1, 0, 0);

  private static Result run(Inputs in) {
    return RowSimulation.run(in, 50_000, 2_000_000);
  }

  @Test
  void oneProcessAloneMakesOneStatementPerRoundTrip() {
    Result r = run(ALONE);

    assertThat(r.permitsPerSecond()).isCloseTo(1e6 / (20 + 50 + 100), within(10.0));
    assertThat(r.statementsPerPermit()).isCloseTo(1.0, within(1e-9));
    assertThat(r.serverCpuShare()).isCloseTo(50.0 / 170, within(0.01));
    assertThat(r.busiestRowShare()).isCloseTo(20.0 / 170, within(0.01));
  }

  @Test
  void anIdleMachineWakesForTheClientAndForTheServer() {
    Result r = run(ALONE.withCallers(1, 0));
    Result woken = run(new Inputs(1, 1, 1, 1, true, 20, 50, 0.4, 10, 15, 0, 100, 1, 0, 0));

    assertThat(1e6 / woken.permitsPerSecond() - 1e6 / r.permitsPerSecond())
        .isCloseTo(30.0, within(0.5));
  }

  @Test
  void manyProcessesOnOneRowGetOneStatementPerLockedTimeAndRecheck() {
    // Cores to spare and clients on machines of their own: only the row limits.
    Inputs in = new Inputs(64, 1, 1, 64, false, 20, 50, 0.4, 10, 0, 0, 200, 1, 0, 0);

    Result r = run(in);

    assertThat(r.permitsPerSecond()).isCloseTo(1e6 / (0.4 * 50 + 10), within(200.0));
    assertThat(r.busiestRowShare()).isGreaterThan(0.99);
    assertThat(r.serverCpuShare()).isLessThan(0.05);
  }

  @Test
  void spreadOverRowsTheCoresLimitInstead() {
    Inputs in = new Inputs(64, 1, 64, 2, false, 20, 50, 0.4, 10, 0, 0, 200, 1, 0, 0);

    Result r = run(in);

    assertThat(r.permitsPerSecond()).isCloseTo(2e6 / 50, within(400.0));
    assertThat(r.serverCpuShare()).isGreaterThan(0.99);
    assertThat(r.busiestRowShare()).isLessThan(0.1);
  }

  @Test
  void theCeilingHoldsHoweverManyAsk() {
    // 8 processes of 4 callers always asking, turns 100 µs apart: 10,000/s at most.
    Inputs in = new Inputs(8, 4, 1, 2, false, 20, 50, 0.4, 10, 0, 0, 200, 1, 0, 100);

    Result r = run(in);

    assertThat(r.permitsPerSecond()).isCloseTo(10_000, within(10.0));
    assertThat(run(in.withLease(16)).permitsPerSecond()).isCloseTo(10_000, within(10.0));
  }

  @Test
  void aLeaseOfKTurnsIsOneStatementPerKPermits() {
    // One process of 16 callers always asking, turns 100 µs apart, 64 turns a statement.
    Inputs in = new Inputs(1, 16, 1, 2, false, 20, 50, 0.4, 10, 0, 0, 200, 64, 0, 100);

    Result r = run(in);

    assertThat(r.statementsPerPermit()).isCloseTo(1.0 / 64, within(0.001));
    assertThat(r.permitsPerSecond()).isCloseTo(10_000, within(10.0));
    assertThat(r.givenUpPerSecond()).isZero();
  }

  @Test
  void leasedTurnsNotUsedInTimeAreGivenUpNeverSentLate() {
    // One caller, 1 ms between its asks; 8 turns 10 µs apart a statement: it uses the first.
    Inputs in = new Inputs(1, 1, 1, 2, false, 20, 50, 0.4, 10, 0, 0, 200, 8, 1_000, 10);

    Result r = run(in);

    assertThat(r.statementsPerPermit()).isCloseTo(1.0, within(1e-9));
    assertThat(r.givenUpPerSecond()).isCloseTo(7 * r.statementsPerSecond(), within(8.0));
  }

  @Test
  void callersOfOneProcessShareItsStatements() {
    Inputs in = new Inputs(1, 16, 1, 2, false, 20, 50, 0.4, 10, 0, 0, 200, 1, 0, 0);

    Result r = run(in);

    assertThat(r.statementsPerPermit()).isLessThan(0.2);
    assertThat(run(in.withCallers(1, 0)).statementsPerPermit()).isCloseTo(1.0, within(1e-9));
  }

  @Test
  void theSameInputsGiveTheSameAnswer() {
    Inputs in = BenchMachine.inputs(4, true);

    assertThat(run(in)).isEqualTo(run(in));
  }
}
