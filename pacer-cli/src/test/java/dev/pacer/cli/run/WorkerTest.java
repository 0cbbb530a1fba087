package dev.pacer.cli.run;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.Destination;
import dev.pacer.cli.db.Database;
import dev.pacer.cli.db.WorkState;
import dev.pacer.cli.demo.DemoServer;
import dev.pacer.postgres.TestDatabase;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;

/** One worker in this JVM, on a real PostgreSQL and a local destination. */
class WorkerTest {

  @Test
  void aFetchThreadThatMeetsAnErrorGoesOnWithTheJob() throws Exception {
    Database database = new Database(TestDatabase.jdbcUrl());
    String job = "worker-error-" + ProcessHandle.current().pid() + "-" + System.nanoTime();
    Path out = Files.createTempDirectory("pacer-worker-test");
    try (DemoServer server = new DemoServer(1000, 1000); WorkState state = new WorkState(database)) {
      state.ensureSchema();
      List<String> urls = new ArrayList<>();
      for (int i = 1; i <= 5; i++) {
        urls.add(server.baseUrl() + "/item/" + i);
      }
      Destination destination = Destination.builder(job).ratePerSecond(100).maxConcurrency(1)
          .build();
      state.jobs().enqueue("enqueue-" + job, job, destination.name(), 100, urls);
      AtomicBoolean thrown = new AtomicBoolean();
      // The envelope's first look at the host runs out of memory: the one fetch thread meets an
      // Error between items.
      Envelope envelope = new Envelope(1e9, Long.MAX_VALUE, () -> {
        if (thrown.compareAndSet(false, true)) {
          throw new OutOfMemoryError("Java heap space (simulated)");
        }
        return 0;
      }, () -> 0, System::nanoTime);
      RunSettings settings = new RunSettings("run-" + job, job, destination, 1, out, 60_000, 3, 5,
          1e9, Long.MAX_VALUE, 1 << 20, Duration.ofSeconds(10), 0, true, 0, false, false, false,
          Duration.ofSeconds(30));

      Worker.Result result = new Worker(database, settings, envelope, StartLine.NONE).run();

      assertThat(thrown).isTrue();
      assertThat(result.done()).as("items done by the thread that met the Error").isEqualTo(5);
      assertThat(state.items().counts(job).open()).isZero();
    }
  }
}
