package dev.pacer.cli;

import dev.pacer.jdkhttp.fetch.DestinationFetcher;
import java.util.List;
import java.util.function.Function;
import java.util.function.ToLongFunction;

/**
 * The rate a fleet of CLI workers delivers to one destination if it takes every turn, which the
 * delivered bound ({@code FleetBounds.assertDelivered}) judges a whole run against. Each worker's
 * first request there takes two turns ({@link DestinationFetcher}, at intervals under {@link
 * DestinationFetcher#FIRST_REQUEST_MARGIN_BELOW}), somewhere among the turns its threads reserve
 * together at the start, not always at the worker's first arrival: so n arrivals span n - 1
 * intervals, plus one for each worker. A limiter that gives up one turn in ten falls below 0.95 of
 * that whatever the run's length.
 */
final class DeliverableRate {

  private DeliverableRate() {}

  /**
   * The rate {@code arrivals}, all of a run's arrivals at one destination with this {@code
   * ceiling}, each read for its instant and the worker that sent it, span if every turn was taken.
   */
  static <A> double of(
      double ceiling, List<A> arrivals, ToLongFunction<A> nanos, Function<A, String> worker) {
    long workers = arrivals.stream().map(a -> String.valueOf(worker.apply(a))).distinct().count();
    boolean doubleTurns =
        1 / ceiling < DestinationFetcher.FIRST_REQUEST_MARGIN_BELOW.toNanos() / 1e9;
    int intervals = arrivals.size() - 1;
    return ceiling * intervals / (intervals + (doubleTurns ? workers : 0));
  }
}
