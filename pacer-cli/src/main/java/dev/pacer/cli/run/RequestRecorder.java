package dev.pacer.cli.run;

import dev.pacer.cli.db.RequestLog;
import dev.pacer.jdkhttp.SentRequest;
import java.sql.SQLException;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Collects the requests this worker sends, as the fetcher reports them, and appends them to the
 * {@link RequestLog} in batches (the heartbeat flushes). Fetch threads only enqueue: recording
 * never delays a request. While PostgreSQL is away the rows wait in memory, up to {@link
 * #MAX_WAITING}; beyond that the oldest are dropped and counted, and the run's figures say so.
 */
final class RequestRecorder implements Consumer<SentRequest> {

  private static final Logger log = LoggerFactory.getLogger(RequestRecorder.class);

  /** About 14 hours at 2 requests/s, or 10 s at 10,000/s; a row is about 100 bytes. */
  static final int MAX_WAITING = 100_000;

  private static final int BATCH = 5_000;

  private final RequestLog requestLog;
  private final String destination;
  private final String job;
  private final String worker;
  private final ConcurrentLinkedQueue<SentRequest> sent = new ConcurrentLinkedQueue<>();
  private final ArrayDeque<RequestLog.Sent> waiting = new ArrayDeque<>();
  private long dropped;

  /**
   * The batch being appended, sent again as it is until the log has it: made again after its answer
   * was lost, the same batch appends nothing ({@link RequestLog#append}).
   */
  private Batch pending;

  /**
   * @param destination the destination every request is recorded under; null (per-host mode): each
   *     request's own host
   */
  RequestRecorder(RequestLog requestLog, String destination, String job, String worker) {
    this.requestLog = requestLog;
    this.destination = destination;
    this.job = job;
    this.worker = worker;
  }

  /** Requests appended together, named by {@code id}. */
  private record Batch(UUID id, List<RequestLog.Sent> rows) {}

  @Override
  public void accept(SentRequest request) {
    sent.add(request);
  }

  /** Reads the database's clock again, a sample for the request log's stamps. */
  void calibrate() throws SQLException {
    requestLog.sampleClock();
  }

  /** Appends everything sent so far; what PostgreSQL does not take now waits for the next call. */
  synchronized void flush() throws SQLException {
    for (SentRequest r; (r = sent.poll()) != null; ) {
      if (waiting.size() == MAX_WAITING) {
        waiting.removeFirst();
        if (dropped++ == 0) {
          log.warn(
              "PostgreSQL has been away for {} recorded requests; the oldest are dropped"
                  + " from the request log, so the run's door figures will undercount",
              MAX_WAITING);
        }
      }
      String to =
          destination != null ? destination : r.uri().getHost().toLowerCase(java.util.Locale.ROOT);
      waiting.addLast(
          new RequestLog.Sent(
              to,
              job,
              worker,
              requestLog.databaseEpochMicros(r.sentNanos(), r.sentEpochMicros()),
              (r.sentNanos() - r.turnNanos()) / 1000,
              r.hop(),
              r.status()));
    }
    while (pending != null || !waiting.isEmpty()) {
      if (pending == null) {
        List<RequestLog.Sent> rows = new ArrayList<>(Math.min(BATCH, waiting.size()));
        while (rows.size() < BATCH && !waiting.isEmpty()) {
          rows.add(waiting.removeFirst());
        }
        pending = new Batch(UUID.randomUUID(), rows);
      }
      requestLog.append(pending.id(), pending.rows());
      pending = null;
    }
  }

  /** Requests dropped from the log because PostgreSQL was away too long. */
  synchronized long dropped() {
    return dropped;
  }
}
