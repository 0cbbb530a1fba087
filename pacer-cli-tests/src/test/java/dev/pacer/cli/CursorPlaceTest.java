package dev.pacer.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.postgres.TestDatabase;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code --cursor-layout django-cache}: a {@code pacer fetch} whose conveyor workers keep their
 * cursor on a Django cache row shares one ceiling with a fleet that writes the original (Python)
 * design's statement on that row, judged where both fleets' requests arrive. The twin keeps the
 * run's cursor in Pacer's own table, and the two fleets, each pacing at the ceiling, break it.
 */
class CursorPlaceTest {

  private static final AtomicInteger UNIQUE = new AtomicInteger();
  private static final String CACHE = "cli_django_cache";

  /** The ceiling: 10/s, a turn every 100 ms. */
  private static final int RATE = 10;

  /** The run's items and the original fleet's requests: about 6 s of turns together. */
  private static final int ITEMS = 35;

  private static final int ORIGINAL_REQUESTS = 25;

  /** The two fleets overlap by at least this many of the original fleet's requests. */
  private static final int OVERLAP = 5;

  @TempDir Path dir;
  private TestDestination destination;
  private String name;

  @BeforeEach
  void start() throws Exception {
    TestDatabase.createDjangoCacheTable(CACHE);
    destination = new TestDestination();
    name = "cursor-place-" + ProcessHandle.current().pid() + "-" + UNIQUE.incrementAndGet();
  }

  @AfterEach
  void stop() {
    destination.close();
  }

  @Test
  void aRunOnADjangoCacheRowSharesTheCeilingWithTheOriginalStatement() throws Exception {
    List<TestDestination.Arrival> arrivals =
        beside("--cursor-layout", "django-cache", "--cursor-table", CACHE);

    TestDestination.assertHeldCeiling(arrivals, RATE);

    Cli.Result status =
        Cli.run(
            "status",
            "--job",
            name,
            "--db",
            TestDatabase.jdbcUrl(),
            "--cursor-layout",
            "django-cache",
            "--cursor-table",
            CACHE);
    assertThat(status.code()).as(status.err()).isEqualTo(0);
    assertThat(status.out())
        .contains("Django cache table " + CACHE)
        .containsPattern("\\n  " + name + " +next turn");
    Cli.Result cleared =
        Cli.run(
            "cursor",
            "clear",
            name,
            "--db",
            TestDatabase.jdbcUrl(),
            "--cursor-layout",
            "django-cache",
            "--cursor-table",
            CACHE);
    assertThat(cleared.code()).as(cleared.err()).isEqualTo(0);
    assertThat(
            Cli.run(
                    "status",
                    "--job",
                    name,
                    "--db",
                    TestDatabase.jdbcUrl(),
                    "--cursor-layout",
                    "django-cache",
                    "--cursor-table",
                    CACHE)
                .out())
        .doesNotContainPattern("\\n  " + name + " +next turn");
  }

  /** The same run with its cursor in Pacer's own table: two cursors, two ceilings' worth. */
  @Test
  void aRunOnItsOwnTableBesideTheOriginalStatementBreaksTheCeiling() throws Exception {
    TestDestination.assertBrokeCeiling(beside(), RATE);
  }

  /**
   * A 2-worker conveyor run of {@link #ITEMS} items at {@link #RATE}/s, and beside it, from the
   * run's first arrival on, a JVM that takes {@link #ORIGINAL_REQUESTS} turns with the original
   * statement on the row {@code harvest-rate-cursor:<destination>} of the cache table. Returns
   * every arrival of both, once both overlapped: at least {@link #OVERLAP} of the original fleet's
   * requests arrived between the run's first and last. (On one shared cursor the run's four
   * fetching threads take about four turns in five while the original fleet's one thread takes the
   * fifth, so the run finishes first.)
   */
  private List<TestDestination.Arrival> beside(String... cursorOptions) throws Exception {
    Path input = dir.resolve(name + ".txt");
    Files.write(input, destination.items("/run/", ITEMS));
    List<String> args =
        new ArrayList<>(
            List.of(
                "fetch",
                input.toString(),
                "--job",
                name,
                "--destination",
                name,
                "--db",
                TestDatabase.jdbcUrl(),
                "--out",
                dir.resolve("out").toString(),
                "--max-load",
                "1000",
                "--rate",
                Integer.toString(RATE),
                "--concurrency",
                "2",
                "--processes",
                "2",
                "--no-progress"));
    args.addAll(List.of(cursorOptions));

    Process original = originalFleet();
    try {
      CompletableFuture<Cli.Result> run =
          CompletableFuture.supplyAsync(() -> Cli.run(args.toArray(String[]::new)));
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
      while (runArrivals().isEmpty() && System.nanoTime() < deadline && !run.isDone()) {
        Thread.sleep(10);
      }
      assertThat(runArrivals()).as("the run has started fetching").isNotEmpty();
      try (OutputStream go = original.getOutputStream()) {
        go.write("go\n".getBytes(StandardCharsets.UTF_8));
      }
      assertThat(original.waitFor(60, TimeUnit.SECONDS)).as("the original fleet finished").isTrue();
      assertThat(original.exitValue()).isEqualTo(0);
      Cli.Result result = run.get(90, TimeUnit.SECONDS);
      assertThat(result.code()).as(result.err()).isEqualTo(0);
      assertThat(result.number("done")).isEqualTo(ITEMS);
    } finally {
      original.destroyForcibly();
    }

    List<TestDestination.Arrival> arrivals =
        destination.arrivals().stream().filter(a -> !a.path().equals("/warm-up")).toList();
    List<Long> originals =
        arrivals.stream()
            .filter(a -> a.path().startsWith("/original/"))
            .map(TestDestination.Arrival::nanos)
            .toList();
    List<Long> run = runArrivals().stream().map(TestDestination.Arrival::nanos).toList();
    assertThat(originals).hasSize(ORIGINAL_REQUESTS);
    assertThat(run).hasSize(ITEMS);
    long first = run.stream().min(Long::compare).orElseThrow();
    long last = run.stream().max(Long::compare).orElseThrow();
    long during = originals.stream().filter(t -> t >= first && t <= last).count();
    System.out.println(
        "original fleet's requests while the run was sending: "
            + during
            + " of "
            + originals.size());
    assertThat(during)
        .as("original requests between the run's first and last arrivals")
        .isGreaterThanOrEqualTo(OVERLAP);
    return arrivals;
  }

  private List<TestDestination.Arrival> runArrivals() {
    return destination.arrivals().stream().filter(a -> a.path().startsWith("/run/")).toList();
  }

  /** The original fleet's JVM, warmed up and waiting for its start line. */
  private Process originalFleet() throws Exception {
    Process p =
        new ProcessBuilder(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-XX:+UseSerialGC",
                "-cp",
                System.getProperty("java.class.path"),
                OriginalDesignClient.class.getName(),
                TestDatabase.jdbcUrl(),
                CACHE,
                "harvest-rate-cursor:" + name,
                Double.toString(1.0 / RATE),
                Integer.toString(ORIGINAL_REQUESTS),
                destination.url(""))
            .redirectError(dir.resolve("original.err").toFile())
            .start();
    BufferedReader out =
        new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
    assertThat(out.readLine())
        .as("the original fleet is ready; stderr: %s", dir.resolve("original.err"))
        .isEqualTo("ready");
    return p;
  }

  @Test
  void badCursorOptionsAreRefusedNamingTheValue() throws Exception {
    Path input = dir.resolve(name + ".txt");
    Files.write(input, destination.items(1));
    String db = TestDatabase.jdbcUrl();
    String[][] cases = {
      {"--cursor-table", "x; drop table y"},
      {"--cursor-table", "a.b.c"},
      {"--cursor-layout", "redis"},
      {"--cursor-key-prefix", "harvest:"},
      {"--cursor-layout", "django-cache", "--cursor-key-prefix", "two words"},
      {"--cursor-layout", "django-cache", "--cursor-table", "1table"},
    };
    for (String[] bad : cases) {
      String value = bad[bad.length - 1];
      List<String> fetch =
          new ArrayList<>(List.of("fetch", input.toString(), "--job", name, "--db", db));
      fetch.addAll(List.of(bad));
      Cli.Result r = Cli.run(fetch.toArray(String[]::new));
      assertThat(r.code()).as("fetch %s: %s", String.join(" ", bad), r.err()).isEqualTo(2);
      assertThat(r.err())
          .as("fetch %s", String.join(" ", bad))
          .contains("--cursor-")
          .contains("\"" + value + "\"");

      List<String> status = new ArrayList<>(List.of("status", "--db", db));
      status.addAll(List.of(bad));
      Cli.Result s = Cli.run(status.toArray(String[]::new));
      assertThat(s.code()).as("status %s: %s", String.join(" ", bad), s.err()).isEqualTo(2);
      assertThat(s.err()).contains("\"" + value + "\"");
    }
    assertThat(destination.arrivals()).as("nothing was fetched").isEmpty();
  }
}
