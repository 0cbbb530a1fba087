package dev.pacer.cli.run;

import dev.pacer.cli.db.ItemStore;
import dev.pacer.cli.model.LimiterFigures;
import java.sql.SQLException;
import java.util.Collection;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * Where a worker's fetch threads take their items from, and what fetches them: one implementation
 * per mode. {@link SingleDestination} claims from the job's queue and fetches through the one
 * destination's limiter; {@link PerHostFrontier} claims a host's turn with each item ({@link
 * dev.pacer.cli.db.FrontierStore}) and fetches through that host's own limiter.
 */
interface WorkSource {

  /** The per-item work this source's threads do: fetching, storing, recording. */
  ItemWork work();

  /** The envelope's breach that halts the run now, if any. */
  Optional<Envelope.Breach> breach();

  /**
   * One step of a fetch thread: claims and processes one item, or waits for one. False when the
   * thread is done; {@link #threadEnds} then records what it leaves. {@code claims} is the thread's
   * own, its claim whose answer has not come.
   */
  boolean next(ThreadClaims claims) throws InterruptedException;

  /** Whether the job has no work left that this source could claim; false if unknown. */
  boolean nothingLeft();

  /** The heartbeat's part of this mode, after the leases are extended. */
  void beat() throws SQLException;

  /**
   * A fetch thread ends: whatever it leaves to be recorded or given back is, now (for the sources
   * that keep outcomes or items beyond a thread's own).
   */
  default void threadEnds() throws InterruptedException {}

  /** The items this worker holds leased ahead, for the heartbeat to extend their leases. */
  default List<ItemStore.Item> leasedAhead() {
    return List.of();
  }

  /**
   * The heartbeat's extension of the leases {@code asked}, sent at {@code sentNanos}, answered
   * {@code extended}: the tokens whose leases it extended.
   */
  default void leasesExtended(Collection<String> asked, Set<String> extended, long sentNanos) {}

  /** At the run's end, before the last report: what the heartbeat counts, counted once more. */
  void countAtEnd();

  /** At the run's end, after the last report: the claims' summary, if this mode has one. */
  void logClaims();

  long requestCount();

  long throttledCount();

  /** The rate this worker paces at, as its row in the work state reports it. */
  double rate();

  /** What the limiters did, for the worker's row. */
  LimiterFigures figures();

  /** Whether the run's destination locked this worker out; never, per host. */
  boolean lockedOut();
}
