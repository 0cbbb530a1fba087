package dev.pacer.cli.run;

import dev.pacer.LockedOutException;
import dev.pacer.ThrottledException;
import dev.pacer.cli.db.RobotsStore;
import dev.pacer.cli.db.RobotsStore.Fetched;
import dev.pacer.cli.db.RobotsStore.Settlement;
import dev.pacer.cli.db.RobotsStore.Work;
import dev.pacer.jdkhttp.fetch.DestinationFetcher;
import dev.pacer.jdkhttp.fetch.FetchFailedException;
import dev.pacer.jdkhttp.fetch.FetchResponse;
import java.net.URI;
import java.time.Duration;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.UUID;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A worker's part in {@code --robots}: a fetch thread with a host's robots.txt due (see {@link
 * RobotsStore}) leases it, fetches it through the host's own ceiling ({@link
 * HostFetchers#robotsFetcher}), and applies what it means ({@link RobotsPolicy}) to the host's
 * items, fleet-wide, in one transaction; or applies the answer a run before it stored. Once no host
 * of the job has its robots.txt to settle, this process stops asking.
 */
final class RobotsReader {

  private static final Logger log = LoggerFactory.getLogger(RobotsReader.class);

  /** A failed robots.txt is asked again after this, as a failed item is retried. */
  private static final Duration FAILURE_RETRY = Duration.ofSeconds(2);

  private final RunSettings settings;
  private final String workerId;
  private final HostFetchers hosts;
  private final Supplier<RobotsStore> store;
  private final Retrying retrying;
  private final RobotsPolicy policy;
  private volatile boolean settled;

  /** Hosts whose robots.txt this process's threads hold right now. */
  private final java.util.concurrent.atomic.AtomicInteger holding =
      new java.util.concurrent.atomic.AtomicInteger();

  RobotsReader(
      RunSettings settings,
      String workerId,
      HostFetchers hosts,
      Supplier<RobotsStore> store,
      Retrying retrying) {
    this.settings = settings;
    this.workerId = workerId;
    this.hosts = hosts;
    this.store = store;
    this.retrying = retrying;
    this.policy = new RobotsPolicy(settings.maxCrawlDelay());
  }

  /**
   * Settles one host's robots.txt if one is due. False if none is now (then the thread claims
   * items): those of hosts still behind their gates are not claimable yet.
   */
  boolean settleNext() throws InterruptedException {
    if (settled) {
      return false;
    }
    // One token for every attempt: an attempt whose answer was lost leased under it.
    String token = UUID.randomUUID().toString();
    Retrying.Attempt<Optional<Work>> claimed =
        retrying.call(
            "claim a host's robots.txt",
            () -> store.get().claim(settings.job(), workerId, token, settings.leaseMillis()),
            true);
    if (!(claimed instanceof Retrying.Attempt.Answered<Optional<Work>> answered)) {
      return false;
    }
    if (answered.value().isEmpty()) {
      Retrying.Attempt<Boolean> open =
          retrying.call(
              "look for robots.txt to read", () -> store.get().hasOpenHosts(settings.job()), true);
      if (open instanceof Retrying.Attempt.Answered<Boolean> o && !o.value()) {
        settled = true;
      }
      return false;
    }
    holding.incrementAndGet();
    try {
      settle(answered.value().get());
    } finally {
      holding.decrementAndGet();
    }
    return true;
  }

  /** Whether a thread of this process holds a host's robots.txt: its lease wants extending. */
  boolean reading() {
    return holding.get() > 0;
  }

  private void settle(Work work) throws InterruptedException {
    if (work.sampleUrl().isEmpty()) {
      apply(
          work,
          Optional.empty(),
          new Settlement("no item left: not fetched", url -> false, "", Duration.ZERO),
          "");
      return;
    }
    String robotsUrl = URI.create(work.sampleUrl().get()).resolve("/robots.txt").toString();
    if (work.stored().isPresent()) {
      apply(work, Optional.empty(), policy.settle(robotsUrl, work.stored().get()), robotsUrl);
      return;
    }
    DestinationFetcher fetcher = hosts.robotsFetcher(work.host(), work.rate());
    Fetched fetched;
    try {
      FetchResponse response = fetcher.fetch(URI.create(robotsUrl));
      fetched = new Fetched(response.status(), response.body());
    } catch (ThrottledException e) {
      Duration after = fetcher.limiter().currentInterval().multipliedBy(4);
      again(
          work,
          "HTTP " + e.status() + " (throttled)",
          settings.maxThrottles(),
          after.compareTo(Duration.ofSeconds(1)) < 0 ? Duration.ofSeconds(1) : after);
      return;
    } catch (LockedOutException e) {
      // The host was locked out by another request; the claim finds it so and reports it.
      retrying.call(
          "record a host's robots.txt",
          () -> {
            store.get().giveUp(work, "host locked out: " + e.getMessage(), false);
            return true;
          },
          false);
      return;
    } catch (FetchFailedException e) {
      OptionalInt status = e.status();
      if (status.isPresent()
          && status.getAsInt() / 100 != 2
          && RobotsPolicy.settles(status.getAsInt())) {
        fetched = new Fetched(status.getAsInt(), new byte[0]);
      } else {
        again(work, e.getMessage(), settings.maxAttempts(), FAILURE_RETRY);
        return;
      }
    }
    apply(work, Optional.of(fetched), policy.settle(robotsUrl, fetched), robotsUrl);
  }

  /**
   * robots.txt is to be asked again after {@code after}; after {@code most} attempts the host's
   * items are deferred to the next run instead.
   */
  private void again(Work work, String why, int most, Duration after) throws InterruptedException {
    boolean giveUp = work.attempts() + 1 >= most;
    retrying.call(
        "record a host's robots.txt",
        () -> {
          if (giveUp) {
            store
                .get()
                .giveUp(
                    work,
                    why
                        + "; "
                        + (work.attempts() + 1)
                        + " attempt(s): items"
                        + " deferred to the next run",
                    true);
          } else {
            store.get().retry(work, why, after);
          }
          return true;
        },
        false);
    if (giveUp) {
      log.warn(
          "robots.txt of {} could not be had ({}) after {} attempt(s): its items are deferred"
              + " to the next run, which asks again",
          work.host(),
          why,
          work.attempts() + 1);
    } else {
      log.info("robots.txt of {}: {}; asked again in {} ms", work.host(), why, after.toMillis());
    }
  }

  private void apply(Work work, Optional<Fetched> fetched, Settlement settlement, String url)
      throws InterruptedException {
    Retrying.Attempt<Integer> skipped =
        retrying.call(
            "apply a host's robots.txt",
            () -> store.get().settle(work, fetched, settlement),
            false);
    if (skipped instanceof Retrying.Attempt.Answered<Integer> n) {
      log.info(
          "robots.txt of {} ({}): {}; {} item(s) skipped",
          work.host(),
          url,
          settlement.verdict(),
          n.value());
    }
  }
}
