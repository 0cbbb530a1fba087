package dev.pacer.cli.model;

/**
 * Why a run halted: one of the bars of the run's envelope ({@code dev.pacer.cli.run.Envelope}), or
 * {@link #HALTED} when a worker process halted and no trip says which bar. The name is what the
 * JSON summary, {@code pacer trips} and the trip table's {@code bar} column carry.
 */
public enum HaltReason {
  /** The host's 1-minute load average above the ceiling. */
  HOST_LOAD,
  /** This process's resident memory above the ceiling. */
  RSS,
  /** The destination answered a lockout status (403). */
  DESTINATION_LOCKOUT,
  /** 1% of the last 500 items failed (counted once each, at their first attempt). */
  FETCH_FAILURES,
  /** A worker process exited halted, and no open trip names the bar it crossed. */
  HALTED
}
