package dev.pacer.cli.run;

import dev.pacer.cli.db.ItemStore;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A worker's durable points: about once a second, and once more as the run ends, every body written
 * since the last point is made durable at once ({@link Bodies#makeDurable}: for files one {@link
 * FileSystemSync}, one device flush, not one per body; for WARC one force of the open segment), and
 * the items recorded done meanwhile are then marked durable, in one statement.
 *
 * <p>An item is recorded done at once, with its size and SHA-256, and marked durable only after a
 * point covered its body, rather than recorded after the point: the record keeps riding with the
 * fetch thread's next claim (one shared statement, {@link ItemStore#recordAndClaim}), the lease is
 * not held across a point, and after a {@code kill -9}, the commonest unclean stop, the bodies are
 * whole in the page cache: the next run verifies them against their records ({@link
 * BodyVerification}) and keeps them instead of sending their requests again. Only a power cut or a
 * crash of the machine loses bodies, those of the last second or so, which that verification finds
 * and returns to the job.
 *
 * <p>With {@code --fsync-each} every body is forced before it is recorded, recorded durable, and
 * this class has nothing to do.
 */
final class DurablePoints implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(Worker.class);

  /** How often a point passes while the run goes on. */
  static final long EVERY_MILLIS = 1000;

  private final WorkerContext context;
  private final Bodies bodies;

  /** Items recorded done whose bodies no point has covered yet. */
  private final ConcurrentLinkedQueue<ItemStore.Done> recorded = new ConcurrentLinkedQueue<>();

  private ScheduledExecutorService timer;

  DurablePoints(WorkerContext context, Bodies bodies) {
    this.context = context;
    this.bodies = bodies;
  }

  Bodies bodies() {
    return bodies;
  }

  /** An item just recorded done: if its body is not durable yet, the next point covers it. */
  void recorded(ItemStore.Done done) {
    if (!done.durable()) {
      recorded.add(done);
    }
  }

  /** Starts the points, about once a second, on a thread of their own. */
  void start() {
    if (bodies.forcesEach()) {
      return;
    }
    timer =
        Executors.newSingleThreadScheduledExecutor(
            r -> {
              Thread t = new Thread(r, "pacer-durable");
              t.setDaemon(true);
              return t;
            });
    timer.scheduleWithFixedDelay(
        this::passQuietly, EVERY_MILLIS, EVERY_MILLIS, TimeUnit.MILLISECONDS);
  }

  private void passQuietly() {
    try {
      pass();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (RuntimeException | Error e) {
      // A scheduled task that throws never runs again: the next point must still come.
      log.error("A durable point failed; the next one covers its bodies", e);
    }
  }

  /**
   * One point: the bodies of every item recorded so far made durable, then those items marked so,
   * the marks retried while PostgreSQL is away. Items whose point failed wait for the next; items
   * never marked (the process stopped first) are verified by the next run.
   */
  synchronized void pass() throws InterruptedException {
    List<ItemStore.Done> group = new ArrayList<>();
    for (ItemStore.Done d; (d = recorded.poll()) != null; ) {
      group.add(d);
    }
    if (group.isEmpty()) {
      return;
    }
    List<String> locations = new ArrayList<>(group.size());
    group.forEach(d -> locations.add(d.bodyPath()));
    boolean synced = false;
    try {
      bodies.makeDurable(locations);
      synced = true;
    } catch (IOException e) {
      log.error(
          "Could not make {} body file(s) durable ({}); they are tried again at the next point",
          group.size(),
          e.toString());
      return;
    } finally {
      if (!synced) {
        recorded.addAll(group);
      }
    }
    String job = context.settings().job();
    ItemStore items = context.store().items();
    context.retrying().call("mark bodies durable", () -> items.markDurable(job, group), false);
  }

  /**
   * Stops the timer, letting a point under way end, and passes the run's last point, covering every
   * body recorded. A process terminated (SIGTERM) passes no last point: its items recorded since
   * the last one are verified by the next run, and kept, being whole.
   */
  @Override
  public void close() {
    try {
      if (timer != null) {
        timer.shutdown();
        if (!timer.awaitTermination(30, TimeUnit.SECONDS)) {
          log.warn("A durable point has taken over 30 s; the last one waits for it");
        }
        pass();
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } finally {
      try {
        bodies.close();
      } catch (IOException e) {
        log.error("Could not close the body output", e);
      }
    }
  }
}
