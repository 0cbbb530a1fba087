package dev.pacer.testing;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Each request of a run followed from its turn to the door: the turn's instant ({@code
 * Slot.turnNanos()}), when its thread sent it, and when the door stamped it, all on {@code
 * System.nanoTime()}. Each request has a target of its own, the sender records its turn and send
 * under it ({@link #sent}) and the door records its arrival, so that the busiest window at the door
 * can be taken apart: the pacer's turns too close (a double turn), the sends bunched after on-time
 * turns (the sender's threads late), or on-time sends stamped together (the door late).
 */
public final class TurnTrace {

  /** By request target: the turn's instant and the send's. */
  private final Map<String, long[]> sent = new HashMap<>();

  private final long intervalNanos;

  /** For turns at {@code ratePerSecond}. */
  public TurnTrace(double ratePerSecond) {
    this.intervalNanos = Math.round(1e9 / ratePerSecond);
  }

  /**
   * Records that the request to {@code target}, of the turn at {@code turnNanos}, left at {@code
   * sentNanos}.
   */
  public synchronized void sent(String target, long turnNanos, long sentNanos) {
    sent.put(target, new long[] {turnNanos, sentNanos});
  }

  /** The turns of the requests sent. */
  public synchronized Timeline turns() {
    return new Timeline(sent.values().stream().map(r -> r[0]).toList());
  }

  /** The requests' sends. */
  public synchronized Timeline sends() {
    return new Timeline(sent.values().stream().map(r -> r[1]).toList());
  }

  /**
   * The busiest sliding 1-s window among {@code arrivals} taken apart: its requests' turns, sends
   * and arrivals spans, and for its first and last three requests how late each was sent after its
   * turn and stamped after its send, in milliseconds.
   */
  public synchronized String busiestWindow(List<Arrival> arrivals) {
    List<Arrival> sorted = sorted(arrivals);
    int[] ends = Timeline.windowEnds(sorted.stream().map(Arrival::nanos).toList());
    int bestStart = 0;
    int bestCount = 0;
    for (int start = 0; start < sorted.size(); start++) {
      if (ends[start] - start > bestCount) {
        bestCount = ends[start] - start;
        bestStart = start;
      }
    }
    List<Arrival> window = sorted.subList(bestStart, bestStart + bestCount);
    List<long[]> traced = new ArrayList<>();
    for (Arrival a : window) {
      long[] r = sent.get(a.target());
      if (r != null) {
        traced.add(new long[] {r[0], r[1], a.nanos(), a.opened() ? 1 : 0});
      }
    }
    if (traced.isEmpty()) {
      return "busiest window at the door: " + bestCount + " arrivals, none with a traced turn";
    }
    traced.sort(Comparator.comparingLong(r -> r[0]));
    StringBuilder out =
        new StringBuilder(
            String.format(
                "busiest window at the door: %d arrivals (%d traced), whose turns span %.1f ms,"
                    + " sends %.1f ms, arrivals %.1f ms; min gap between turns %.1f ms, spread of"
                    + " the turns about one grid %.1f ms; %d opened a connection. Late (ms) [sent"
                    + " after turn, stamped after send] by turn:",
                bestCount,
                traced.size(),
                spanMillis(traced, 0),
                spanMillis(traced, 1),
                spanMillis(traced, 2),
                minGapMillis(traced),
                gridSpreadMillis(traced),
                traced.stream().filter(r -> r[3] == 1).count()));
    for (int i = 0; i < traced.size(); i++) {
      if (i < 3 || i >= traced.size() - 3) {
        long[] r = traced.get(i);
        out.append(
            String.format(
                " #%d +%.1f [%.1f, %.1f%s]",
                i,
                (r[0] - traced.get(0)[0]) / 1e6,
                (r[1] - r[0]) / 1e6,
                (r[2] - r[1]) / 1e6,
                r[3] == 1 ? " on a new connection" : ""));
      } else if (i == 3) {
        out.append(" ...");
      }
    }
    return out.toString();
  }

  /**
   * The longest time from a traced request's hand-over to its client to the door's stamp, among the
   * requests of every 1-s window of {@code arrivals} (from each arrival on) that holds more than
   * {@code most}: where such a window was made, if not by the turns. 0 if no window holds more, or
   * none of its requests is traced.
   *
   * @param arrivals the run's arrivals at the door
   * @param most the most a window may hold
   * @return the longest delay after a hand-over, in nanoseconds
   */
  public synchronized long longestAfterHandOverInWindowsOver(List<Arrival> arrivals, int most) {
    List<Arrival> sorted = sorted(arrivals);
    int[] ends = Timeline.windowEnds(sorted.stream().map(Arrival::nanos).toList());
    boolean[] over = new boolean[sorted.size()];
    for (int start = 0; start < sorted.size(); start++) {
      if (ends[start] - start > most) {
        for (int i = start; i < ends[start]; i++) {
          over[i] = true;
        }
      }
    }
    long longest = 0;
    for (int i = 0; i < sorted.size(); i++) {
      long[] r = over[i] ? sent.get(sorted.get(i).target()) : null;
      if (r != null) {
        longest = Math.max(longest, sorted.get(i).nanos() - r[1]);
      }
    }
    return longest;
  }

  /**
   * How long the door took to stamp the traced requests of {@code arrivals} after they were sent:
   * the largest, when it came (from the first arrival), and how many took over 10 ms.
   */
  public synchronized String stampDelays(List<Arrival> arrivals) {
    long first = arrivals.stream().mapToLong(Arrival::nanos).min().orElse(0);
    long largest = 0;
    long largestAt = 0;
    int over10 = 0;
    for (Arrival a : arrivals) {
      long[] r = sent.get(a.target());
      if (r == null) {
        continue;
      }
      long delay = a.nanos() - r[1];
      if (delay > largest) {
        largest = delay;
        largestAt = a.nanos() - first;
      }
      if (delay > 10_000_000L) {
        over10++;
      }
    }
    return String.format(
        "stamped after the send: at most %.1f ms (%.3f s into the run), %d over" + " 10 ms",
        largest / 1e6, largestAt / 1e9, over10);
  }

  /**
   * Where the turns of the requests sent leave holes in their grid, each hole's turns missing and
   * when it began (from the first turn, whose instant it gives, to line the holes up with a log
   * stamped on the same clock): turns given up as late, or the limiter's turns taken by no request
   * of the trace.
   */
  public synchronized String holes() {
    List<Long> turns = new ArrayList<>(sent.values().stream().map(r -> r[0]).sorted().toList());
    StringBuilder out = new StringBuilder();
    int missing = 0;
    for (int i = 1; i < turns.size(); i++) {
      long gap = turns.get(i) - turns.get(i - 1);
      long holes = Math.round((double) gap / intervalNanos) - 1;
      if (holes > 0) {
        missing += holes;
        out.append(
            String.format(" %d at +%.3f s;", holes, (turns.get(i - 1) - turns.get(0)) / 1e9));
      }
    }
    return "turns missing from the grid: "
        + missing
        + (missing == 0 ? "" : ":" + out)
        + (turns.isEmpty() ? "" : " (the first turn at " + turns.get(0) + " ns)");
  }

  private static List<Arrival> sorted(List<Arrival> arrivals) {
    List<Arrival> sorted = new ArrayList<>(arrivals);
    sorted.sort(Comparator.comparingLong(Arrival::nanos));
    return sorted;
  }

  private static double spanMillis(List<long[]> traced, int column) {
    long min = Long.MAX_VALUE;
    long max = Long.MIN_VALUE;
    for (long[] r : traced) {
      min = Math.min(min, r[column]);
      max = Math.max(max, r[column]);
    }
    return (max - min) / 1e6;
  }

  /**
   * How far the turns stray from one grid of the interval, wherever each falls on it: the cursor
   * hands out turns an interval apart on the database's clock, so on this clock any spread is the
   * mapping's. (A turn given up as late leaves a hole in the grid, not a stray.)
   */
  private double gridSpreadMillis(List<long[]> traced) {
    long first = traced.get(0)[0];
    long min = Long.MAX_VALUE;
    long max = Long.MIN_VALUE;
    for (long[] r : traced) {
      long off = Math.floorMod(r[0] - first + intervalNanos / 2, intervalNanos) - intervalNanos / 2;
      min = Math.min(min, off);
      max = Math.max(max, off);
    }
    return (max - min) / 1e6;
  }

  private static double minGapMillis(List<long[]> traced) {
    long min = Long.MAX_VALUE;
    for (int i = 1; i < traced.size(); i++) {
      min = Math.min(min, traced.get(i)[0] - traced.get(i - 1)[0]);
    }
    return traced.size() < 2 ? 0 : min / 1e6;
  }
}
