package dev.pacer.cli;

import dev.pacer.DestinationFetcher;
import dev.pacer.testing.Timeline;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.function.ToLongFunction;

/**
 * What a fleet of CLI workers owes one destination, given that each worker's first request there
 * takes two turns ({@link DestinationFetcher}, at intervals under {@link
 * DestinationFetcher#FIRST_REQUEST_MARGIN_BELOW}): a turn left out per worker, somewhere among the
 * turns its threads reserve together at the start, not always at the worker's first arrival.
 *
 * <ul>
 *   <li>The steady part, which the aggregate bound judges: the arrivals after every worker's first
 *       one, the cold first requests left out. A double turn inside it only slows it.
 *   <li>The rate a run delivers if it takes every turn, which the delivered bound judges the whole
 *       run against: its n arrivals span n - 1 intervals, plus one per worker for the double turns.
 *       A limiter that gives up one turn in ten falls below 0.95 of it whatever the run's length.
 * </ul>
 */
final class SteadyPart {

  private SteadyPart() {}

  /**
   * The instants of {@code arrivals} after the latest of the workers' first arrivals, each arrival
   * read for its instant ({@link System#nanoTime()}) and the worker that sent it.
   */
  static <A> Timeline of(List<A> arrivals, ToLongFunction<A> nanos, Function<A, String> worker) {
    Map<String, Long> firsts = firsts(arrivals, nanos, worker);
    long lastFirst = firsts.values().stream().mapToLong(Long::longValue).max().orElse(0);
    return new Timeline(arrivals.stream().mapToLong(nanos).filter(t -> t - lastFirst > 0)
        .boxed().toList());
  }

  /**
   * The rate {@code arrivals}, all of a run's arrivals at one destination with this {@code
   * ceiling}, span if the fleet took every turn: see the class comment.
   */
  static <A> double deliverable(double ceiling, List<A> arrivals, ToLongFunction<A> nanos,
      Function<A, String> worker) {
    int workers = firsts(arrivals, nanos, worker).size();
    boolean doubleTurns =
        1 / ceiling < DestinationFetcher.FIRST_REQUEST_MARGIN_BELOW.toNanos() / 1e9;
    int intervals = arrivals.size() - 1;
    return ceiling * intervals / (intervals + (doubleTurns ? workers : 0));
  }

  private static <A> Map<String, Long> firsts(List<A> arrivals, ToLongFunction<A> nanos,
      Function<A, String> worker) {
    Map<String, Long> firsts = new HashMap<>();
    for (A a : arrivals) {
      firsts.merge(String.valueOf(worker.apply(a)), nanos.applyAsLong(a), Math::min);
    }
    return firsts;
  }
}
