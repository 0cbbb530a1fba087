package dev.pacer.cli.run;

import dev.pacer.Destination;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;

/**
 * Everything a worker needs to know about a run, validated by the command that built it.
 *
 * @param runId the invocation of {@code pacer fetch} this worker belongs to
 * @param job the job's name
 * @param destination the destination and its ceiling; {@code maxFetchingProcesses} is already
 *     max-dispatches + 1 (or the hidden --degrade-divisor, for tests)
 * @param threads fetch threads in this worker process
 * @param out the bodies' root directory
 * @param leaseMillis how long a claimed item stays leased without a heartbeat
 * @param maxAttempts ordinary failures after which an item is failed
 * @param maxThrottles throttled answers after which an item is left deferred for the next run
 * @param maxLoad the HOST_LOAD bar
 * @param maxRssBytes the RSS bar
 * @param maxBodyBytes the body size cap
 * @param requestTimeout the deadline for a whole response, body included
 * @param maxRedirects redirect hops followed per item
 * @param perProcessPacing pace with an in-memory cursor (the N x defect, for the demo) instead of
 *     the fleet-wide PostgreSQL cursor
 * @param maxDispatches how many runners (pooled runs and conveyor workers) may fetch the
 *     destination at once, fleet-wide: each holds one dispatch slot while it fetches; 0 takes no
 *     slot
 * @param perHost each URL's host is its own destination, with the ceiling its frontier row holds
 *     ({@code pacer fetch --per-host}); {@code destination} is then only the template of the hosts'
 *     settings and the name of the job's dispatch slots
 * @param fifoClaims per-host mode without the frontier, for demonstrations only: items are claimed
 *     in input order and then wait for their host's turn (head-of-line blocking); every host at the
 *     run's rate
 * @param robots per-host mode obeys each host's robots.txt ({@code --robots}: see {@link
 *     RobotsPolicy})
 * @param maxCrawlDelay with {@code robots}: a host whose Crawl-delay is longer is skipped
 * @param fsyncEach force each body (and its directory) before its item is recorded, instead of
 *     making the bodies durable in groups ({@link DurablePoints})
 * @param warc write the bodies as WARC segments ({@code --warc}) instead of a file each under
 *     {@code out}
 * @param outageBuffer how long a worker keeps fetching at the divided rate while PostgreSQL is
 *     away, from items it leased ahead ({@code --outage-buffer}; single-destination mode); zero
 *     leases none ahead
 */
public record RunSettings(
    String runId,
    String job,
    Destination destination,
    int threads,
    Path out,
    long leaseMillis,
    int maxAttempts,
    int maxThrottles,
    double maxLoad,
    long maxRssBytes,
    long maxBodyBytes,
    Duration requestTimeout,
    int maxRedirects,
    boolean perProcessPacing,
    int maxDispatches,
    boolean perHost,
    boolean fifoClaims,
    boolean robots,
    Duration maxCrawlDelay,
    boolean fsyncEach,
    Optional<WarcOutput> warc,
    Duration outageBuffer) {

  /** The User-Agent of every request of a run; robots.txt is read for its product token. */
  public static final String USER_AGENT = "pacer/0.1";
}
