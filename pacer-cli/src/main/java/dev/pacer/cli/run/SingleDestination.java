package dev.pacer.cli.run;

import dev.pacer.DestinationLimiter;
import dev.pacer.LimiterRegistry;
import dev.pacer.TimeSource;
import dev.pacer.cli.db.ItemStore;
import dev.pacer.cli.model.LimiterFigures;
import dev.pacer.jdkhttp.fetch.DestinationFetcher;
import dev.pacer.postgres.PostgresFleetSlots;
import dev.pacer.spi.Cursor;
import java.net.URI;
import java.sql.SQLException;
import java.util.Collection;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * The single-destination mode's work: items claimed from the job's queue ({@link QueuedClaims}),
 * with a buffer leased ahead for outages ({@link LeasedAhead}, {@code --outage-buffer} seconds at
 * the divided rate), all fetched through the one destination's limiter, whose lockout halts the
 * run. Every failed item counts against the run's failure bar.
 */
final class SingleDestination implements WorkSource {

  /**
   * The most items a worker leases ahead, whatever the rate: a few megabytes of items and of
   * outcomes waiting, at most.
   */
  static final int MOST_LEASED_AHEAD = 10_000;

  private final WorkerContext context;
  private final Envelope envelope;
  private final LimiterCounts limiterCounts;
  private final LimiterRegistry limiters;
  private final DestinationLimiter limiter;
  private final DestinationFetcher fetcher;
  private final ItemWork work;
  private final QueuedClaims queue;

  /**
   * Makes the destination's limiter on {@code cursor} (under the fleet-wide cap's slots, if it has
   * one) and its fetcher, which reports every request to {@code recorder}, and warms the fetcher up
   * for {@code sampleUrl}, a URL of the job, if one is known.
   */
  SingleDestination(
      WorkerContext context,
      Envelope envelope,
      DurablePoints durable,
      DispatchGate gate,
      Cursor cursor,
      Optional<PostgresFleetSlots> fleetCap,
      LimiterCounts limiterCounts,
      RequestRecorder recorder,
      Optional<String> sampleUrl)
      throws InterruptedException {
    this.context = context;
    this.envelope = envelope;
    this.limiterCounts = limiterCounts;
    RunSettings settings = context.settings();
    limiters =
        fleetCap.isPresent()
            ? new LimiterRegistry(cursor, fleetCap.get())
            : new LimiterRegistry(cursor);
    limiters.addListener(limiterCounts);
    limiter = limiters.limiter(settings.destination());
    fetcher =
        DestinationFetcher.builder(limiter)
            .maxBodyBytes(settings.maxBodyBytes())
            .requestTimeout(settings.requestTimeout())
            .maxRedirects(settings.maxRedirects())
            .header("User-Agent", RunSettings.USER_AGENT)
            .header("X-Pacer-Worker", Long.toString(ProcessHandle.current().pid()))
            .onRequest(recorder)
            .build();
    // Before the first turn, never after it: a cold client's first request would otherwise hold
    // its turn (and the turns after it) while classes load, and they would leave together.
    if (sampleUrl.isPresent()) {
      fetcher.warmUp(URI.create(sampleUrl.get()));
    } else {
      fetcher.warmUp();
    }
    work = new ItemWork(context, durable, this::count);
    LeasedAhead ahead =
        new LeasedAhead(
            LeasedAhead.capacityFor(
                settings.outageBuffer().toMillis() / 1000.0,
                settings.destination().ratePerSecond(),
                settings.destination().maxFetchingProcesses(),
                MOST_LEASED_AHEAD),
            settings.leaseMillis(),
            TimeSource.SYSTEM);
    queue =
        new QueuedClaims(
            context, work, gate, this::nothingLeft, item -> fetcher, ahead, TimeSource.SYSTEM);
  }

  /** The run's bar counts every failure. */
  private void count(ItemOutcome outcome, DestinationFetcher by, String failure) {
    envelope.recordOutcome(outcome != ItemOutcome.ANSWERED);
  }

  @Override
  public ItemWork work() {
    return work;
  }

  @Override
  public Optional<Envelope.Breach> breach() {
    return envelope.check(limiter);
  }

  @Override
  public boolean next(ThreadClaims claims) throws InterruptedException {
    return queue.next(claims);
  }

  @Override
  public void threadEnds() throws InterruptedException {
    queue.threadEnds();
  }

  @Override
  public List<ItemStore.Item> leasedAhead() {
    return queue.leasedAhead();
  }

  @Override
  public void leasesExtended(Collection<String> asked, Set<String> extended, long sentNanos) {
    queue.leasesExtended(asked, extended, sentNanos);
  }

  @Override
  public boolean nothingLeft() {
    try {
      return !context.store().items().hasOpenItems(context.settings().job());
    } catch (SQLException e) {
      return false;
    }
  }

  @Override
  public void beat() {}

  @Override
  public void countAtEnd() {}

  @Override
  public void logClaims() {}

  @Override
  public long requestCount() {
    return fetcher.requestCount();
  }

  @Override
  public long throttledCount() {
    return fetcher.throttledCount();
  }

  @Override
  public double rate() {
    return limiter.currentRate();
  }

  @Override
  public LimiterFigures figures() {
    return limiterCounts.figures(
        limiter.backoffMultiplier(), limiter.isDegraded(), limiters.isCursorLatched());
  }

  @Override
  public boolean lockedOut() {
    return limiter.isLockedOut();
  }
}
