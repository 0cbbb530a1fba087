package dev.pacer.bench;

import dev.pacer.Destination;
import dev.pacer.DestinationLimiter;
import dev.pacer.LimiterRegistry;
import dev.pacer.LocalCursor;
import dev.pacer.Slot;
import dev.pacer.postgres.PostgresCursor;
import dev.pacer.postgres.PostgresCursorConfig;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

/**
 * A benchmark worker: one JVM of a multi-process measurement, driven line by line on its stdin by
 * {@link WorkerPool}, answering on stdout. Each measurement has two steps so that every worker is
 * connected and warm before any counts:
 *
 * <pre>
 * throughput CONTENDER SYNC KEY[,KEY…] WARMUP_MS  → ready
 * accuracy   pacer|local SYNC DESTINATION THREADS RATE [LEASED HORIZON_MICROS] → ready
 * go START_EPOCH_MS END_EPOCH_MS                  → done COUNT CPU_NANOS (throughput)
 *                                                 → done COUNT EPOCH_MICROS,… STATEMENTS
 *                                                   UNUSED LATE (accuracy: the cursor's
 *                                                   reservation statements over the window, 0
 *                                                   if local; leased turns given up unused;
 *                                                   turns given up as woken too late)
 * exit
 * </pre>
 *
 * Failures answer {@code error MESSAGE}.
 */
public final class Worker {

  private final Database.Target db;
  private final PrintStream out;

  private Worker(Database.Target db, PrintStream out) {
    this.db = db;
    this.out = out;
  }

  public static void main(String[] args) throws IOException {
    PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
    Worker worker = new Worker(new Database.Target(args[0]), out);
    BufferedReader in =
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    out.println("hello");
    String line;
    while ((line = in.readLine()) != null) {
      if (line.equals("exit")) {
        break;
      }
      try {
        worker.handle(line.split(" "), in);
      } catch (Exception | AssertionError e) {
        out.println("error " + String.valueOf(e).replace('\n', ' '));
      }
    }
  }

  private void handle(String[] command, BufferedReader in) throws Exception {
    switch (command[0]) {
      case "throughput" ->
          throughput(
              Contender.valueOf(command[1]),
              Boolean.parseBoolean(command[2]),
              command[3].split(","),
              Long.parseLong(command[4]),
              in);
      case "accuracy" ->
          accuracy(
              command[1].equals("pacer"),
              Boolean.parseBoolean(command[2]),
              command[3],
              Integer.parseInt(command[4]),
              Double.parseDouble(command[5]),
              command.length > 7 ? Integer.parseInt(command[6]) : 1,
              command.length > 7 ? Long.parseLong(command[7]) : 0,
              in);
      default -> throw new IllegalArgumentException("unknown command " + command[0]);
    }
  }

  private void throughput(
      Contender contender, boolean sync, String[] keys, long warmupMillis, BufferedReader in)
      throws Exception {
    try (Operation op = contender.open(db, sync, keys)) {
      long warmEnd = System.currentTimeMillis() + warmupMillis;
      while (System.currentTimeMillis() < warmEnd) {
        op.perform();
      }
      out.println("ready");
      long[] window = awaitGo(in);
      long count = 0;
      long cpuAtStart = -1;
      long now;
      while ((now = System.currentTimeMillis()) < window[1]) {
        if (cpuAtStart < 0 && now >= window[0]) {
          cpuAtStart = processCpuNanos();
        }
        op.perform();
        now = System.currentTimeMillis();
        if (now >= window[0] && now < window[1]) {
          count++;
        }
      }
      long cpu = cpuAtStart < 0 ? 0 : processCpuNanos() - cpuAtStart;
      out.println("done " + count + " " + cpu);
    }
  }

  private void accuracy(
      boolean shared,
      boolean sync,
      String destinationName,
      int threads,
      double rate,
      int leased,
      long horizonMicros,
      BufferedReader in)
      throws Exception {
    PostgresCursor cursor =
        shared
            ? new PostgresCursor(
                PostgresCursorConfig.forUrl(db.jdbcUrl(), db.properties())
                    .synchronousCommit(sync)
                    .build())
            : null;
    try {
      if (cursor != null) {
        // Connect (and create the table) before the clock starts.
        PacerOperation.awaitConnected(cursor);
      }
      LimiterRegistry registry = new LimiterRegistry(cursor != null ? cursor : new LocalCursor());
      DestinationLimiter limiter =
          registry.limiter(
              Destination.builder(destinationName)
                  .ratePerSecond(rate)
                  .maxConcurrency(threads)
                  .maxLeasedTurns(leased)
                  .leaseHorizon(Duration.ofNanos(horizonMicros * 1000))
                  .build());
      out.println("ready");
      long[] window = awaitGo(in);
      long statementsAtGo = cursor == null ? 0 : cursor.reservationStatements();
      List<List<Long>> perThread = new ArrayList<>();
      List<Thread> running = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        List<Long> mine = new ArrayList<>();
        perThread.add(mine);
        Thread thread = new Thread(() -> demand(limiter, window, mine), "demand-" + t);
        running.add(thread);
        thread.start();
      }
      for (Thread thread : running) {
        thread.join();
      }
      long statements = cursor == null ? 0 : cursor.reservationStatements() - statementsAtGo;
      StringBuilder reply = new StringBuilder("done ");
      int n = perThread.stream().mapToInt(List::size).sum();
      reply.append(n).append(' ');
      boolean first = true;
      for (List<Long> times : perThread) {
        for (long t : times) {
          if (!first) {
            reply.append(',');
          }
          reply.append(t);
          first = false;
        }
      }
      reply.append(' ').append(statements);
      reply.append(' ').append(limiter.leasedTurnsUnused());
      out.println(reply.append(' ').append(limiter.lateTurnsSkipped()));
    } finally {
      if (cursor != null) {
        cursor.close();
      }
    }
  }

  /** One thread of demand: acquire, note the time the turn was granted, release, repeat. */
  private static void demand(DestinationLimiter limiter, long[] window, List<Long> times) {
    try {
      long untilStart = window[0] - System.currentTimeMillis();
      if (untilStart > 0) {
        Thread.sleep(untilStart);
      }
      while (System.currentTimeMillis() < window[1]) {
        Slot slot = limiter.acquire();
        times.add(epochMicros());
        slot.close();
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** CPU time of this whole JVM (every thread, user and system), in nanoseconds. */
  private static long processCpuNanos() {
    return ((com.sun.management.OperatingSystemMXBean)
            java.lang.management.ManagementFactory.getOperatingSystemMXBean())
        .getProcessCpuTime();
  }

  static long epochMicros() {
    Instant now = Instant.now();
    return now.getEpochSecond() * 1_000_000L + now.getNano() / 1_000;
  }

  private static long[] awaitGo(BufferedReader in) throws IOException {
    String line = in.readLine();
    if (line == null || !line.startsWith("go ")) {
      throw new IllegalStateException("expected go, got " + line);
    }
    String[] parts = line.split(" ");
    return new long[] {Long.parseLong(parts[1]), Long.parseLong(parts[2])};
  }
}
