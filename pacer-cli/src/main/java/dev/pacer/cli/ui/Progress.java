package dev.pacer.cli.ui;

import dev.pacer.cli.db.ItemStore;
import dev.pacer.cli.db.WorkState;
import dev.pacer.cli.db.WorkerStore;
import java.io.PrintWriter;
import java.sql.SQLException;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;
import java.util.Locale;

/**
 * The terminal progress bar of a run: done/total, the live rate of requests, the ETA, throttled
 * answers and the degraded flag, redrawn in place twice a second from the job's state in PostgreSQL
 * (so it is the same for a pooled run and a conveyor of worker processes). Only drawn when stdout
 * is a terminal.
 */
public final class Progress implements AutoCloseable {

  private static final int WIDTH = 28;
  private static final long RATE_WINDOW_NANOS = 10_000_000_000L;

  private final WorkState store;
  private final String job;
  private final String runId;
  private final PrintWriter out;
  private final Thread thread;
  private final Deque<long[]> samples = new ArrayDeque<>();
  private volatile boolean running = true;
  private int lastLength;

  private Progress(WorkState store, String job, String runId, PrintWriter out) {
    this.store = store;
    this.job = job;
    this.runId = runId;
    this.out = out;
    this.thread = new Thread(this::loop, "pacer-progress");
    this.thread.setDaemon(true);
  }

  /** Starts drawing, or returns null when not on a terminal or not wanted. */
  public static Progress startIfInteractive(
      WorkState store, String job, String runId, PrintWriter out, boolean wanted) {
    if (!wanted || System.console() == null) {
      return null;
    }
    Progress p = new Progress(store, job, runId, out);
    p.thread.start();
    return p;
  }

  private void loop() {
    while (running) {
      try {
        draw();
        Thread.sleep(500);
      } catch (InterruptedException e) {
        return;
      } catch (SQLException e) {
        drawText("[progress unavailable: PostgreSQL not answering]");
      }
    }
  }

  private void draw() throws SQLException {
    ItemStore.Counts counts = store.items().counts(job);
    List<WorkerStore.WorkerRow> workers = store.workers().workers(runId, 0);
    long requests = 0;
    long throttled = 0;
    boolean degraded = false;
    for (WorkerStore.WorkerRow w : workers) {
      requests += w.requests();
      throttled += w.throttled();
      degraded |= w.degraded() && !w.state().equals("finished");
    }
    long now = System.nanoTime();
    samples.addLast(new long[] {now, requests, counts.done() + counts.failed()});
    while (samples.size() > 2 && now - samples.peekFirst()[0] > RATE_WINDOW_NANOS) {
      samples.removeFirst();
    }
    long[] first = samples.peekFirst();
    double seconds = (now - first[0]) / 1e9;
    double rate = seconds > 0 ? (requests - first[1]) / seconds : 0;
    double itemRate = seconds > 0 ? (counts.done() + counts.failed() - first[2]) / seconds : 0;
    drawText(
        render(counts.done(), counts.total(), rate, counts.open(), itemRate, throttled, degraded));
  }

  /** One line of progress. */
  public static String render(
      long done,
      long total,
      double rate,
      long open,
      double itemRate,
      long throttled,
      boolean degraded) {
    int filled = total == 0 ? WIDTH : (int) (WIDTH * done / total);
    String eta =
        open == 0 ? "0:00" : itemRate > 0 ? clock((long) Math.ceil(open / itemRate)) : "-:--";
    return String.format(
        Locale.ROOT,
        "[%s%s] %d/%d  %.1f req/s  ETA %s  throttled %d%s",
        "#".repeat(filled),
        ".".repeat(WIDTH - filled),
        done,
        total,
        rate,
        eta,
        throttled,
        degraded ? "  DEGRADED (pacing locally)" : "");
  }

  private static String clock(long seconds) {
    return seconds >= 3600
        ? String.format(
            Locale.ROOT, "%d:%02d:%02d", seconds / 3600, seconds / 60 % 60, seconds % 60)
        : String.format(Locale.ROOT, "%d:%02d", seconds / 60, seconds % 60);
  }

  private synchronized void drawText(String line) {
    String padded =
        line.length() < lastLength ? line + " ".repeat(lastLength - line.length()) : line;
    out.print("\r" + padded);
    out.flush();
    lastLength = line.length();
  }

  @Override
  public void close() {
    running = false;
    thread.interrupt();
    try {
      thread.join(2000);
      draw();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (SQLException ignored) {
      // The final redraw is cosmetic.
    }
    out.println();
    out.flush();
  }
}
