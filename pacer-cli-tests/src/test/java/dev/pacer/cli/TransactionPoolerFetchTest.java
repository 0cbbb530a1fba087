package dev.pacer.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.postgres.PgBouncer;
import dev.pacer.postgres.TestDatabase;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.LongSummaryStatistics;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code pacer fetch --processes 3} given a transaction pooler's URL as it is (a real PgBouncer in
 * transaction mode in front of the test database): the run starts, fetches everything, and the
 * ceiling holds at the door.
 */
class TransactionPoolerFetchTest {

  private static final AtomicInteger UNIQUE = new AtomicInteger();
  private static final int RATE = 7;

  /** About 6 s of turns at the ceiling, so that the three workers overlap. */
  private static final int ITEMS = 42;

  @TempDir Path dir;

  @Test
  void threeProcessesThroughAPoolerHoldTheCeilingAtTheDoor() throws Exception {
    String name = "pooled-fetch-" + ProcessHandle.current().pid() + "-" + UNIQUE.incrementAndGet();
    try (PgBouncer pooler = PgBouncer.transactionMode(TestDatabase.port(), 4);
        TestDestination destination = new TestDestination()) {
      Path input = dir.resolve(name + ".txt");
      Files.write(input, destination.items("/run/", ITEMS));
      Cli.Result run =
          Cli.run(
              "fetch",
              input.toString(),
              "--job",
              name,
              "--destination",
              name,
              "--db",
              pooler.jdbcUrl(),
              "--out",
              dir.resolve("out").toString(),
              "--max-load",
              "1000",
              "--rate",
              Integer.toString(RATE),
              "--processes",
              "3",
              "--no-progress");
      assertThat(run.code()).as("%s%n%s", run.err(), run.out()).isEqualTo(0);
      assertThat(run.number("done")).isEqualTo(ITEMS);
      TestDestination.assertHeldCeiling(destination.arrivals(), RATE);
    }
  }

  /**
   * One dispatch slot, three workers, and a pool of one server connection, which every worker's
   * transactions share: a slot held by a server session would be held by all of them. Judged at the
   * destination: no worker's requests fall between another's first and last.
   */
  @Test
  void oneDispatchSlotBehindAPoolerLetsOneWorkerFetchAtATime() throws Exception {
    String name = "pooled-slot-" + ProcessHandle.current().pid() + "-" + UNIQUE.incrementAndGet();
    try (PgBouncer pooler = PgBouncer.transactionMode(TestDatabase.port(), 1);
        TestDestination destination = new TestDestination()) {
      Path input = dir.resolve(name + ".txt");
      Files.write(input, destination.items("/run/", 30));
      Cli.Result run =
          Cli.run(
              "fetch",
              input.toString(),
              "--job",
              name,
              "--destination",
              name,
              "--db",
              pooler.jdbcUrl(),
              "--out",
              dir.resolve("out").toString(),
              "--max-load",
              "1000",
              "--rate",
              "10",
              "--processes",
              "3",
              "--max-dispatches",
              "1",
              "--no-progress");
      assertThat(run.code()).as("%s%n%s", run.err(), run.out()).isEqualTo(0);
      assertThat(run.number("done")).isEqualTo(30);

      List<TestDestination.Arrival> arrivals = destination.arrivals();
      long origin = arrivals.stream().mapToLong(TestDestination.Arrival::nanos).min().orElseThrow();
      Map<String, LongSummaryStatistics> byWorker = new TreeMap<>();
      arrivals.forEach(
          a ->
              byWorker
                  .computeIfAbsent(a.worker(), w -> new LongSummaryStatistics())
                  .accept(a.nanos()));
      StringBuilder spans = new StringBuilder();
      byWorker.forEach(
          (w, t) ->
              spans.append(
                  String.format(
                      Locale.ROOT,
                      " pid %s: %d requests in [%.3f, %.3f] s;",
                      w,
                      t.getCount(),
                      (t.getMin() - origin) / 1e9,
                      (t.getMax() - origin) / 1e9)));
      for (Map.Entry<String, LongSummaryStatistics> a : byWorker.entrySet()) {
        for (Map.Entry<String, LongSummaryStatistics> b : byWorker.entrySet()) {
          if (!a.getKey().equals(b.getKey())) {
            assertThat(
                    b.getValue().getMin() > a.getValue().getMax()
                        || b.getValue().getMax() < a.getValue().getMin())
                .as("pid %s fetched while pid %s did:%s", b.getKey(), a.getKey(), spans)
                .isTrue();
          }
        }
      }
    }
  }
}
