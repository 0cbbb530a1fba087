package dev.pacer.cli.db;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.sql.SQLException;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** The per-process connection gate, on a fake wall clock. */
class ConnectionGateTest {

  private final AtomicLong now = new AtomicLong(1_000_000_001_000L);
  private final ConnectionGate gate = new ConnectionGate(5000, now::get);

  @Test
  void whileTheDatabaseIsUpAttemptsAreNeverRefused() throws Exception {
    gate.beforeAttempt();
    gate.beforeAttempt();
    gate.succeeded();
    gate.beforeAttempt();
    assertThat(gate.attempts()).isEqualTo(3);
  }

  @Test
  void afterAFailureOneAttemptIsLetThroughPerRetryBoundary() throws Exception {
    gate.beforeAttempt();
    gate.failed(); // at ...01.000: the next boundary at least 5 s later is ...10.000
    for (long t = 0; t < 9000; t += 500) {
      now.set(1_000_000_001_000L + t);
      assertThatThrownBy(gate::beforeAttempt).isInstanceOf(SQLException.class)
          .hasMessageContaining("next connection attempt at");
    }
    now.set(1_000_000_010_000L);
    gate.beforeAttempt(); // the probe
    assertThatThrownBy(gate::beforeAttempt).as("one probe at a time").isInstanceOf(SQLException.class);
    gate.failed(); // at ...10.000: next boundary ...15.000
    now.set(1_000_000_014_999L);
    assertThatThrownBy(gate::beforeAttempt).isInstanceOf(SQLException.class);
    now.set(1_000_000_015_000L);
    gate.beforeAttempt();
    gate.succeeded();
    gate.beforeAttempt();
    gate.beforeAttempt();
    assertThat(gate.attempts()).isEqualTo(5);
  }

  @Test
  void aLateProbeKeepsToTheGridOfBoundaries() throws Exception {
    gate.beforeAttempt();
    gate.failed(); // next boundary ...10.000
    now.set(1_000_000_013_000L); // nobody asked at ...10.000; the probe runs 3 s late
    gate.beforeAttempt();
    gate.failed();
    now.set(1_000_000_014_999L);
    assertThatThrownBy(gate::beforeAttempt).isInstanceOf(SQLException.class);
    now.set(1_000_000_015_000L);
    gate.beforeAttempt(); // ...15.000, not ...20.000
    assertThat(gate.attempts()).isEqualTo(3);
  }

  @Test
  void aRefusalCarriesAConnectionFailureState() {
    gate.failed();
    assertThatThrownBy(gate::beforeAttempt)
        .satisfies(e -> assertThat(((SQLException) e).getSQLState()).isEqualTo("08001"));
  }
}
