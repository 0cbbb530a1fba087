package dev.pacer.bench.model;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/**
 * The simulation, with the bench machine's measured inputs, reproduces what {@code ./bench}
 * measured there: one key and 16 keys at 1, 2, 4 and 8 processes, and pgbench on one key at 2, 4
 * and 8 clients, each within {@link #TOLERANCE}. The twins set one input wrong and must miss: the
 * server's CPU per statement halved or half as much again, a row that serialises nothing, a row
 * held 10 µs longer at each hand-over.
 */
class BenchMachineTest {

  /** The most a simulated figure may differ from the measured one, as a share of it. */
  private static final double TOLERANCE = 0.20;

  @Test
  void reproducesEveryMeasuredPointWithinTheTolerance() {
    assertThat(BenchMachine.compare(in -> in))
        .allSatisfy(p -> assertThat(Math.abs(p.error())).as(p.toString()).isLessThan(TOLERANCE));
  }

  @Test
  void halfTheServersCpuPerStatementMissesTheMeasuredPoints() {
    assertThat(
            BenchMachine.worstError(
                in -> in.withServer(in.serverMicros() / 2, in.lockedShare(), in.recheckMicros())))
        .isGreaterThan(TOLERANCE);
  }

  @Test
  void halfAgainTheServersCpuPerStatementMissesTheMeasuredPoints() {
    assertThat(
            BenchMachine.worstError(
                in -> in.withServer(in.serverMicros() * 1.5, in.lockedShare(), in.recheckMicros())))
        .isGreaterThan(TOLERANCE);
  }

  @Test
  void aRowThatSerialisesNothingMissesTheHotKey() {
    // One key simulated as 16: statements on the row never wait for each other.
    assertThat(BenchMachine.worstError(in -> in.withRows(BenchMachine.SPREAD_ROWS)))
        .isGreaterThan(TOLERANCE);
  }

  @Test
  void aRowHeldTenMicrosecondsLongerPerHandOverMissesTheHotKey() {
    assertThat(
            BenchMachine.worstError(
                in -> in.withServer(in.serverMicros(), in.lockedShare(), in.recheckMicros() + 10)))
        .isGreaterThan(TOLERANCE);
  }
}
