package dev.pacer.cli.run;

import dev.pacer.Destination;
import dev.pacer.jdkhttp.fetch.DestinationFetcher;
import dev.pacer.spi.Cursor;
import dev.pacer.testing.FakeTime;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;
import java.util.Set;

/**
 * A per-host worker's state driven over many hosts as the worker drives it, on a fake clock: one
 * claim after another, each of a new host, {@code perSecond} claims a second; each claim's turn
 * taken through the host's fetcher's limiter as the claim prepaid it, and answered clean; and a
 * heartbeat every second, which forgets the idle hosts and hands on the clean answers. Nothing is
 * sent: the state is what the worker keeps per host (fetchers, limiters, the cursor's listeners,
 * the clean answers), not the HTTP client's connections. For {@code HostFetchersTest} and the
 * bench's heap measurement ({@code pacer-bench}'s {@code HostHeap}).
 */
public final class PerHostDriver {

  /** Told at each checkpoint: how many hosts have been claimed, and how many fetchers are held. */
  @FunctionalInterface
  public interface Checkpoint {
    void reached(int hostsClaimed, int fetchersHeld) throws Exception;
  }

  /** The hosts' ceiling: one request a second each. */
  static final double RATE = 1;

  private final FakeTime time = new FakeTime();
  private final HostFetchers hosts;

  /**
   * @param shared the cursor the hosts' limiters pace and listen on, as the worker's
   */
  public PerHostDriver(Cursor shared) {
    Destination template = Destination.builder("template").ratePerSecond(RATE).build();
    RunSettings settings =
        new RunSettings(
            "run",
            "job",
            template,
            8,
            Path.of("unused"),
            60_000,
            3,
            5,
            1e9,
            Long.MAX_VALUE,
            1 << 20,
            Duration.ofSeconds(10),
            5,
            false,
            0,
            true,
            false,
            false,
            Duration.ofSeconds(30),
            false,
            Optional.empty(),
            Duration.ZERO);
    this.hosts = new HostFetchers(settings, shared, sent -> {}, new LimiterCounts(), time);
  }

  /**
   * Claims {@code count} new hosts, {@code h1.domain} to {@code h<count>.domain}, {@code perSecond}
   * a second, telling {@code at} of each number of claims in {@code checkpoints} (0: before the
   * first), after that second's heartbeat if it had one.
   */
  public void drive(
      String domain, int count, int perSecond, Set<Integer> checkpoints, Checkpoint at)
      throws Exception {
    if (checkpoints.contains(0)) {
      at.reached(0, hosts.fetchersHeld());
    }
    for (int i = 1; i <= count; i++) {
      String host = "h" + i + "." + domain;
      DestinationFetcher fetcher = hosts.forHost(host, RATE);
      hosts.turns().prepay(host, Duration.ZERO, fetcher.limiter().destination().interval(), 1);
      fetcher.limiter().acquire().close();
      fetcher.limiter().noteCleanResponse();
      if (i % perSecond == 0) {
        time.advance(Duration.ofSeconds(1));
        hosts.evictIdle();
        hosts.turns().drainCleanAnswers();
      }
      if (checkpoints.contains(i)) {
        at.reached(i, hosts.fetchersHeld());
      }
    }
  }
}
