package dev.pacer.postgres;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * The threads of a worker JVM, whose deaths are not lost. A thread that ends by throwing leaves
 * only a stack trace on stderr, and its JVM still exits 0 once its main returns: the test that
 * started it would then judge a fleet short of a thread, or a warm-up that never ran, as if nothing
 * had happened. Each task's death, of anything but an interrupt (the way a test stops a waiter), is
 * kept here, and {@link #exitIfAnyDied()} turns it into a non-zero exit that the test asserts.
 */
final class WorkerThreads {

  /** The exit status of a worker JVM one of whose threads died. */
  static final int DIED = 70;

  /** A thread's work, which may throw. */
  @FunctionalInterface
  interface Task {
    void run() throws Exception;
  }

  private final ConcurrentLinkedQueue<Thread> started = new ConcurrentLinkedQueue<>();
  private final ConcurrentLinkedQueue<String> deaths = new ConcurrentLinkedQueue<>();

  /** Starts {@code task} on a platform thread. */
  Thread start(Task task) {
    Thread thread = new Thread(guarded(task));
    started.add(thread);
    thread.start();
    return thread;
  }

  /**
   * Starts {@code task} on a virtual thread: by reflection, since the test sources are compiled for
   * 17; the JVM running it must be 21 or later.
   */
  Thread startVirtual(Task task) throws ReflectiveOperationException {
    Thread thread =
        (Thread)
            Thread.class
                .getMethod("startVirtualThread", Runnable.class)
                .invoke(null, guarded(task));
    started.add(thread);
    return thread;
  }

  /** Waits for every thread started here to end. */
  void joinAll() throws InterruptedException {
    for (Thread thread : started) {
      thread.join();
    }
  }

  /** The deaths so far, one line each: the thread and what it died of. */
  List<String> deaths() {
    return new ArrayList<>(deaths);
  }

  /** Ends the JVM with {@link #DIED} if any thread started here died; otherwise returns. */
  void exitIfAnyDied() {
    List<String> all = deaths();
    if (!all.isEmpty()) {
      System.out.flush();
      System.err.println(all.size() + " worker thread(s) died: " + all);
      System.err.flush();
      System.exit(DIED);
    }
  }

  private Runnable guarded(Task task) {
    return () -> {
      try {
        task.run();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      } catch (Throwable t) {
        deaths.add(Thread.currentThread() + ": " + t);
        t.printStackTrace();
      }
    };
  }
}
