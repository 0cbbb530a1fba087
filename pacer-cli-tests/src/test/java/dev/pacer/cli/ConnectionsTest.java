package dev.pacer.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.pacer.postgres.TestDatabase;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What {@code pacer fetch --processes 2} holds in PostgreSQL connections: sampled from {@code
 * pg_stat_activity} every 100 ms during a real run, each connection traced to the process that
 * opened it ({@link ClientSockets}), and held to the figures of docs/operations.md ("Connections")
 * per application name, so that a new connection shows here before it shows in an operator's {@code
 * max_connections}. The run has a database of its own, so that nothing else is counted.
 */
class ConnectionsTest {

  private static final AtomicInteger UNIQUE = new AtomicInteger();
  private static final int RATE = 10;

  /**
   * About 2 s of turns at the ceiling: a worker opens its connections before the start line and
   * holds them to its end, so the samples see them all however short the run.
   */
  private static final int ITEMS = 20;

  private static final long SAMPLE_MILLIS = 100;

  /** A worker's connections, by application name: docs/operations.md's table. */
  private static final Map<String, Integer> WORKER =
      Map.of("pacer-store", 2, "pacer-cursor", 1, "pacer-listener", 1, "pacer-slots", 1);

  /**
   * The orchestrator's: its work state, and the cursor that reads the destination's holds before
   * the workers start.
   */
  private static final Map<String, Integer> ORCHESTRATOR =
      Map.of("pacer-store", 1, "pacer-cursor", 1);

  @TempDir Path dir;

  @Test
  void eachProcessOfAConveyorHoldsAtMostItsDocumentedConnections() throws Exception {
    assumeTrue(ClientSockets.available(), "tracing a connection to its process needs /proc");
    String name = "conns-" + ProcessHandle.current().pid() + "-" + UNIQUE.incrementAndGet();
    String database = name.replace('-', '_');
    TestDatabase.execute("CREATE DATABASE " + database);
    try (TestDestination destination = new TestDestination()) {
      Path input = dir.resolve(name + ".txt");
      Files.write(input, destination.items("/run/", ITEMS));
      String url = TestDatabase.postgres().getJdbcUrl("postgres", database);
      CompletableFuture<Cli.Result> run =
          CompletableFuture.supplyAsync(
              () ->
                  Cli.run(
                      "fetch",
                      input.toString(),
                      "--job",
                      name,
                      "--destination",
                      name,
                      "--db",
                      url,
                      "--out",
                      dir.resolve("out").toString(),
                      "--max-load",
                      "1000",
                      "--rate",
                      Integer.toString(RATE),
                      "--processes",
                      "2",
                      "--no-progress"));
      Map<Long, Map<String, Integer>> peaks = sampleUntilDone(run, database);
      Cli.Result result = run.get(60, TimeUnit.SECONDS);
      assertThat(result.code()).as("%s%n%s", result.err(), result.out()).isEqualTo(0);
      assertThat(result.number("done")).isEqualTo(ITEMS);

      long orchestrator = ProcessHandle.current().pid();
      Map<Long, Map<String, Integer>> workers = new TreeMap<>(peaks);
      workers.remove(orchestrator);
      String seen =
          "peak connections by process and application name, orchestrator pid "
              + orchestrator
              + ": "
              + peaks;
      assertThat(workers).as(seen).hasSize(2);
      assertAtMost(peaks.getOrDefault(orchestrator, Map.of()), ORCHESTRATOR, seen);
      for (Map<String, Integer> worker : workers.values()) {
        // Each worker was traced at all: a worker seen without these is a test that saw nothing.
        assertThat(worker).as(seen).containsEntry("pacer-cursor", 1).containsKey("pacer-store");
        assertAtMost(worker, WORKER, seen);
      }
    } finally {
      TestDatabase.execute("DROP DATABASE IF EXISTS " + database + " WITH (FORCE)");
    }
  }

  /**
   * The most connections each process held at once under each application name, over the samples
   * taken until {@code run} is done.
   */
  private static Map<Long, Map<String, Integer>> sampleUntilDone(
      CompletableFuture<?> run, String database) throws Exception {
    Map<Long, Map<String, Integer>> peaks = new TreeMap<>();
    try (Connection c = TestDatabase.connect();
        PreparedStatement s =
            c.prepareStatement(
                "SELECT client_port, application_name"
                    + " FROM pg_stat_activity WHERE datname = ? AND client_port IS NOT NULL"
                    // A backend still authenticating has no name yet; it has one by the next
                    // sample.
                    + " AND application_name <> ''")) {
      s.setString(1, database);
      while (!run.isDone()) {
        Map<Integer, String> names = new HashMap<>();
        try (ResultSet r = s.executeQuery()) {
          while (r.next()) {
            names.put(r.getInt(1), r.getString(2));
          }
        }
        Set<Long> pids = new HashSet<>();
        pids.add(ProcessHandle.current().pid());
        ProcessHandle.current().children().forEach(p -> pids.add(p.pid()));
        Map<Integer, Long> owners = ClientSockets.ownersByClientPort(TestDatabase.port(), pids);
        Map<Long, Map<String, Integer>> sample = new HashMap<>();
        names.forEach(
            (port, application) -> {
              Long owner = owners.get(port);
              if (owner != null) { // else closed since, or not this run's
                sample
                    .computeIfAbsent(owner, p -> new TreeMap<>())
                    .merge(application, 1, Integer::sum);
              }
            });
        sample.forEach(
            (pid, counts) ->
                counts.forEach(
                    (application, n) ->
                        peaks
                            .computeIfAbsent(pid, p -> new TreeMap<>())
                            .merge(application, n, Math::max)));
        Thread.sleep(SAMPLE_MILLIS);
      }
    }
    return peaks;
  }

  private static void assertAtMost(
      Map<String, Integer> held, Map<String, Integer> documented, String seen) {
    held.forEach(
        (application, n) ->
            assertThat(n)
                .as("%s connection(s) of one process; %s", application, seen)
                .isLessThanOrEqualTo(documented.getOrDefault(application, 0)));
  }
}
