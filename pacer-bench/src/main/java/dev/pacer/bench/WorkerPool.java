package dev.pacer.bench;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * Real worker JVMs ({@code java -cp <this classpath> dev.pacer.bench.Worker}), started once per run
 * and reused by every multi-process measurement: a measurement over N processes drives the first N.
 * Each worker is a separate OS process with its own connection, as a fleet's would be.
 */
final class WorkerPool implements AutoCloseable {

  /** How long the workers get between "go" and the start of the counted window. */
  static final long START_DELAY_MILLIS = 300;

  private final List<Handle> workers = new ArrayList<>();

  WorkerPool(int size, Database.Target db) throws IOException {
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    String classpath = System.getProperty("java.class.path");
    for (int i = 0; i < size; i++) {
      ProcessBuilder pb =
          new ProcessBuilder(
              java,
              "-Xms64m",
              "-Xmx256m",
              "-XX:+UseSerialGC",
              "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
              "-cp",
              classpath,
              Worker.class.getName(),
              db.jdbcUrl());
      pb.redirectError(ProcessBuilder.Redirect.INHERIT);
      workers.add(new Handle(pb.start()));
    }
    for (Handle w : workers) {
      w.expect("hello");
    }
  }

  /**
   * Sends {@code prepare} (a command line) to the first {@code n} workers, waits for all to be
   * ready, then starts them together on a window of {@code millis} and returns their "done"
   * replies, without the word "done".
   */
  List<String> run(int n, List<String> prepare, long millis) {
    return run(n, prepare, millis, () -> 0).replies();
  }

  /** {@link #run}'s replies, and a meter read when the counted window starts and ends. */
  record Metered(List<String> replies, long atStart, long atEnd) {}

  /** {@link #run}, reading {@code meter} when the counted window starts and when it ends. */
  Metered run(int n, List<String> prepare, long millis, LongSupplier meter) {
    List<Handle> chosen = workers.subList(0, n);
    for (int i = 0; i < n; i++) {
      chosen.get(i).send(prepare.get(i));
    }
    for (Handle w : chosen) {
      w.expect("ready");
    }
    long start = System.currentTimeMillis() + START_DELAY_MILLIS;
    long end = start + millis;
    for (Handle w : chosen) {
      w.send("go " + start + " " + end);
    }
    sleepUntil(start);
    long atStart = meter.getAsLong();
    // Read at the window's end, while every worker's connections are still open: a server
    // process's CPU time leaves with it, and a worker closes its own once it has replied.
    sleepUntil(end);
    long atEnd = meter.getAsLong();
    List<String> replies = new ArrayList<>();
    for (Handle w : chosen) {
      replies.add(w.expect("done").substring("done".length()).trim());
    }
    return new Metered(replies, atStart, atEnd);
  }

  private static void sleepUntil(long epochMillis) {
    try {
      long left = epochMillis - System.currentTimeMillis();
      if (left > 0) {
        Thread.sleep(left);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  @Override
  public void close() {
    for (Handle w : workers) {
      w.send("exit");
    }
    for (Handle w : workers) {
      w.stop();
    }
  }

  private static final class Handle {
    private final Process process;
    private final PrintWriter in;
    private final BufferedReader out;

    Handle(Process process) {
      this.process = process;
      this.in = new PrintWriter(process.getOutputStream(), true, StandardCharsets.UTF_8);
      this.out =
          new BufferedReader(
              new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
    }

    void send(String line) {
      in.println(line);
    }

    String expect(String word) {
      String line;
      try {
        line = out.readLine();
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
      if (line == null || !(line.equals(word) || line.startsWith(word + " "))) {
        throw new IllegalStateException(
            "worker " + process.pid() + " answered " + line + " instead of " + word);
      }
      return line;
    }

    void stop() {
      try {
        if (!process.waitFor(5, TimeUnit.SECONDS)) {
          process.destroyForcibly();
        }
      } catch (InterruptedException e) {
        process.destroyForcibly();
        Thread.currentThread().interrupt();
      }
    }
  }
}
