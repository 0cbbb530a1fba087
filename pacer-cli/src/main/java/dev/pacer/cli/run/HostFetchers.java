package dev.pacer.cli.run;

import dev.pacer.BackoffScope;
import dev.pacer.Destination;
import dev.pacer.DestinationLimiter;
import dev.pacer.LimiterListener;
import dev.pacer.LimiterRegistry;
import dev.pacer.LocalCursor;
import dev.pacer.TimeSource;
import dev.pacer.jdkhttp.SentRequest;
import dev.pacer.jdkhttp.fetch.DestinationFetcher;
import dev.pacer.spi.Cursor;
import java.net.URI;
import java.net.http.HttpClient;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * Per-host mode's fetchers in one worker process: one {@link DestinationFetcher} and limiter per
 * host this process has claimed an item of, made at the first claim, all on one HTTP client (one
 * selector thread and one connection pool, which keeps connections per host anyway, rather than one
 * client per host).
 *
 * <p>Each host's limiter paces on {@link ClaimedTurns}: the item's first request goes at the turn
 * its claim reserved; redirect hops and turns retaken after a late wake-up reserve on the host's
 * cursor row. Its backoff is the fleet's ({@link BackoffScope#FLEET}), kept on that row, because
 * the claim spaces the host's turns by the row's multiplier: a 429 anywhere slows the host for the
 * whole fleet and no other host. Its per-process permits are the process's threads (the fleet-wide
 * cap on a host's items in flight is the claim's).
 *
 * <p>A host idle for {@link #IDLE} is forgotten ({@link #evictIdle}, at every heartbeat): its
 * limiters leave their registries ({@link LimiterRegistry#evictIdle}, which keeps one whose pause,
 * lockout or claimed turns are still in force) and its fetchers go with them, and both are made
 * again at its next claim. The state that bears on its ceiling is on its frontier and cursor rows,
 * which the claim and the limiter read back, so the memory of a worker follows the hosts it has
 * claimed in the last minute, not every host of the job.
 */
final class HostFetchers {

  /**
   * How long a host stays held after it was last in use. Long enough that a host whose next item
   * comes within a minute keeps its connection's first-request margin and its listener's entry;
   * short enough that a worker claiming a few hundred new hosts a second holds tens of thousands of
   * them at most.
   */
  static final Duration IDLE = Duration.ofSeconds(60);

  private final RunSettings settings;
  private final ClaimedTurns turns;
  private final LimiterRegistry limiters;
  private final HttpClient client;
  private final Consumer<SentRequest> recorder;
  private final Map<String, DestinationFetcher> fetchers = new ConcurrentHashMap<>();

  /** robots.txt's limiters: the hosts' names, without the lockout status (see robotsFetcher). */
  private final LimiterRegistry robotsLimiters;

  private final Map<String, DestinationFetcher> robotsFetchers = new ConcurrentHashMap<>();

  /** Counted as they happen rather than summed over the fetchers, which come and go. */
  private final LongAdder requests = new LongAdder();

  private final LongAdder throttled = new LongAdder();

  HostFetchers(
      RunSettings settings,
      Cursor shared,
      Consumer<SentRequest> recorder,
      LimiterListener listener,
      TimeSource time) {
    this.settings = settings;
    this.turns = new ClaimedTurns(shared, time);
    this.limiters = new LimiterRegistry(turns, time);
    this.limiters.addListener(listener);
    this.limiters.addListener(new RegistryEvents(fetchers));
    this.robotsLimiters = new LimiterRegistry(turns, time);
    this.robotsLimiters.addListener(listener);
    this.robotsLimiters.addListener(new RegistryEvents(robotsFetchers));
    this.recorder =
        sent -> {
          requests.increment();
          recorder.accept(sent);
        };
    this.client =
        HttpClient.newBuilder()
            .connectTimeout(Duration.ofSeconds(10))
            .followRedirects(HttpClient.Redirect.NEVER)
            .version(HttpClient.Version.HTTP_1_1)
            .build();
  }

  ClaimedTurns turns() {
    return turns;
  }

  /** The fetcher of {@code host} at {@code rate} (the job's ceiling for it). */
  DestinationFetcher forHost(String host, double rate) {
    DestinationFetcher held = fetchers.get(host);
    return held != null
        ? held
        : made(fetchers, host, () -> fetcher(limiters.limiter(destination(host, rate))));
  }

  /**
   * The fetcher of {@code host}'s robots.txt at {@code rate}: its turns are the host's own, on the
   * host's cursor row (through a limiter of its own, as another process's would be), its 429 and
   * 503 the host's backoff and pause; but a 403 is robots.txt's answer ({@link RobotsPolicy}), not
   * a lockout of the host. Its body is capped at {@value #ROBOTS_MAX_BYTES} bytes (Google reads 500
   * KiB).
   */
  DestinationFetcher robotsFetcher(String host, double rate) {
    DestinationFetcher held = robotsFetchers.get(host);
    return held != null
        ? held
        : made(
            robotsFetchers,
            host,
            () ->
                fetcher(
                    robotsLimiters.limiter(
                        destination(host, rate).toBuilder().lockoutStatusCodes(Set.of()).build()),
                    ROBOTS_MAX_BYTES));
  }

  /**
   * The fetcher of {@code host} in {@code map}, made if there is none. Under the lock {@link
   * #evictIdle} holds, so that a fetcher is never put in a map after its limiter's eviction has
   * taken it out: the map would keep the evicted limiter alive.
   */
  private synchronized DestinationFetcher made(
      Map<String, DestinationFetcher> map, String host, Supplier<DestinationFetcher> make) {
    return map.computeIfAbsent(host, h -> make.get());
  }

  /** Whether this process holds {@code host}'s limiter, and it is locked out. */
  boolean lockedOut(String host) {
    DestinationFetcher held = fetchers.get(host);
    return held != null && held.limiter().isLockedOut();
  }

  /**
   * Forgets the hosts idle for {@link #IDLE}: their limiters, and with them their fetchers ({@link
   * RegistryEvents}).
   *
   * @return how many limiters were evicted
   */
  synchronized int evictIdle() {
    return limiters.evictIdle(IDLE) + robotsLimiters.evictIdle(IDLE);
  }

  /** The fetchers held now: a host's, and its robots.txt's. */
  int fetchersHeld() {
    return fetchers.size() + robotsFetchers.size();
  }

  /**
   * What this hears from one of its registries: an eviction, whose fetcher it drops from {@code
   * map}, and a rate-pressure answer, which it counts.
   */
  private final class RegistryEvents implements LimiterListener {
    private final Map<String, DestinationFetcher> map;

    RegistryEvents(Map<String, DestinationFetcher> map) {
      this.map = map;
    }

    @Override
    public void limiterEvicted(DestinationLimiter limiter) {
      map.computeIfPresent(
          limiter.destination().name(),
          (host, fetcher) -> fetcher.limiter() == limiter ? null : fetcher);
    }

    @Override
    public void throttled(String destination, int multiplier) {
      throttled.increment();
    }
  }

  static final long ROBOTS_MAX_BYTES = 512 * 1024;

  private Destination destination(String host, double rate) {
    Destination template = settings.destination();
    return Destination.builder(host)
        .ratePerSecond(rate)
        .maxConcurrency(settings.threads())
        .maxFetchingProcesses(template.maxFetchingProcesses())
        .backoffScope(BackoffScope.FLEET)
        .maxRetryAfter(template.maxRetryAfter())
        .build();
  }

  private DestinationFetcher fetcher(DestinationLimiter limiter) {
    return fetcher(limiter, settings.maxBodyBytes());
  }

  private DestinationFetcher fetcher(DestinationLimiter limiter, long maxBodyBytes) {
    return DestinationFetcher.builder(limiter)
        .httpClient(client)
        .maxBodyBytes(maxBodyBytes)
        .requestTimeout(settings.requestTimeout())
        .maxRedirects(settings.maxRedirects())
        .header("User-Agent", RunSettings.USER_AGENT)
        .header("X-Pacer-Worker", Long.toString(ProcessHandle.current().pid()))
        .onRequest(recorder)
        .build();
  }

  /**
   * Pays the shared client's first-request costs before the first claim (see {@link
   * DestinationFetcher#warmUp(URI)}): through a fetcher that takes no turn and sends nothing to any
   * destination.
   */
  void warmUp(URI sample) throws InterruptedException {
    DestinationFetcher warm =
        fetcher(
            new LimiterRegistry(new LocalCursor())
                .limiter(Destination.builder("warm-up").ratePerSecond(1).build()));
    if (sample != null) {
      warm.warmUp(sample);
    } else {
      warm.warmUp();
    }
  }

  private Collection<DestinationFetcher> all() {
    List<DestinationFetcher> all = new ArrayList<>(fetchers.values());
    all.addAll(robotsFetchers.values());
    return all;
  }

  long requestCount() {
    return requests.sum();
  }

  long throttledCount() {
    return throttled.sum();
  }

  boolean anyDegraded() {
    return all().stream().anyMatch(f -> f.limiter().isDegraded());
  }

  /** Whether the shared cursor under the claimed turns is latched as unavailable. */
  boolean isCursorLatched() {
    return limiters.isCursorLatched();
  }

  /** The widest backoff multiplier among the hosts this process holds. */
  int widestBackoff() {
    return all().stream().mapToInt(f -> f.limiter().backoffMultiplier()).max().orElse(1);
  }

  /**
   * This process's achieved rate over its hosts (the rate reads the last 10 s, so the hosts no
   * longer held add nothing to it).
   */
  double rate() {
    return all().stream().mapToDouble(f -> f.limiter().currentRate()).sum();
  }
}
