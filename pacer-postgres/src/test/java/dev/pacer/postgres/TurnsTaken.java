package dev.pacer.postgres;

import dev.pacer.testing.JvmStalls;
import java.util.Optional;

/**
 * What fleet members report at the end of a run: the requests they sent, one per turn, the turns
 * their limiters gave up as late ({@link dev.pacer.DestinationLimiter#lateTurnsSkipped()}), which
 * the tests sum over the fleet, and, from a member that measured them ({@link JvmStalls}), its
 * JVM's stalls over the same span. A worker JVM prints it as one line, {@code SENT <n> LATE <n>},
 * with {@code STALLED <longest ns> <total ns> <turns>} after it where it measured them.
 *
 * @param sent requests sent, each after its turn
 * @param late turns given up because their taker woke too late for them
 * @param longestStallNanos the longest stall of the member's JVM
 * @param stalledNanos the member's JVM's stalls added up
 * @param turnsInStalls the turns the member's JVM's stalls may have cost it ({@link
 *     JvmStalls#turnsInStallsBetween})
 */
record TurnsTaken(
    long sent, long late, long longestStallNanos, long stalledNanos, long turnsInStalls) {

  static final TurnsTaken NONE = new TurnsTaken(0, 0);

  TurnsTaken(long sent, long late) {
    this(sent, late, 0, 0, 0);
  }

  /** The line a worker prints. */
  String line() {
    return "SENT "
        + sent
        + " LATE "
        + late
        + " STALLED "
        + longestStallNanos
        + " "
        + stalledNanos
        + " "
        + turnsInStalls;
  }

  /** The report in {@code line}, if it is one. */
  static Optional<TurnsTaken> parse(String line) {
    String[] parts = line.split(" ");
    if (parts.length != 8
        || !parts[0].equals("SENT")
        || !parts[2].equals("LATE")
        || !parts[4].equals("STALLED")) {
      return Optional.empty();
    }
    return Optional.of(
        new TurnsTaken(
            Long.parseLong(parts[1]),
            Long.parseLong(parts[3]),
            Long.parseLong(parts[5]),
            Long.parseLong(parts[6]),
            Long.parseLong(parts[7])));
  }

  /**
   * Two members' reports together: their counts added, the longer of their longest stalls, the
   * turns their stalls may have cost added.
   */
  TurnsTaken plus(TurnsTaken other) {
    return new TurnsTaken(
        sent + other.sent,
        late + other.late,
        Math.max(longestStallNanos, other.longestStallNanos),
        stalledNanos + other.stalledNanos,
        turnsInStalls + other.turnsInStalls);
  }
}
