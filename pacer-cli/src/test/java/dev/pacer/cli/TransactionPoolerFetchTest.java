package dev.pacer.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.postgres.PgBouncer;
import dev.pacer.postgres.TestDatabase;
import java.nio.file.Files;
import java.nio.file.Path;
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
      Cli.Result run = Cli.run("fetch", input.toString(), "--job", name, "--destination", name,
          "--db", pooler.jdbcUrl(), "--out", dir.resolve("out").toString(), "--max-load", "1000",
          "--rate", Integer.toString(RATE), "--processes", "3", "--no-progress");
      assertThat(run.code()).as("%s%n%s", run.err(), run.out()).isEqualTo(0);
      assertThat(run.number("done")).isEqualTo(ITEMS);
      TestDestination.assertHeldCeiling(destination.arrivals(), RATE);
    }
  }
}
