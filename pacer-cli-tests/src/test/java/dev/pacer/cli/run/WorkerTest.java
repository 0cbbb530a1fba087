package dev.pacer.cli.run;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import dev.pacer.Destination;
import dev.pacer.cli.db.Database;
import dev.pacer.cli.db.FrontierStore.HostCeiling;
import dev.pacer.cli.db.WorkState;
import dev.pacer.cli.demo.DemoServer;
import dev.pacer.postgres.TestDatabase;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** One worker in this JVM, on a real PostgreSQL and a local destination. */
class WorkerTest {

  @Test
  void aFetchThreadThatMeetsAnErrorGoesOnWithTheJob() throws Exception {
    Database database = new Database(TestDatabase.jdbcUrl());
    String job = "worker-error-" + ProcessHandle.current().pid() + "-" + System.nanoTime();
    Path out = Files.createTempDirectory("pacer-worker-test");
    try (DemoServer server = new DemoServer(1000, 1000);
        WorkState state = new WorkState(database)) {
      state.ensureSchema();
      List<String> urls = new ArrayList<>();
      for (int i = 1; i <= 5; i++) {
        urls.add(server.baseUrl() + "/item/" + i);
      }
      Destination destination =
          Destination.builder(job).ratePerSecond(100).maxConcurrency(1).build();
      state.jobs().enqueue("enqueue-" + job, job, destination.name(), 100, urls);
      AtomicBoolean thrown = new AtomicBoolean();
      // The envelope's first look at the host runs out of memory: the one fetch thread meets an
      // Error between items.
      Envelope envelope =
          new Envelope(
              1e9,
              Long.MAX_VALUE,
              () -> {
                if (thrown.compareAndSet(false, true)) {
                  throw new OutOfMemoryError("Java heap space (simulated)");
                }
                return 0;
              },
              () -> 0,
              System::nanoTime);
      RunSettings settings =
          new RunSettings(
              "run-" + job,
              job,
              destination,
              1,
              out,
              60_000,
              3,
              5,
              1e9,
              Long.MAX_VALUE,
              1 << 20,
              Duration.ofSeconds(10),
              0,
              true,
              0,
              false,
              false,
              false,
              Duration.ofSeconds(30),
              false,
              Optional.empty(),
              Duration.ofSeconds(20));

      Worker.Result result = new Worker(database, settings, envelope, StartLine.NONE).run();

      assertThat(thrown).isTrue();
      assertThat(result.done()).as("items done by the thread that met the Error").isEqualTo(5);
      assertThat(state.items().counts(job).open()).isZero();
    }
  }

  /**
   * A host name no destination may have: four labels of 63, 255 characters, over DNS's 253. The
   * input refuses it; an item of it here stands for any row the worker did not check itself.
   */
  private static final String UNNAMEABLE_HOST =
      String.join(".", "a".repeat(63), "b".repeat(63), "c".repeat(63), "d".repeat(63));

  /**
   * Whatever throws once an item is claimed fails that item with the reason, as an ordinary
   * failure: it is retried up to --max-attempts and then failed, and the run ends. Left to its
   * lease instead, the item would be claimed again after every lapse, for ever. Two causes past the
   * claim: a host name that no destination may have, and a host's ceiling (its frontier row) out of
   * range; with the frontier's claims (TURN) and with claims in input order (FIFO, which cannot see
   * the ceiling row: the name alone).
   */
  @ParameterizedTest
  @ValueSource(booleans = {false, true})
  void anItemWhoseProcessingThrowsAfterItsClaimEndsFailedWithTheReason(boolean fifo)
      throws Exception {
    Database database = new Database(TestDatabase.jdbcUrl());
    String job = "worker-throws-" + ProcessHandle.current().pid() + "-" + System.nanoTime();
    Path out = Files.createTempDirectory("pacer-worker-test");
    try (DemoServer server = new DemoServer(1000, 1000);
        WorkState state = new WorkState(database)) {
      state.ensureSchema();
      List<String> urls = new ArrayList<>();
      for (int i = 1; i <= 4; i++) {
        urls.add(server.baseUrl() + "/item/" + i);
      }
      String unnameable = "http://" + UNNAMEABLE_HOST + "/item";
      String outOfRange = server.baseUrl().replace("127.0.0.1", "localhost") + "/item";
      urls.add(unnameable);
      if (!fifo) {
        urls.add(outOfRange);
      }
      Destination template =
          Destination.builder("per-host:" + job).ratePerSecond(100).maxConcurrency(2).build();
      state.jobs().enqueue("enqueue-" + job, job, template.name(), 100, urls);
      Map<String, HostCeiling> ceilings = new LinkedHashMap<>();
      ceilings.put("127.0.0.1", new HostCeiling(100, 2));
      ceilings.put(UNNAMEABLE_HOST, new HostCeiling(100, 2));
      if (!fifo) {
        ceilings.put("localhost", new HostCeiling(2 * Destination.MAX_RATE_PER_SECOND, 2));
      }
      state.frontier().plan(job, ceilings);
      // A lease of 2 s: an item left to it would be claimed again within the test's time.
      RunSettings settings =
          new RunSettings(
              "run-" + job,
              job,
              template,
              2,
              out,
              2_000,
              2,
              5,
              1e9,
              Long.MAX_VALUE,
              1 << 20,
              Duration.ofSeconds(10),
              0,
              false,
              0,
              true,
              fifo,
              false,
              Duration.ofSeconds(30),
              false,
              Optional.empty(),
              Duration.ofSeconds(20));
      Envelope envelope = new Envelope(1e9, Long.MAX_VALUE, () -> 0, () -> 0, System::nanoTime);

      Worker.Result result =
          assertTimeoutPreemptively(
              Duration.ofSeconds(30),
              () -> new Worker(database, settings, envelope, StartLine.NONE).run());

      assertThat(result.halted()).isEmpty();
      assertThat(result.done()).isEqualTo(4);
      assertThat(state.items().counts(job).open()).isZero();
      assertThat(failure(job, unnameable))
          .startsWith("failed after 2: ")
          .contains("name must be 1-" + Destination.MAX_NAME_LENGTH + " characters");
      if (!fifo) {
        assertThat(failure(job, outOfRange))
            .startsWith("failed after 2: ")
            .contains("ratePerSecond must be finite");
      }
    }
  }

  /** The item's state, failures and recorded reason: "failed after 2: why". */
  private static String failure(String job, String url) throws Exception {
    try (Connection c = TestDatabase.connect();
        PreparedStatement s =
            c.prepareStatement(
                "SELECT state, failures, last_error FROM pacer_item WHERE job = ? AND url = ?")) {
      s.setString(1, job);
      s.setString(2, url);
      try (ResultSet r = s.executeQuery()) {
        assertThat(r.next()).as("item %s", url).isTrue();
        return r.getString(1) + " after " + r.getInt(2) + ": " + r.getString(3);
      }
    }
  }
}
