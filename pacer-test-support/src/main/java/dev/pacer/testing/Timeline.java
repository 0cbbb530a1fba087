package dev.pacer.testing;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.List;

/**
 * A merged list of event instants (epoch nanoseconds) from any number of threads or processes, and
 * the three figures the fleet tests bound: the aggregate rate, the busiest sliding 1-s window, and
 * the span.
 */
public final class Timeline {

  private static final long SECOND = 1_000_000_000L;
  private final List<Long> instants;

  public Timeline(Collection<Long> instants) {
    this.instants = new ArrayList<>(instants);
    Collections.sort(this.instants);
  }

  /** The instants of {@code arrivals}. */
  public static Timeline of(Collection<Arrival> arrivals) {
    return new Timeline(arrivals.stream().map(Arrival::nanos).toList());
  }

  /** The instants in [{@code from}, {@code to}). */
  public Timeline between(long from, long to) {
    List<Long> out = new ArrayList<>();
    for (long t : instants) {
      if (t - from >= 0 && t - to < 0) {
        out.add(t);
      }
    }
    return new Timeline(out);
  }

  /** The timeline without its events of the first {@code seconds} after its first one. */
  public Timeline after(double seconds) {
    if (instants.isEmpty()) {
      return this;
    }
    return new Timeline(instantsFrom(instants.get(0) + (long) (seconds * SECOND)));
  }

  /**
   * The timeline without its first event: the steady part of a run whose first request opens the
   * client's connection to the destination inside its turn, and so arrives late by as long as the
   * connection took, which shortens the span the aggregate is judged over.
   */
  public Timeline withoutFirst() {
    return instants.isEmpty() ? this : new Timeline(instants.subList(1, instants.size()));
  }

  /** The shortest time between two consecutive events, or Long.MAX_VALUE if fewer than two. */
  public long shortestGapNanos() {
    long shortest = Long.MAX_VALUE;
    for (int i = 1; i < instants.size(); i++) {
      shortest = Math.min(shortest, instants.get(i) - instants.get(i - 1));
    }
    return shortest;
  }

  /** The first instant, or 0 if there is none. */
  public long first() {
    return instants.isEmpty() ? 0 : instants.get(0);
  }

  /** The last instant, or 0 if there is none. */
  public long last() {
    return instants.isEmpty() ? 0 : instants.get(instants.size() - 1);
  }

  /** The instants at or after {@code from}. */
  public List<Long> instantsFrom(long from) {
    List<Long> out = new ArrayList<>();
    for (long t : instants) {
      if (t - from >= 0) {
        out.add(t);
      }
    }
    return out;
  }

  public int size() {
    return instants.size();
  }

  /** From the first event to the last, in seconds. */
  public double spanSeconds() {
    return instants.isEmpty() ? 0 : (instants.get(instants.size() - 1) - instants.get(0)) / 1e9;
  }

  /** (events - 1) ÷ span: the rate the events were delivered at; 0 for fewer than two. */
  public double aggregateRatePerSecond() {
    return instants.size() < 2 ? 0 : (instants.size() - 1) / spanSeconds();
  }

  /** The most events in any half-open window [t, t + 1 s) that starts at an event. */
  public int peakOneSecondWindow() {
    int[] ends = windowEnds(instants);
    int peak = 0;
    for (int start = 0; start < ends.length; start++) {
      peak = Math.max(peak, ends[start] - start);
    }
    return peak;
  }

  /**
   * The first event of the earliest window that holds {@link #peakOneSecondWindow()} events, or 0
   * if there is none.
   */
  public long busiestWindowStart() {
    int[] ends = windowEnds(instants);
    int best = 0;
    for (int start = 1; start < ends.length; start++) {
      if (ends[start] - start > ends[best] - best) {
        best = start;
      }
    }
    return instants.isEmpty() ? 0 : instants.get(best);
  }

  /**
   * The sliding 1-s window every window figure is taken from: for each instant of {@code sorted}
   * (in time order), the index just past the last instant of the half-open window [that instant,
   * that instant + 1 s). The window from index {@code i} holds {@code ends[i] - i} events.
   */
  public static int[] windowEnds(List<Long> sorted) {
    int[] ends = new int[sorted.size()];
    int end = 0;
    for (int start = 0; start < sorted.size(); start++) {
      while (end < sorted.size() && sorted.get(end) - sorted.get(start) < SECOND) {
        end++;
      }
      ends[start] = end;
    }
    return ends;
  }

  /**
   * How far the events stray from a perfect grid at {@code ratePerSecond}, in seconds: the largest
   * minus the smallest of (event i - first event - i intervals). A pacer that grants every turn on
   * time shows only the spread of its wake-up and timestamp delays; a window of 1 s can then hold
   * one event more than the ceiling, and two more only if this exceeds an interval.
   */
  public double gridSpreadSeconds(double ratePerSecond) {
    double interval = SECOND / ratePerSecond;
    double min = Double.MAX_VALUE;
    double max = -Double.MAX_VALUE;
    for (int i = 0; i < instants.size(); i++) {
      double deviation = instants.get(i) - instants.get(0) - i * interval;
      min = Math.min(min, deviation);
      max = Math.max(max, deviation);
    }
    return instants.isEmpty() ? 0 : (max - min) / 1e9;
  }

  @Override
  public String toString() {
    return String.format(
        "%d events over %.3f s: aggregate %.2f/s, peak 1-s window %d",
        size(), spanSeconds(), aggregateRatePerSecond(), peakOneSecondWindow());
  }
}
