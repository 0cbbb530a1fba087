package dev.pacer.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeFalse;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.pacer.cli.db.UrlKeys;
import dev.pacer.cli.run.DispatchSlot;
import dev.pacer.postgres.PostgresFleetSlots;
import dev.pacer.postgres.TestDatabase;
import dev.pacer.testing.Timeline;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code pacer fetch}, pooled (one process, a thread pool), end to end: real PostgreSQL, a real
 * local HTTP destination that counts arrivals and answers 429/403/500 on demand.
 */
class FetchTest {

  private static final AtomicInteger UNIQUE = new AtomicInteger();
  private static final int SHARED_RATE = 20;
  private static final int ITEMS = 80;

  @TempDir Path dir;
  private TestDestination destination;
  private String name;

  @BeforeEach
  void start() throws IOException {
    destination = new TestDestination();
    name = "fetch-test-" + ProcessHandle.current().pid() + "-" + UNIQUE.incrementAndGet();
  }

  @AfterEach
  void stop() {
    destination.close();
  }

  private Path input(List<String> lines) throws IOException {
    Path file = dir.resolve(name + ".txt");
    Files.write(file, lines);
    return file;
  }

  private Cli.Result fetch(Path input, String... extra) {
    List<String> args = new ArrayList<>(List.of("--max-load", "1000"));
    args.addAll(List.of(extra));
    return fetchInDefaultEnvelope(input, args.toArray(String[]::new));
  }

  /** {@code pacer fetch} with the envelope's defaults, as a user runs it. */
  private Cli.Result fetchInDefaultEnvelope(Path input, String... extra) {
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
                dir.resolve("out").toString()));
    args.addAll(List.of(extra));
    return Cli.run(args.toArray(String[]::new));
  }

  @Test
  void aPooledRunHoldsTheCeilingStoresEveryBodyAndARerunFetchesNothing() throws Exception {
    Path input = input(destination.items(30));
    Cli.Result run = fetch(input, "--rate", "20", "--concurrency", "4");

    assertThat(run.code()).as(run.err()).isEqualTo(0);
    assertThat(run.number("done")).isEqualTo(30);
    assertThat(run.text("haltedBar")).isEqualTo("null");
    List<TestDestination.Arrival> arrivals = destination.arrivals();
    assertThat(arrivals).hasSize(30);
    TestDestination.assertHeldCeiling(
        arrivals, 20, RequestLogTrace.of(TestDatabase.jdbcUrl(), name, arrivals, 20));
    for (String url : destination.items(30)) {
      String key = UrlKeys.key(url);
      Path body = dir.resolve("out").resolve(name).resolve(key.substring(0, 2)).resolve(key);
      assertThat(body).hasContent("body of " + url.substring(url.indexOf("/item/")));
    }

    Cli.Result again = fetch(input, "--rate", "20", "--concurrency", "4");
    assertThat(again.code()).as(again.err()).isEqualTo(0);
    assertThat(again.number("done")).isEqualTo(30);
    assertThat(again.err()).contains("0 new");
    assertThat(destination.arrivals()).hasSize(30);
  }

  @Test
  void a429DefersTheItemAndSlowsTheRunButNeverHaltsIt() throws Exception {
    destination.answering(
        (path, attempt) ->
            (path.equals("/item/3") || path.equals("/item/4")) && attempt == 1 ? 429 : 200);
    Cli.Result run = fetch(input(destination.items(20)), "--rate", "20", "--concurrency", "1");

    assertThat(run.code()).as(run.err()).isEqualTo(0);
    assertThat(run.number("done")).isEqualTo(20);
    assertThat(run.number("deferred")).isZero();
    List<TestDestination.Arrival> arrivals = destination.arrivals();
    assertThat(arrivals).hasSize(22);
    assertThat(destination.count(429)).isEqualTo(2);
    // The summary shows what the limiter did: a shared turn per request, both 429s heard.
    assertThat(run.number("turnsShared")).isEqualTo(22);
    assertThat(run.number("turnsDegraded")).isZero();
    assertThat(run.number("throttled")).isEqualTo(2);
    assertThat(run.number("backoffMultiplier")).isEqualTo(4);
    assertThat(run.number("lockouts")).isZero();
    assertThat(run.text("cursorLatched")).isEqualTo("false");
    assertThat(run.err())
        .contains(
            "pacer: limiter during this run: 22 turn(s): 22 shared,"
                + " 0 degraded (paced locally), 0 refused",
            "2 throttled, 0 lockout(s)",
            "backoff x4");
    // Two 429s back the interval off x4 (20/s -> 5/s): what follows the second one is slower than
    // half the ceiling. Without backoff reaching the shared cursor it would run at ~20/s.
    int second429 = -1;
    for (int i = 0; i < arrivals.size(); i++) {
      if (arrivals.get(i).status() == 429) {
        second429 = i;
      }
    }
    Timeline after = TestDestination.timeline(arrivals.subList(second429 + 1, arrivals.size()));
    assertThat(after.size()).isGreaterThanOrEqualTo(10);
    assertThat(after.aggregateRatePerSecond()).as(after.toString()).isLessThanOrEqualTo(10.0);
  }

  @Test
  void halfOfAllRequestsAnswered429DoesNotHaltTheRun() throws Exception {
    destination.answering((path, attempt) -> attempt == 1 ? 429 : 200);
    Cli.Result run = fetch(input(destination.items(40)), "--rate", "400", "--concurrency", "4");

    assertThat(run.code()).as(run.err()).isEqualTo(0);
    assertThat(run.text("haltedBar")).isEqualTo("null");
    assertThat(run.number("done")).isEqualTo(40);
    assertThat(destination.count(429)).isEqualTo(40);
    assertThat(destination.count(200)).isEqualTo(40);
  }

  @Test
  void onePercentOrdinaryFailuresOverFiveHundredItemsHaltsTheRun() throws Exception {
    // Every 100th URL answers 500: the 5th failure comes at item 500, 1% of the window.
    destination.answering((path, attempt) -> path.endsWith("00") ? 500 : 200);
    Cli.Result run =
        fetch(
            input(destination.items(700)),
            "--rate",
            "1000",
            "--concurrency",
            "8",
            "--max-attempts",
            "1");

    assertThat(run.code()).as(run.err()).isEqualTo(3);
    assertThat(run.text("haltedBar")).isEqualTo("FETCH_FAILURES");
    assertThat(run.number("failed")).isEqualTo(5);
    assertThat(run.number("done")).isBetween(480L, 520L);
    assertThat(run.number("pending")).isGreaterThanOrEqualTo(170);
  }

  /**
   * A 404 is the item's answer, not a failure of the destination: dead links fail their items
   * (after --max-attempts, 3) and never count against the failure bar. Counted, the two items' six
   * 404s would cross it (5).
   */
  @Test
  void twoDeadLinksNeverHaltTheRun() throws Exception {
    destination.answering(
        (path, attempt) -> path.equals("/item/3") || path.equals("/item/7") ? 404 : 200);
    Cli.Result run = fetch(input(destination.items(20)), "--rate", "200", "--concurrency", "2");

    assertThat(run.code()).as(run.err()).isEqualTo(0);
    assertThat(run.text("haltedBar")).isEqualTo("null");
    assertThat(run.number("done")).isEqualTo(18);
    assertThat(run.number("failed")).isEqualTo(2);
    assertThat(destination.count(404)).isEqualTo(6);
  }

  /**
   * An item counts once against the failure bar, at its first attempt, however many it takes: two
   * items that answer 500 to each of their three attempts are two failures, not six.
   */
  @Test
  void anItemCountsOnceAgainstTheFailureBarHoweverManyAttemptsItTakes() throws Exception {
    destination.answering(
        (path, attempt) -> path.equals("/item/3") || path.equals("/item/7") ? 500 : 200);
    Cli.Result run = fetch(input(destination.items(20)), "--rate", "200", "--concurrency", "2");

    assertThat(run.code()).as(run.err()).isEqualTo(0);
    assertThat(run.text("haltedBar")).isEqualTo("null");
    assertThat(run.number("done")).isEqualTo(18);
    assertThat(run.number("failed")).isEqualTo(2);
    assertThat(destination.count(500)).isEqualTo(6);
  }

  @Test
  void a403HaltsWithARecordedTripAndTheNextRunIsRefusedUntilItIsAcknowledged() throws Exception {
    destination.answering((path, attempt) -> path.equals("/item/5") ? 403 : 200);
    Path input = input(destination.items(20));
    Cli.Result run = fetch(input, "--rate", "50", "--concurrency", "1");

    assertThat(run.code()).as(run.err()).isEqualTo(3);
    assertThat(run.text("haltedBar")).isEqualTo("DESTINATION_LOCKOUT");
    assertThat(run.text("lockedOut")).isEqualTo("true");
    assertThat(run.number("done")).isEqualTo(4);
    assertThat(run.number("pending")).isEqualTo(16);
    int seen = destination.arrivals().size();
    assertThat(seen).isEqualTo(5);
    assertThat(run.number("lockouts")).isEqualTo(1);
    assertThat(run.number("turnsShared")).isEqualTo(5);

    Cli.Result trips = Cli.run("trips", "--job", name, "--db", TestDatabase.jdbcUrl());
    assertThat(trips.out()).contains("DESTINATION_LOCKOUT", "HTTP 403", "OPEN");
    long tripId = Long.parseLong(trips.out().substring(1, trips.out().indexOf(' ')));

    Cli.Result refused = fetch(input, "--rate", "50", "--concurrency", "1");
    assertThat(refused.code()).isEqualTo(3);
    assertThat(refused.err()).contains("trip #" + tripId, "pacer trips ack " + tripId);
    assertThat(destination.arrivals()).hasSize(seen);

    Cli.Result noNote =
        Cli.run(
            "trips", "ack", Long.toString(tripId), "--note", " ", "--db", TestDatabase.jdbcUrl());
    assertThat(noNote.code()).isEqualTo(2);
    Cli.Result ack =
        Cli.run(
            "trips",
            "ack",
            Long.toString(tripId),
            "--note",
            "destination owner lifted the block",
            "--db",
            TestDatabase.jdbcUrl());
    assertThat(ack.code()).as(ack.err()).isEqualTo(0);

    destination.answering((path, attempt) -> 200);
    Cli.Result resumed = fetch(input, "--rate", "50", "--concurrency", "1");
    assertThat(resumed.code()).as(resumed.err()).isEqualTo(0);
    assertThat(resumed.number("done")).isEqualTo(20);
    assertThat(destination.arrivals()).hasSize(seen + 16);
  }

  @Test
  void twoInvocationsOnOneJobShareItsItemsAndFetchEachOnce() throws Exception {
    List<TestDestination.Arrival> arrivals = twoInvocations("FLEET");

    TestDestination.assertHeldCeiling(arrivals, SHARED_RATE);

    Cli.Result status = Cli.run("status", "--job", name, "--db", TestDatabase.jdbcUrl());
    assertThat(status.code()).as(status.err()).isEqualTo(0);
    assertThat(status.out())
        .contains(name, ITEMS + "/" + ITEMS + " done", "failed 0", "Open trips");
    java.util.regex.Pattern cursorLine =
        java.util.regex.Pattern.compile("\\n  " + name + " +next turn");
    assertThat(status.out()).containsPattern(cursorLine);
    Cli.Result cleared = Cli.run("cursor", "clear", name, "--db", TestDatabase.jdbcUrl());
    assertThat(cleared.code()).as(cleared.err()).isEqualTo(0);
    assertThat(Cli.run("status", "--db", TestDatabase.jdbcUrl()).out())
        .doesNotContainPattern(cursorLine);
  }

  /**
   * The same two invocations under the default envelope (no {@code --max-load}: a load average of 4
   * x the cores halts a run), as a user runs them, which every other test widens. On a host loaded
   * past that bar the default halts the run, as it should, and the test cannot judge it: it says so
   * as a skip.
   */
  @Test
  void twoInvocationsInTheDefaultEnvelopeShareItsItemsAndTheCeiling() throws Exception {
    double bar = 4.0 * Runtime.getRuntime().availableProcessors();
    assumeTrue(
        hostLoad() <= bar,
        String.format(
            Locale.ROOT,
            "the host's load average, %.2f, is" + " above the default bar of %.0f before the run",
            hostLoad(),
            bar));
    List<TestDestination.Arrival> arrivals = twoInvocations("FLEET", true);
    TestDestination.assertHeldCeiling(arrivals, SHARED_RATE);
  }

  private static double hostLoad() {
    return java.lang.management.ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage();
  }

  /**
   * The same two invocations, each pacing alone at the full rate: together they break the ceiling
   * that {@link #twoInvocationsOnOneJobShareItsItemsAndFetchEachOnce} asserts.
   */
  @Test
  void twoInvocationsPacingAloneBreakTheCeilingTheyShouldShare() throws Exception {
    TestDestination.assertBrokeCeiling(twoInvocations("PER_PROCESS"), SHARED_RATE);
  }

  /**
   * Two invocations of one job, 2 threads each, sharing 80 items at 20/s: 4 s, so that each sliding
   * second of the run is bounded, not only the run as a whole.
   */
  private List<TestDestination.Arrival> twoInvocations(String pacing) throws Exception {
    return twoInvocations(pacing, false);
  }

  private List<TestDestination.Arrival> twoInvocations(String pacing, boolean defaultEnvelope)
      throws Exception {
    Path input = input(destination.items(ITEMS));
    String[] options = {
      "--rate", Integer.toString(SHARED_RATE), "--concurrency", "2", "--pacing", pacing
    };
    java.util.function.Supplier<Cli.Result> invocation =
        defaultEnvelope
            ? () -> fetchInDefaultEnvelope(input, options)
            : () -> fetch(input, options);
    java.util.concurrent.CompletableFuture<Cli.Result> other =
        java.util.concurrent.CompletableFuture.supplyAsync(invocation);
    Cli.Result mine = invocation.get();
    Cli.Result theirs = other.get(60, java.util.concurrent.TimeUnit.SECONDS);

    if (defaultEnvelope) {
      for (Cli.Result r : List.of(mine, theirs)) {
        assumeFalse(
            "HOST_LOAD".equals(r.text("haltedBar"))
                && hostLoad() > 4.0 * Runtime.getRuntime().availableProcessors(),
            "the host's load average crossed the default bar during the run: " + r.err());
      }
    }
    assertThat(mine.code()).as(mine.err()).isEqualTo(0);
    assertThat(theirs.code()).as(theirs.err()).isEqualTo(0);
    assertThat(mine.number("done")).isEqualTo(ITEMS);
    assertThat(theirs.number("done")).isEqualTo(ITEMS);
    List<TestDestination.Arrival> arrivals = destination.arrivals();
    assertThat(arrivals.stream().map(TestDestination.Arrival::path).toList())
        .hasSize(ITEMS)
        .doesNotHaveDuplicates();
    return arrivals;
  }

  @Test
  void aPooledRunHoldsADispatchSlotWhileItFetches() throws Exception {
    Path input = input(destination.items(40));
    java.util.concurrent.CompletableFuture<Cli.Result> run =
        java.util.concurrent.CompletableFuture.supplyAsync(
            () -> fetch(input, "--rate", "10", "--max-dispatches", "1"));
    long deadline = System.nanoTime() + 30_000_000_000L;
    while (destination.arrivals().size() < 3 && System.nanoTime() < deadline) {
      Thread.sleep(50);
    }
    assertThat(destination.arrivals()).as("the run has started fetching").hasSizeGreaterThan(2);
    try (java.sql.Connection c = new dev.pacer.cli.db.Database(TestDatabase.jdbcUrl()).open()) {
      assertThat(PostgresFleetSlots.holdings(c))
          .as("the only dispatch slot is held while a pooled run fetches")
          .contains(new PostgresFleetSlots.Holding(DispatchSlot.key(name), 1, 1));
    }
    Cli.Result result = run.get(60, java.util.concurrent.TimeUnit.SECONDS);
    assertThat(result.code()).as(result.err()).isEqualTo(0);
    assertThat(result.number("done")).isEqualTo(40);
  }

  @Test
  void anItemThrottledMaxThrottlesTimesIsDeferredToTheNextRun() throws Exception {
    destination.answering((path, attempt) -> path.equals("/item/2") && attempt <= 2 ? 503 : 200);
    Path input = input(destination.items(3));
    Cli.Result run = fetch(input, "--rate", "50", "--max-throttles", "2");

    assertThat(run.code()).as(run.err()).isEqualTo(0);
    assertThat(run.number("done")).isEqualTo(2);
    assertThat(run.number("deferred")).isEqualTo(1);
    assertThat(run.number("pending")).isZero();

    Cli.Result next = fetch(input, "--rate", "50", "--max-throttles", "2");
    assertThat(next.code()).as(next.err()).isEqualTo(0);
    assertThat(next.number("done")).isEqualTo(3);
    assertThat(next.number("deferred")).isZero();
  }

  @Test
  void urlsCanComeFromStandardInput() throws Exception {
    java.io.InputStream original = System.in;
    System.setIn(
        new java.io.ByteArrayInputStream(
            String.join("\n", destination.items(3))
                .getBytes(java.nio.charset.StandardCharsets.UTF_8)));
    try {
      Cli.Result run =
          Cli.run(
              "fetch",
              "-",
              "--destination",
              name,
              "--job",
              name,
              "--db",
              TestDatabase.jdbcUrl(),
              "--out",
              dir.resolve("out").toString(),
              "--rate",
              "50",
              "--max-load",
              "1000");
      assertThat(run.code()).as(run.err()).isEqualTo(0);
      assertThat(run.number("done")).isEqualTo(3);
    } finally {
      System.setIn(original);
    }
  }

  @Test
  void badInputLinesAreReportedWithTheirLineNumbersAndSkipped() throws Exception {
    Path input =
        input(
            List.of(
                destination.url("/item/1"),
                "",
                "# a comment",
                "ftp://example.com/file",
                "not a url at all",
                "http://",
                "file:///etc/passwd",
                destination.url("/item/2")));
    Cli.Result run = fetch(input, "--rate", "50");

    assertThat(run.code()).as(run.err()).isEqualTo(0);
    assertThat(run.err())
        .contains("line 4: scheme ftp is not http or https: ftp://example.com/file")
        .contains("line 5: not a URL (Illegal character in path): not a url at all")
        .contains("line 6: not a URL (Expected authority): http://")
        .contains("line 7: scheme file is not http or https");
    assertThat(run.err()).doesNotContain("line 2:", "line 3:", "line 8:");
    assertThat(run.number("done")).isEqualTo(2);
  }

  @Test
  void badArgumentsExitTwoNamingTheValueAndWriteNothing() throws Exception {
    Path input = input(destination.items(3));
    String[][] cases = {
      {"--rate", "0"},
      {"--rate", "-1"},
      {"--rate", "NaN"},
      {"--rate", "Infinity"},
      {"--rate", "1e12"},
      {"--concurrency", "0"},
      {"--threads", "0"},
    };
    for (String[] bad : cases) {
      Cli.Result r = fetch(input, bad);
      assertThat(r.code()).as(String.join(" ", bad) + ": " + r.err()).isEqualTo(2);
      assertThat(r.err()).as(String.join(" ", bad)).contains(bad[0]);
      assertThat(r.out()).isEmpty();
    }
    String[] badNames = {"", "has space", "x".repeat(254), "'; DROP TABLE x; --", "tab\there"};
    for (String bad : badNames) {
      Cli.Result r =
          Cli.run(
              "fetch",
              input.toString(),
              "--job",
              name,
              "--destination",
              bad,
              "--db",
              TestDatabase.jdbcUrl(),
              "--out",
              dir.resolve("out").toString());
      assertThat(r.code()).as(bad + ": " + r.err()).isEqualTo(2);
      assertThat(r.err()).contains("destination name must");
    }
    Cli.Result notJdbc = Cli.run("fetch", input.toString(), "--db", "postgres://h/db");
    assertThat(notJdbc.code()).isEqualTo(2);
    assertThat(notJdbc.err()).contains("--db must be a PostgreSQL JDBC URL", "postgres://h/db");
    Cli.Result missing =
        Cli.run("fetch", dir.resolve("nope.txt").toString(), "--db", TestDatabase.jdbcUrl());
    assertThat(missing.code()).isEqualTo(2);
    assertThat(missing.err()).contains("nope.txt", "does not exist");
    Path empty = Files.writeString(dir.resolve("empty.txt"), "# nothing here\n\n");
    Cli.Result none = Cli.run("fetch", empty.toString(), "--db", TestDatabase.jdbcUrl());
    assertThat(none.code()).isEqualTo(2);
    assertThat(none.err()).contains("holds no usable URL");
    Path binary =
        Files.write(dir.resolve("binary.bin"), new byte[] {(byte) 0xff, 0, 1, 2, (byte) 0xfe});
    Cli.Result bin = Cli.run("fetch", binary.toString(), "--db", TestDatabase.jdbcUrl());
    assertThat(bin.code()).isEqualTo(2);
    assertThat(bin.err()).contains("binary.bin");

    assertThat(jobExists(name)).isFalse();
    assertThat(destination.arrivals()).isEmpty();
  }

  @Test
  void aPasswordInTheDatabaseUrlIsNeverPrinted() throws Exception {
    String secret = "s3cret-" + UNIQUE.incrementAndGet();
    String url = TestDatabase.jdbcUrl() + "&password=" + secret;
    Cli.Result run =
        Cli.run(
            "fetch",
            input(destination.items(2)).toString(),
            "--job",
            name,
            "--destination",
            name,
            "--db",
            url,
            "--out",
            dir.resolve("out").toString(),
            "--rate",
            "50",
            "--max-load",
            "1000");
    Cli.Result status = Cli.run("status", "--db", url);
    Cli.Result unreachable =
        Cli.run(
            "status",
            "--db",
            "jdbc:postgresql://127.0.0.1:1/postgres?user=postgres&password=" + secret);

    Cli.Result notJdbc = Cli.run("status", "--db", "postgresql://user:" + secret + "@h/db");

    assertThat(run.code()).as(run.err()).isEqualTo(0);
    assertThat(status.code()).isEqualTo(0);
    assertThat(unreachable.code()).isEqualTo(2);
    assertThat(notJdbc.code()).isEqualTo(2);
    assertThat(notJdbc.err()).contains("postgresql://user:***@h/db");
    assertThat(unreachable.err()).contains("cannot use the database");
    for (Cli.Result r : List.of(run, status, unreachable, notJdbc)) {
      assertThat(r.out() + r.err()).doesNotContain(secret);
    }
    assertThat(status.out()).contains("password=***");
  }

  private static boolean jobExists(String job) throws SQLException {
    try (Connection c = TestDatabase.connect();
        PreparedStatement s =
            c.prepareStatement(
                "SELECT count(*) FROM information_schema.tables WHERE table_name = 'pacer_job'")) {
      try (ResultSet r = s.executeQuery()) {
        r.next();
        if (r.getLong(1) == 0) {
          return false;
        }
      }
      try (PreparedStatement q =
          c.prepareStatement("SELECT count(*) FROM pacer_job WHERE name = ?")) {
        q.setString(1, job);
        try (ResultSet r = q.executeQuery()) {
          r.next();
          return r.getLong(1) > 0;
        }
      }
    }
  }
}
