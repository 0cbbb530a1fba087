package dev.pacer.cli.run;

import dev.pacer.TimeSource;
import dev.pacer.cli.db.ItemStore;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;

/**
 * The outcomes a worker recorded in the last few seconds before its latest record, to be recorded
 * again after an outage: a crash of the server may have forgotten them, their records committing
 * asynchronously, and the item would otherwise stay leased to this worker, which believes it
 * recorded, until its lease lapsed and another worker fetched it again. Recording one again is
 * answered as recorded and changes nothing if the record was kept ({@link ItemStore}'s class
 * comment).
 *
 * <p>When the worker notices an outage, what is kept then is set aside ({@link #setAside}) until it
 * has been recorded again: the records made just before PostgreSQL went away are the ones a crash
 * may have forgotten, however long the outage lasts, and the records made after the return must not
 * push them out. A crash forgets what the server had not yet written out of its write-ahead log, a
 * few hundred milliseconds at PostgreSQL's defaults ({@code wal_writer_delay} of 200 ms, up to
 * three of them); {@link #KEPT_NANOS} is several times that.
 */
final class RecordedLately {

  /** How far back from the latest record outcomes are kept. */
  static final long KEPT_NANOS = 5_000_000_000L;

  private record Recorded(ItemStore.Done done, long atNanos) {}

  private final int most;
  private final TimeSource time;
  private final ArrayDeque<Recorded> kept = new ArrayDeque<>();
  private List<ItemStore.Done> setAside = List.of();

  /** Keeps at most {@code most} outcomes, the latest. */
  RecordedLately(int most, TimeSource time) {
    if (most < 0) {
      throw new IllegalArgumentException("most must be >= 0, got " + most);
    }
    this.most = most;
    this.time = time;
  }

  /** {@code done} was recorded now: kept, and those recorded too long before it are dropped. */
  synchronized void add(ItemStore.Done done) {
    long now = time.nanoTime();
    while (!kept.isEmpty()
        && (kept.size() >= most || now - kept.peekFirst().atNanos() > KEPT_NANOS)) {
      kept.pollFirst();
    }
    if (most > 0) {
      kept.addLast(new Recorded(done, now));
    }
  }

  /** The outcomes kept, oldest first. */
  synchronized List<ItemStore.Done> outcomes() {
    List<ItemStore.Done> out = new ArrayList<>(kept.size());
    kept.forEach(r -> out.add(r.done()));
    return out;
  }

  /**
   * An outage began: the outcomes kept now are set aside to be recorded again, unless some are set
   * aside already (the outage noticed again, or a second one before they were recorded).
   */
  synchronized void setAside() {
    if (setAside.isEmpty()) {
      setAside = outcomes();
    }
  }

  /** The outcomes set aside, to be recorded again; empty if none. */
  synchronized List<ItemStore.Done> setAsideOutcomes() {
    return setAside;
  }

  /** {@code dones}, set aside, were recorded again. */
  synchronized void recordedAgain(List<ItemStore.Done> dones) {
    if (setAside == dones) {
      setAside = List.of();
    }
  }
}
