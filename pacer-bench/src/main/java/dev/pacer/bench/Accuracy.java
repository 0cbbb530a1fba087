package dev.pacer.bench;

import dev.pacer.testing.Timeline;
import java.util.Arrays;

/**
 * What a fleet delivered against a ceiling, from the merged timeline of every acquisition (epoch
 * microseconds, from the same host clock in every process): the delivered rate (acquisitions after
 * the first, over the span from the first to the last) divided by the ceiling, and the most
 * acquisitions in any 1-second window {@code [t, t + 1 s)}.
 */
record Accuracy(int processes, int threadsPerProcess, double ceiling, long[] sortedMicros) {

  static Accuracy of(int processes, int threadsPerProcess, double ceiling, long[] micros) {
    long[] sorted = micros.clone();
    Arrays.sort(sorted);
    if (sorted.length < 2) {
      throw new IllegalStateException("fewer than two acquisitions: " + sorted.length);
    }
    return new Accuracy(processes, threadsPerProcess, ceiling, sorted);
  }

  int count() {
    return sortedMicros.length;
  }

  double spanSeconds() {
    return (sortedMicros[sortedMicros.length - 1] - sortedMicros[0]) / 1e6;
  }

  double deliveredRatio() {
    return (count() - 1) / spanSeconds() / ceiling;
  }

  int peakWindow() {
    return new Timeline(Arrays.stream(sortedMicros).map(t -> t * 1000).boxed().toList())
        .peakOneSecondWindow();
  }

  /**
   * How late each acquisition came against a perfect grid at the ceiling's interval, anchored so
   * that the earliest is on time: a pacer whose every turn is granted on the grid and woken exactly
   * would show zeros; thread wake-up delays show as lateness, and bunching past the ceiling in a
   * 1-s window needs lateness that differs by more than an interval. Milliseconds, sorted.
   */
  double[] latenessMillis() {
    double interval = 1e6 / ceiling;
    double[] deviation = new double[sortedMicros.length];
    double min = Double.MAX_VALUE;
    for (int i = 0; i < deviation.length; i++) {
      deviation[i] = sortedMicros[i] - sortedMicros[0] - i * interval;
      min = Math.min(min, deviation[i]);
    }
    for (int i = 0; i < deviation.length; i++) {
      deviation[i] = (deviation[i] - min) / 1000.0;
    }
    Arrays.sort(deviation);
    return deviation;
  }

  /** Nearest-rank percentile of {@link #latenessMillis()}. */
  double latenessPercentileMillis(double p) {
    double[] late = latenessMillis();
    return late[Math.max(0, (int) Math.ceil(p * late.length) - 1)];
  }

  /** Acquisitions in the 1-s window ending at each step from the first second on (for charts). */
  int[] slidingWindowCounts(long stepMicros) {
    long first = sortedMicros[0];
    long last = sortedMicros[sortedMicros.length - 1];
    int steps = (int) Math.max(1, (last - first) / stepMicros + 1);
    int[] counts = new int[steps];
    int lo = 0;
    int hi = 0;
    for (int s = 0; s < steps; s++) {
      long end = first + s * stepMicros;
      while (hi < sortedMicros.length && sortedMicros[hi] <= end) {
        hi++;
      }
      while (lo < hi && sortedMicros[lo] <= end - 1_000_000L) {
        lo++;
      }
      counts[s] = hi - lo;
    }
    return counts;
  }
}
