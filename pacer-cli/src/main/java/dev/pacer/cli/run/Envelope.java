package dev.pacer.cli.run;

import dev.pacer.DestinationLimiter;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import java.util.function.DoubleSupplier;
import java.util.function.LongSupplier;

/**
 * The operating envelope of a run, checked between items. Four bars; crossing any one halts the
 * run:
 *
 * <ul>
 *   <li>{@code HOST_LOAD}: the host's 1-minute load average above {@code maxLoad};
 *   <li>{@code RSS}: this process's resident memory above {@code maxRssBytes};
 *   <li>{@code DESTINATION_LOCKOUT}: the destination answered a lockout status (403);
 *   <li>{@code FETCH_FAILURES}: ordinary failures reached 1% of the last 500 outcomes (5 of them).
 * </ul>
 *
 * Throttled (429/503) outcomes are never recorded here: rate pressure slows a run, it never
 * halts it. The failure window is a fixed 500 outcomes, so 5 failures among the first items halt
 * as surely as 5 among the last 500 of a long run.
 */
public final class Envelope {

  public static final int FAILURE_WINDOW = 500;
  public static final double MAX_FAILURE_FRACTION = 0.01;
  static final int MAX_FAILURES = (int) Math.ceil(FAILURE_WINDOW * MAX_FAILURE_FRACTION);

  /** A crossed bar and the figures that crossed it. */
  public record Breach(HaltReason bar, String figures) {}

  private final double maxLoad;
  private final long maxRssBytes;
  private final DoubleSupplier load;
  private final LongSupplier rss;
  private final boolean[] window = new boolean[FAILURE_WINDOW];
  private int next;
  private int recorded;
  private int failuresInWindow;

  public Envelope(double maxLoad, long maxRssBytes, DoubleSupplier load, LongSupplier rss) {
    this.maxLoad = maxLoad;
    this.maxRssBytes = maxRssBytes;
    this.load = load;
    this.rss = rss;
  }

  /** The envelope of this host and process. */
  public static Envelope forThisProcess(double maxLoad, long maxRssBytes) {
    return new Envelope(maxLoad, maxRssBytes,
        () -> ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage(),
        Envelope::residentBytes);
  }

  /** Counts one fetched item: a success or an ordinary failure (never a throttle). */
  public synchronized void recordOutcome(boolean failed) {
    if (recorded == FAILURE_WINDOW && window[next]) {
      failuresInWindow--;
    }
    window[next] = failed;
    if (failed) {
      failuresInWindow++;
    }
    next = (next + 1) % FAILURE_WINDOW;
    recorded = Math.min(FAILURE_WINDOW, recorded + 1);
  }

  /** The first bar crossed, if any. */
  public Optional<Breach> check(DestinationLimiter limiter) {
    if (limiter.isLockedOut()) {
      return Optional.of(new Breach(HaltReason.DESTINATION_LOCKOUT, limiter.lockoutReason()));
    }
    return checkBars();
  }

  /**
   * The first bar of this process crossed, if any, without the destination's lockout: in per-host
   * mode a lockout stops its host, not the run.
   */
  public Optional<Breach> checkBars() {
    synchronized (this) {
      if (failuresInWindow >= MAX_FAILURES) {
        return Optional.of(new Breach(HaltReason.FETCH_FAILURES, failuresInWindow
            + " ordinary fetch failures in the last " + recorded + " items (bar: "
            + MAX_FAILURES + " of " + FAILURE_WINDOW + ", 1%)"));
      }
    }
    double loadNow = load.getAsDouble();
    if (loadNow > maxLoad) {
      return Optional.of(new Breach(HaltReason.HOST_LOAD, String.format(
          "load average %.2f above the ceiling %.2f", loadNow, maxLoad)));
    }
    long rssNow = rss.getAsLong();
    if (rssNow > maxRssBytes) {
      return Optional.of(new Breach(HaltReason.RSS, String.format(
          "resident memory %d MiB above the ceiling %d MiB", rssNow >> 20, maxRssBytes >> 20)));
    }
    return Optional.empty();
  }

  /** This process's resident set size, from /proc; -1 where /proc is not available. */
  static long residentBytes() {
    try {
      for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
        if (line.startsWith("VmRSS:")) {
          String kb = line.substring(6).trim().split("\\s+")[0];
          return Long.parseLong(kb) * 1024;
        }
      }
    } catch (IOException | RuntimeException e) {
      return -1;
    }
    return -1;
  }
}
