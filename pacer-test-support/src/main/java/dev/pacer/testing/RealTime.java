package dev.pacer.testing;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.concurrent.TimeUnit;

/**
 * The real-time FIFO policy for a door's threads: a thread under it gets a CPU the moment a request
 * wakes it, where an ordinary one can wait runnable for milliseconds on a few cores shared with the
 * senders, PostgreSQL and the build, and stamp the request that late. Allowed to root or with
 * CAP_SYS_NICE, through {@code chrt}; where it is not, {@link FleetBounds} reports a broken upper
 * bound as a skip naming that cause.
 */
final class RealTime {

  /** The FIFO priority of a door's threads: above every ordinary thread, below the kernel's own. */
  static final String PRIORITY = "10";

  private static final boolean ALLOWED = probe();

  private RealTime() {}

  /** Whether {@code chrt --fifo} can run a process here. */
  static boolean allowed() {
    return ALLOWED;
  }

  /**
   * Moves the calling thread to the FIFO policy; the threads it starts from now on inherit it.
   *
   * @throws IOException if {@code chrt} could not, though {@link #allowed()}
   */
  static void moveThisThread() throws IOException {
    Path self = Files.readSymbolicLink(Paths.get("/proc/thread-self"));
    String task = self.getFileName().toString();
    run("chrt", "--fifo", "-p", PRIORITY, task);
  }

  /** Moves thread {@code task} of this JVM back to the ordinary policy. */
  static void moveToOrdinary(String task) throws IOException {
    run("chrt", "--other", "-p", "0", task);
  }

  private static void run(String... command) throws IOException {
    Process chrt =
        new ProcessBuilder(command)
            .redirectErrorStream(true)
            .redirectOutput(ProcessBuilder.Redirect.DISCARD)
            .start();
    try {
      if (!chrt.waitFor(10, TimeUnit.SECONDS) || chrt.exitValue() != 0) {
        chrt.destroyForcibly();
        throw new IOException(String.join(" ", command) + " failed");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException(String.join(" ", command) + " interrupted", e);
    }
  }

  private static boolean probe() {
    try {
      run("chrt", "--fifo", PRIORITY, "true");
      return true;
    } catch (IOException e) {
      return false;
    }
  }
}
