package dev.pacer.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.testing.Arrival;
import dev.pacer.testing.Door;
import dev.pacer.testing.Timeline;
import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * More processes fetch than {@code maxFetchingProcesses} says, and PostgreSQL goes away: four
 * worker JVMs of two threads each, configured for 2, a 7/s ceiling, the server stopped with
 * {@code pg_ctl stop -m immediate} once every worker has been counted by the census and left down
 * to the end of the run. Each process divides by the 4 it saw taking turns, so the fleet at the
 * door stays at the ceiling through the outage; divided by the configured 2 alone it would run at
 * twice the ceiling.
 *
 * <p>Why 7/s: processes pacing alone keep no common phase, so in a sliding 1-s window each can
 * show one turn more than its rate. At 7/s each of the four paces every 571 ms, two turns in any
 * window, eight in all: the ceiling + 1 whatever their phases, with 71 ms to spare for a late
 * stamp. (At 10/s each would pace every 400 ms, and four phases can line up three turns each.)
 */
class LargerFleetOutageTest {

  private static final double RATE = 7;
  private static final int PROCESSES = 4;
  private static final int THREADS = 2;
  private static final int MAX_FETCHING_PROCESSES = 2;
  /** Two census periods and a little: every worker has counted all four. */
  private static final long COUNTED_AFTER_MILLIS = 2 * FetcherCensus.PERIOD.toMillis() + 1000;
  private static final int RUN_SECONDS = 13;

  @Test
  void aFleetLargerThanConfiguredHoldsTheCeilingThroughAnOutage() throws Exception {
    String destination = "larger-" + UUID.randomUUID().toString().substring(0, 8);
    try (RestartablePostgres postgres = new RestartablePostgres(); Door door = Door.start()) {
      List<Process> workers = new ArrayList<>();
      try {
        String java = System.getProperty("java.home") + File.separator + "bin" + File.separator + "java";
        Path logs = Files.createTempDirectory("larger-fleet-logs");
        List<BufferedReader> readers = new ArrayList<>();
        for (int i = 0; i < PROCESSES; i++) {
          Process p = new ProcessBuilder(java, "-XX:TieredStopAtLevel=1", "-cp",
              System.getProperty("java.class.path"), OutageWorker.class.getName(),
              postgres.jdbcUrl(), destination, String.valueOf(RATE), String.valueOf(THREADS),
              String.valueOf(MAX_FETCHING_PROCESSES), String.valueOf(RUN_SECONDS),
              door.uri().resolve("/r").toString())
              .redirectError(logs.resolve("worker-" + i + ".log").toFile()).start();
          workers.add(p);
          readers.add(new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8)));
        }
        for (BufferedReader r : readers) {
          assertThat(r.readLine()).isEqualTo("READY");
        }
        for (Process p : workers) {
          Writer in = new OutputStreamWriter(p.getOutputStream(), StandardCharsets.UTF_8);
          in.write("GO\n");
          in.flush();
        }
        List<CompletableFuture<List<String>>> outputs = new ArrayList<>();
        for (BufferedReader r : readers) {
          outputs.add(CompletableFuture.supplyAsync(() -> r.lines().toList()));
        }
        Thread.sleep(COUNTED_AFTER_MILLIS);
        long down = System.nanoTime();
        postgres.stopImmediately();
        for (int i = 0; i < PROCESSES; i++) {
          outputs.get(i).get(RUN_SECONDS + 30, TimeUnit.SECONDS);
          assertThat(workers.get(i).waitFor(30, TimeUnit.SECONDS)).isTrue();
          assertThat(workers.get(i).exitValue()).as("worker %d exit", i).isZero();
        }

        List<Long> turns = door.arrivals().stream().filter(a -> a.path().equals("/r"))
            .map(Arrival::nanos).toList();
        Timeline before = new Timeline(turns.stream().filter(t -> t - down < 0).toList());
        Timeline during = new Timeline(turns.stream().filter(t -> t - down >= 0).toList());
        System.out.printf("larger fleet: %d processes, maxFetchingProcesses %d, at the door"
                + " before the outage %s, during it %s%n", PROCESSES, MAX_FETCHING_PROCESSES,
            before, during);
        for (int i = 0; i < PROCESSES; i++) {
          for (String line : Files.readAllLines(logs.resolve("worker-" + i + ".log"))) {
            if (line.contains("pacing locally")) {
              System.out.println("larger fleet: worker " + i + ": " + line);
            }
          }
        }
        assertThat(before.peakOneSecondWindow()).as("before the outage, %s", before)
            .isLessThanOrEqualTo((int) RATE + 1);
        assertThat(during.peakOneSecondWindow()).as("busiest 1-s window of the outage, %s", during)
            .isLessThanOrEqualTo((int) RATE + 1);
        // Divided by 4, the fleet runs at the ceiling once the shared queue has drained; a process
        // that stalled, or divided by far more, would fall well short.
        assertThat(during.aggregateRatePerSecond()).as("fleet rate during the outage, %s", during)
            .isGreaterThan(0.6 * RATE);
      } finally {
        workers.forEach(Process::destroyForcibly);
      }
    }
  }
}
