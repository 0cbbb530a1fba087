package dev.pacer.postgres;

import dev.pacer.testing.Arrival;
import dev.pacer.testing.Timeline;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Collectors;

/**
 * One run's arrivals among a door's: each run of the fleet tests sends to a path of its own, and
 * each member names itself ({@link Arrival#WORKER_HEADER}), so that runs sharing a door, and the
 * requests that open the members' connections ({@link DoorClient#OPENING_PATH}), stay apart.
 */
final class RunArrivals {

  /**
   * How long after a run's first arrival its steady part begins: at GO every member wakes at once,
   * and on a loaded machine the first requests can reach the door later than the stamp error the
   * aggregate allows ({@link dev.pacer.testing.FleetBounds#STAMP_ERROR_SECONDS}).
   */
  static final double START_SECONDS = 1;

  private RunArrivals() {}

  /** The steady part of {@code run}: all of it but its first {@link #START_SECONDS}. */
  static Timeline steady(Timeline run) {
    return run.after(START_SECONDS);
  }

  /**
   * The steady part of {@code run} up to {@code askersStopped} (this JVM's {@link
   * System#nanoTime()}), when its askers began to stop: after it the fleet drains the turns already
   * reserved, and a lease sized for asks that no longer come leaves turns unused, which is not
   * delivery at the ceiling to judge.
   */
  static Timeline steady(Timeline run, long askersStopped) {
    Timeline steady = steady(run);
    return steady.size() == 0 ? steady : steady.between(steady.first(), askersStopped);
  }

  /** The arrivals on {@code path}. */
  static Timeline on(List<Arrival> arrivals, String path) {
    return Timeline.of(of(arrivals, path));
  }

  /** The arrivals on {@code path}, each with its request. */
  static List<Arrival> of(List<Arrival> arrivals, String path) {
    return arrivals.stream().filter(a -> a.path().equals(path)).toList();
  }

  /** The arrivals on {@code path} of each member, by its name, the names in order. */
  static Map<String, Timeline> byMember(List<Arrival> arrivals, String path) {
    return arrivals.stream()
        .filter(a -> a.path().equals(path))
        .collect(
            Collectors.groupingBy(
                Arrival::worker,
                TreeMap::new,
                Collectors.collectingAndThen(Collectors.toList(), Timeline::of)));
  }
}
