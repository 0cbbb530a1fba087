package dev.pacer.cli;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.List;

/**
 * The three figures the fleet-ceiling bounds are stated in (issue 2's bounds), computed from the
 * instants at which the destination saw requests: aggregate rate, busiest sliding 1-s window, span.
 */
final class Fleet {

  private final List<Long> instants;

  Fleet(Collection<Long> nanos) {
    this.instants = new ArrayList<>(nanos);
    Collections.sort(this.instants);
  }

  static Fleet of(List<TestDestination.Arrival> arrivals) {
    return new Fleet(arrivals.stream().map(TestDestination.Arrival::nanos).toList());
  }

  int size() {
    return instants.size();
  }

  double spanSeconds() {
    return (instants.get(instants.size() - 1) - instants.get(0)) / 1e9;
  }

  double aggregateRate() {
    return (instants.size() - 1) / spanSeconds();
  }

  int peakOneSecondWindow() {
    int peak = 0;
    int end = 0;
    for (int start = 0; start < instants.size(); start++) {
      while (end < instants.size() && instants.get(end) - instants.get(start) < 1_000_000_000L) {
        end++;
      }
      peak = Math.max(peak, end - start);
    }
    return peak;
  }

  @Override
  public String toString() {
    return String.format("%d requests, aggregate %.2f/s, peak 1-s window %d, span %.3f s",
        size(), aggregateRate(), peakOneSecondWindow(), spanSeconds());
  }
}
