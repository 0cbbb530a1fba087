package dev.pacer.internal;

/**
 * The achieved rate of recent events: among the events of the last {@code window}, (count - 1)
 * divided by the span from the first to the last. Keeps the last {@code capacity} instants in a
 * ring, so memory is constant however long the run.
 */
public final class RateMeter {

  private final long[] instants;
  private final long windowNanos;
  private int next;
  private int size;

  public RateMeter(int capacity, long windowNanos) {
    this.instants = new long[capacity];
    this.windowNanos = windowNanos;
  }

  public synchronized void record(long nanoTime) {
    instants[next] = nanoTime;
    next = (next + 1) % instants.length;
    size = Math.min(size + 1, instants.length);
  }

  /** Events per second over the recent window; 0 until two events fall inside it. */
  public synchronized double perSecond(long now) {
    if (size < 2) {
      return 0d;
    }
    int newestIndex = Math.floorMod(next - 1, instants.length);
    long newest = instants[newestIndex];
    long oldest = newest;
    int counted = 1;
    for (int i = 1; i < size; i++) {
      long t = instants[Math.floorMod(newestIndex - i, instants.length)];
      if (now - t > windowNanos) {
        break;
      }
      oldest = t;
      counted++;
    }
    if (counted < 2 || now - newest > windowNanos || newest == oldest) {
      return 0d;
    }
    return (counted - 1) * 1e9 / (newest - oldest);
  }
}
