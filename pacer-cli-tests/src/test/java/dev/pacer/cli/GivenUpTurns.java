package dev.pacer.cli;

import java.time.Duration;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.LocalTime;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The turns a run's processes gave up as late, each with its destination and when, read from their
 * logs: every one is logged at DEBUG on {@code dev.pacer.LateTurns}, which {@link Cli#spawn} turns
 * on. A bound on the rate delivered over a span charges the limiter only with the turns it did not
 * give up there: those it did are the busy host's, bounded apart ({@code FleetBounds}'s late-turn
 * bounds).
 *
 * <p>The log stamps the wall clock's time of day to the millisecond; a stamp is placed on this
 * JVM's {@link System#nanoTime()} through one reading of both clocks, on the day that puts it
 * nearest to that reading.
 */
final class GivenUpTurns {

  /** The option that logs every turn given up. */
  static final String LOG_EACH = "-Dorg.slf4j.simpleLogger.log.dev.pacer.LateTurns=debug";

  private static final Pattern LINE =
      Pattern.compile(
          "^(\\d\\d:\\d\\d:\\d\\d\\.\\d{3}) DEBUG LateTurns - Destination (\\S+): turn given up,",
          Pattern.MULTILINE);

  private record GivenUp(String destination, long nanos) {}

  private final List<GivenUp> turns;

  private GivenUpTurns(List<GivenUp> turns) {
    this.turns = turns;
  }

  /** The turns given up that {@code stderr} logs. */
  static GivenUpTurns in(String stderr) {
    long nanos = System.nanoTime();
    LocalDateTime wall = LocalDateTime.now();
    List<GivenUp> turns = new ArrayList<>();
    Matcher m = LINE.matcher(stderr);
    while (m.find()) {
      turns.add(new GivenUp(m.group(2), nanos + sinceReading(wall, LocalTime.parse(m.group(1)))));
    }
    return new GivenUpTurns(List.copyOf(turns));
  }

  /** How far after {@code wall} the nearest instant at {@code timeOfDay} lies, in nanoseconds. */
  static long sinceReading(LocalDateTime wall, LocalTime timeOfDay) {
    LocalDate day = wall.toLocalDate();
    long best = Long.MAX_VALUE;
    for (int offset = -1; offset <= 1; offset++) {
      long since = Duration.between(wall, day.plusDays(offset).atTime(timeOfDay)).toNanos();
      if (Math.abs(since) < Math.abs(best)) {
        best = since;
      }
    }
    return best;
  }

  /**
   * The turns of {@code destination} given up in [{@code fromNanos}, {@code toNanos}), widened by
   * the log's millisecond at each end.
   */
  long of(String destination, long fromNanos, long toNanos) {
    long ms = Duration.ofMillis(1).toNanos();
    return turns.stream()
        .filter(t -> t.destination().equals(destination))
        .filter(t -> t.nanos() - (fromNanos - ms) >= 0 && (toNanos + ms) - t.nanos() > 0)
        .count();
  }

  /**
   * Every turn of {@code destination} given up, wherever in the run: for arrivals whose instants
   * are known on another clock only.
   */
  long of(String destination) {
    return turns.stream().filter(t -> t.destination().equals(destination)).count();
  }

  /** Every turn given up. */
  int size() {
    return turns.size();
  }
}
