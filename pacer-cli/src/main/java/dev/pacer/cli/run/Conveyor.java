package dev.pacer.cli.run;

import dev.pacer.cli.db.Database;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The conveyor runner: P worker JVMs that share the job and the ceiling. Each worker is this same
 * program's hidden {@code worker} command, started with this JVM's classpath; it receives the
 * database URL in its environment ({@code PACER_DB}), never on its command line, where {@code ps}
 * would show a password. Workers log to this process's stderr. Workers start behind a {@link
 * StartLine}: each says when it is ready on its standard output, and they are all told to go at
 * once.
 */
public final class Conveyor {

  private static final Logger log = LoggerFactory.getLogger(Conveyor.class);

  /** How long workers wait for each other at the start line, at most. */
  public static final Duration START_LINE_BOUND = Duration.ofSeconds(60);

  private final Database database;
  private final List<String> workerArgs;
  private final int processes;
  private final List<Process> workers = new ArrayList<>();
  private volatile boolean timedOut;

  public Conveyor(Database database, List<String> workerArgs, int processes) {
    this.database = database;
    this.workerArgs = workerArgs;
    this.processes = processes;
  }

  private final Thread stopOnExit = new Thread(this::stop, "pacer-conveyor-stop");

  /** Starts every worker; if this JVM is terminated before they finish, they are terminated too. */
  public void start() throws IOException {
    Runtime.getRuntime().addShutdownHook(stopOnExit);
    Path java = Path.of(System.getProperty("java.home"), "bin", "java");
    for (int i = 0; i < processes; i++) {
      List<String> command = new ArrayList<>(List.of(java.toString()));
      command.addAll(JvmOptions.ofPacer());
      // Workers are many JVMs on one machine: small heaps and stacks, a one-thread collector.
      command.addAll(
          List.of(
              "-XX:+UseSerialGC",
              "-Xss512k",
              "-Xmx512m",
              "-cp",
              System.getProperty("java.class.path"),
              "dev.pacer.cli.Main",
              "worker"));
      command.addAll(workerArgs);
      ProcessBuilder builder =
          new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT);
      builder.environment().put("PACER_DB", database.url());
      Process worker = builder.start();
      workers.add(worker);
      log.info("Started worker {} of {} (pid {})", i + 1, processes, worker.pid());
    }
    Thread starter = new Thread(this::releaseWhenReady, "pacer-start-line");
    starter.setDaemon(true);
    starter.start();
  }

  /**
   * The {@link StartLine}'s other end: once every worker has said it is ready (or has exited), or
   * {@link #START_LINE_BOUND} has passed, tells them all to go.
   */
  private void releaseWhenReady() {
    CountDownLatch ready = new CountDownLatch(workers.size());
    for (Process worker : workers) {
      Thread reader =
          new Thread(
              () -> {
                boolean counted = false;
                try (BufferedReader out =
                    new BufferedReader(
                        new InputStreamReader(worker.getInputStream(), StandardCharsets.UTF_8))) {
                  for (String line; (line = out.readLine()) != null; ) {
                    if (!counted && line.equals(StartLine.READY)) {
                      ready.countDown();
                      counted = true;
                    }
                  }
                } catch (IOException e) {
                  log.debug(
                      "Worker pid {}: standard output unreadable: {}", worker.pid(), e.toString());
                } finally {
                  if (!counted) {
                    ready.countDown();
                  }
                }
              },
              "pacer-worker-output-" + worker.pid());
      reader.setDaemon(true);
      reader.start();
    }
    try {
      if (!ready.await(START_LINE_BOUND.toMillis(), TimeUnit.MILLISECONDS)) {
        log.warn(
            "Not every worker was ready within {} s; starting those that are",
            START_LINE_BOUND.toSeconds());
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    for (Process worker : workers) {
      try (OutputStream in = worker.getOutputStream()) {
        in.write((StartLine.GO + "\n").getBytes(StandardCharsets.UTF_8));
      } catch (IOException e) {
        log.debug("Worker pid {} has exited before the start", worker.pid());
      }
    }
  }

  /**
   * Waits for every worker and returns their exit codes, in start order. With a {@code limit},
   * workers still running when it is reached are terminated (they give their items back).
   */
  public List<Integer> await(Optional<Duration> limit) throws InterruptedException {
    if (limit.isPresent()) {
      long deadline = System.nanoTime() + limit.get().toNanos();
      for (Process worker : workers) {
        long left = deadline - System.nanoTime();
        if (left <= 0 || !worker.waitFor(left, TimeUnit.NANOSECONDS)) {
          timedOut = true;
          break;
        }
      }
      if (timedOut) {
        log.info("Time limit of {} s reached: stopping the workers", limit.get().toSeconds());
        stop();
      }
    }
    List<Integer> codes = new ArrayList<>();
    for (Process worker : workers) {
      int code = worker.waitFor();
      if (code != 0 && code != 3 && !timedOut) {
        log.warn(
            "Worker pid {} exited with code {}; its leased items return to the job when"
                + " their leases expire",
            worker.pid(),
            code);
      }
      codes.add(code);
    }
    Runtime.getRuntime().removeShutdownHook(stopOnExit);
    return codes;
  }

  /** Whether {@link #await} stopped the workers at its limit. */
  public boolean timedOut() {
    return timedOut;
  }

  /** Ends every worker still running (SIGTERM); used when this process is interrupted. */
  public void stop() {
    for (Process worker : workers) {
      worker.destroy();
    }
  }
}
