package dev.pacer.postgres;

import java.util.Optional;

/**
 * What fleet members report at the end of a run: the requests they sent, one per turn, and the
 * turns their limiters gave up as late ({@link dev.pacer.DestinationLimiter#lateTurnsSkipped()}),
 * which the tests sum over the fleet. A worker JVM prints it as one line, {@code SENT <n> LATE
 * <n>}.
 *
 * @param sent requests sent, each after its turn
 * @param late turns given up because their taker woke too late for them
 */
record TurnsTaken(long sent, long late) {

  static final TurnsTaken NONE = new TurnsTaken(0, 0);

  /** The line a worker prints. */
  String line() {
    return "SENT " + sent + " LATE " + late;
  }

  /** The report in {@code line}, if it is one. */
  static Optional<TurnsTaken> parse(String line) {
    String[] parts = line.split(" ");
    if (parts.length != 4 || !parts[0].equals("SENT") || !parts[2].equals("LATE")) {
      return Optional.empty();
    }
    return Optional.of(new TurnsTaken(Long.parseLong(parts[1]), Long.parseLong(parts[3])));
  }

  TurnsTaken plus(TurnsTaken other) {
    return new TurnsTaken(sent + other.sent, late + other.late);
  }
}
