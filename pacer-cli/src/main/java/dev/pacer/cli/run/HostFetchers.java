package dev.pacer.cli.run;

import dev.pacer.BackoffScope;
import dev.pacer.Cursor;
import dev.pacer.Destination;
import dev.pacer.DestinationFetcher;
import dev.pacer.DestinationLimiter;
import dev.pacer.LimiterListener;
import dev.pacer.LimiterRegistry;
import dev.pacer.LocalCursor;
import dev.pacer.SentRequest;
import dev.pacer.TimeSource;
import java.net.URI;
import java.net.http.HttpClient;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;

/**
 * Per-host mode's fetchers in one worker process: one {@link DestinationFetcher} and limiter per
 * host this process has claimed an item of, made at the first claim, all on one HTTP client (one
 * selector thread and one connection pool, which keeps connections per host anyway, rather than
 * one client per host).
 *
 * <p>Each host's limiter paces on {@link ClaimedTurns}: the item's first request goes at the turn
 * its claim reserved; redirect hops and turns retaken after a late wake-up reserve on the host's
 * cursor row. Its backoff is the fleet's ({@link BackoffScope#FLEET}), kept on that row, because
 * the claim spaces the host's turns by the row's multiplier: a 429 anywhere slows the host for the
 * whole fleet and no other host. Its per-process permits are the process's threads (the
 * fleet-wide cap on a host's items in flight is the claim's).
 */
final class HostFetchers {

  private final RunSettings settings;
  private final ClaimedTurns turns;
  private final LimiterRegistry limiters;
  private final HttpClient client;
  private final Consumer<SentRequest> recorder;
  private final Map<String, DestinationFetcher> fetchers = new ConcurrentHashMap<>();
  /** robots.txt's limiters: the hosts' names, without the lockout status (see robotsFetcher). */
  private final LimiterRegistry robotsLimiters;
  private final Map<String, DestinationFetcher> robotsFetchers = new ConcurrentHashMap<>();

  HostFetchers(RunSettings settings, Cursor shared, Consumer<SentRequest> recorder,
      LimiterListener listener) {
    this.settings = settings;
    this.turns = new ClaimedTurns(shared, TimeSource.SYSTEM);
    this.limiters = new LimiterRegistry(turns);
    this.limiters.addListener(listener);
    this.robotsLimiters = new LimiterRegistry(turns);
    this.robotsLimiters.addListener(listener);
    this.recorder = recorder;
    this.client = HttpClient.newBuilder()
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
    return fetchers.computeIfAbsent(host, h -> fetcher(limiters.limiter(destination(h, rate))));
  }

  /**
   * The fetcher of {@code host}'s robots.txt at {@code rate}: its turns are the host's own, on the
   * host's cursor row (through a limiter of its own, as another process's would be), its 429 and
   * 503 the host's backoff and pause; but a 403 is robots.txt's answer ({@link RobotsPolicy}), not
   * a lockout of the host. Its body is capped at {@value #ROBOTS_MAX_BYTES} bytes (Google reads
   * 500 KiB).
   */
  DestinationFetcher robotsFetcher(String host, double rate) {
    return robotsFetchers.computeIfAbsent(host, h -> fetcher(robotsLimiters.limiter(
        destination(h, rate).toBuilder().lockoutStatusCodes(java.util.Set.of()).build()),
        ROBOTS_MAX_BYTES));
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
   * DestinationFetcher#warmUp(URI)}): through a fetcher that takes no turn and sends nothing to
   * any destination.
   */
  void warmUp(URI sample) throws InterruptedException {
    DestinationFetcher warm = fetcher(new LimiterRegistry(new LocalCursor())
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
    return all().stream().mapToLong(DestinationFetcher::requestCount).sum();
  }

  long throttledCount() {
    return all().stream().mapToLong(DestinationFetcher::throttledCount).sum();
  }

  boolean anyDegraded() {
    return all().stream().anyMatch(f -> f.limiter().isDegraded());
  }

  /** Whether the shared cursor under the claimed turns is latched as unavailable. */
  boolean isCursorLatched() {
    return limiters.isCursorLatched();
  }

  /** The widest backoff multiplier among this process's hosts. */
  int widestBackoff() {
    return all().stream().mapToInt(f -> f.limiter().backoffMultiplier()).max().orElse(1);
  }

  /** This process's achieved rate over every host. */
  double rate() {
    return all().stream().mapToDouble(f -> f.limiter().currentRate()).sum();
  }
}
