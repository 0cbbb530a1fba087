package dev.pacer.cli.run;

import dev.pacer.DestinationLimiter;
import dev.pacer.cli.model.HaltReason;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
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
 *   <li>{@code FETCH_FAILURES}: 1% of the last 500 items failed (5 of them).
 * </ul>
 *
 * An item is counted once, at its first attempt ({@link ItemOutcome}): failed if its destination
 * did not answer it (a network error, a timeout, a 5xx, a 408) or this process failed it; an answer
 * about the item itself (a 404, a body over the cap) is no failure of the run's. Throttled
 * (429/503) attempts are never recorded here: rate pressure slows a run, it never halts it. The
 * failure window is a fixed 500 items, so 5 failures among the first items halt as surely as 5
 * among the last 500 of a long run.
 *
 * <p>The host's figures, load and RSS, are read at most once every {@link #HOST_FIGURES_EVERY} and
 * the last reading stands in between: the load average itself moves only every 5 s, and reading
 * {@code /proc/self/status} (a file opened and parsed) before every item would cost a busy run's
 * fetch threads a share of their CPU (docs/benchmarks.md). A crossed bar is therefore seen up to
 * one such period late.
 */
public final class Envelope {

  public static final int FAILURE_WINDOW = 500;
  public static final double MAX_FAILURE_FRACTION = 0.01;
  public static final int MAX_FAILURES = (int) Math.ceil(FAILURE_WINDOW * MAX_FAILURE_FRACTION);

  /** How long a reading of the host's load and this process's RSS stands. */
  public static final Duration HOST_FIGURES_EVERY = Duration.ofSeconds(1);

  /** A crossed bar and the figures that crossed it. */
  public record Breach(HaltReason bar, String figures) {}

  private final double maxLoad;
  private final long maxRssBytes;
  private final DoubleSupplier load;
  private final LongSupplier rss;
  private final LongSupplier nanoTime;
  private final boolean[] window = new boolean[FAILURE_WINDOW];
  private int next;
  private int recorded;
  private int failuresInWindow;
  private boolean figuresRead;
  private long figuresReadAt;
  private double loadSeen;
  private long rssSeen;

  /**
   * An envelope reading the host's load from {@code load} and the process's RSS from {@code rss},
   * each at most once every {@link #HOST_FIGURES_EVERY} of {@code nanoTime}.
   */
  public Envelope(
      double maxLoad,
      long maxRssBytes,
      DoubleSupplier load,
      LongSupplier rss,
      LongSupplier nanoTime) {
    this.maxLoad = maxLoad;
    this.maxRssBytes = maxRssBytes;
    this.load = load;
    this.rss = rss;
    this.nanoTime = nanoTime;
  }

  /** The envelope of this host and process. */
  public static Envelope forThisProcess(double maxLoad, long maxRssBytes) {
    return new Envelope(
        maxLoad,
        maxRssBytes,
        () -> ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage(),
        Envelope::residentBytes,
        System::nanoTime);
  }

  /** Counts one item, failed or not (see the class comment for which are). */
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
    double loadNow;
    long rssNow;
    synchronized (this) {
      if (failuresInWindow >= MAX_FAILURES) {
        return Optional.of(
            new Breach(
                HaltReason.FETCH_FAILURES,
                failuresInWindow
                    + " of the last "
                    + recorded
                    + " items failed (bar: "
                    + MAX_FAILURES
                    + " of "
                    + FAILURE_WINDOW
                    + ", 1%)"));
      }
      long now = nanoTime.getAsLong();
      if (!figuresRead || now - figuresReadAt >= HOST_FIGURES_EVERY.toNanos()) {
        loadSeen = load.getAsDouble();
        rssSeen = rss.getAsLong();
        figuresRead = true;
        figuresReadAt = now;
      }
      loadNow = loadSeen;
      rssNow = rssSeen;
    }
    if (loadNow > maxLoad) {
      return Optional.of(
          new Breach(
              HaltReason.HOST_LOAD,
              String.format("load average %.2f above the ceiling %.2f", loadNow, maxLoad)));
    }
    if (rssNow > maxRssBytes) {
      return Optional.of(
          new Breach(
              HaltReason.RSS,
              String.format(
                  "resident memory %d MiB above the ceiling %d MiB",
                  rssNow >> 20, maxRssBytes >> 20)));
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
