package dev.pacer.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.postgres.RestartablePostgres;
import dev.pacer.postgres.RetryGrid;
import dev.pacer.postgres.StreamingStandby;
import dev.pacer.testing.Timeline;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalTime;
import java.time.ZoneId;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A failover under a real conveyor run (three worker JVMs x six threads, a 10/s fleet ceiling): the
 * primary stopped the hard way mid-run and its streaming standby promoted a little later, the fleet
 * given both in one URL with {@code targetServerType=primary}, as a team with a standby gives it.
 * The cursor table is unlogged, so the promoted server has no cursor rows; the items, trips and
 * lockouts are logged and were streamed to it.
 */
class FailoverTest {

  private static final int RATE = 10;
  private static final int ITEMS = 250;
  private static final long SECOND = 1_000_000_000L;

  /** From the primary's death to the promotion: the fleet meets a standby that is not one yet. */
  private static final long PROMOTION_DELAY_MILLIS = 1500;

  @TempDir Path dir;
  private RestartablePostgres primary;
  private StreamingStandby standby;
  private TestDestination destination;
  private TestDestination lockedOut;
  private Process run;

  @BeforeEach
  void start() throws Exception {
    long started = System.nanoTime();
    primary = new RestartablePostgres(StreamingStandby.PRIMARY_SETTINGS);
    long primaryUp = System.nanoTime();
    standby = StreamingStandby.of(primary);
    System.out.printf(
        Locale.ROOT,
        "failover: primary started in %.1f s, its standby copied and" + " started in %.1f s%n",
        (primaryUp - started) / 1e9,
        (System.nanoTime() - primaryUp) / 1e9);
    destination = new TestDestination();
    lockedOut = new TestDestination().answering((path, attempt) -> 403);
  }

  @AfterEach
  void stop() {
    if (run != null) {
      run.destroyForcibly();
    }
    destination.close();
    lockedOut.close();
    if (standby != null) {
      standby.close();
    }
    primary.close();
  }

  private String url() {
    return "jdbc:postgresql://127.0.0.1:"
        + primary.port()
        + ",127.0.0.1:"
        + standby.port()
        + "/postgres?user=postgres&targetServerType=primary";
  }

  /** A run of one worker in this JVM for the destination that answers every request 403. */
  private Cli.Result fetchLockedOut(String job) throws Exception {
    Path input = Files.write(dir.resolve(job + ".txt"), lockedOut.items(3));
    return Cli.run(
        "fetch",
        input.toString(),
        "--job",
        job,
        "--destination",
        "failover-locked",
        "--db",
        url(),
        "--rate",
        "50",
        "--concurrency",
        "1",
        "--out",
        dir.resolve("out").toString(),
        "--max-load",
        "1000",
        "--no-progress");
  }

  @Test
  void aStandbyPromotedMidRunTakesOverTheFleet() throws Exception {
    String job = "failover";
    Path input = Files.write(dir.resolve(job + ".txt"), destination.items(ITEMS));
    long wallOffset = System.currentTimeMillis() * 1_000_000L - System.nanoTime();
    long spawned = System.nanoTime();
    run =
        Cli.spawn(
            Map.of(),
            dir.resolve(job + ".out"),
            dir.resolve(job + ".err"),
            "fetch",
            input.toString(),
            "--job",
            job,
            "--destination",
            job,
            "--db",
            url(),
            "--processes",
            "3",
            "--threads",
            "6",
            "--concurrency",
            "6",
            "--rate",
            String.valueOf(RATE),
            "--out",
            dir.resolve("out").toString(),
            "--max-load",
            "1000",
            "--no-progress",
            // An item whose last change the standby never received waits for its lease to lapse.
            "--lease-seconds",
            "10");
    // While the fleet's JVMs start: another destination locked out, and the lockout streamed.
    Cli.Result tripped = fetchLockedOut("failover-locked");
    assertThat(tripped.code()).as(tripped.err()).isEqualTo(3);
    assertThat(tripped.text("lockedOut")).isEqualTo("true");
    standby.awaitReplayed(Duration.ofSeconds(10));
    destination.awaitArrivals(1);
    System.out.printf(
        Locale.ROOT,
        "failover: first arrival %.1f s after the spawn%n",
        (System.nanoTime() - spawned) / 1e9);
    destination.awaitArrivals(2 * RATE);
    long killed = System.nanoTime();
    primary.stopImmediately();
    Thread.sleep(PROMOTION_DELAY_MILLIS);
    standby.promote();
    long promoted = System.nanoTime();

    assertThat(run.waitFor(90, TimeUnit.SECONDS)).as("the run finished").isTrue();
    String err = Files.readString(dir.resolve(job + ".err"));
    err.lines()
        .filter(l -> l.contains("WARN") || l.contains("ERROR") || l.contains("answers again"))
        .forEach(l -> System.out.println(job + " | " + l));
    assertThat(run.exitValue()).as(err).isZero();
    String[] out = Files.readString(dir.resolve(job + ".out")).strip().split("\n");
    assertThat(out[out.length - 1]).contains("\"done\":" + ITEMS, "\"pending\":0", "\"failed\":0");

    List<TestDestination.Arrival> arrivals = destination.arrivals();
    Timeline fleet = TestDestination.timeline(arrivals);
    Map<String, Long> fetches =
        arrivals.stream()
            .collect(
                Collectors.groupingBy(
                    TestDestination.Arrival::path, TreeMap::new, Collectors.counting()));
    Map<String, List<Long>> twice = new TreeMap<>();
    fetches.forEach(
        (path, n) -> {
          if (n > 1) {
            twice.put(
                path,
                arrivals.stream()
                    .filter(a -> a.path().equals(path))
                    .map(a -> a.nanos() - killed)
                    .sorted()
                    .toList());
          }
        });
    String fetchedTwice =
        twice.entrySet().stream()
            .map(
                e ->
                    e.getKey()
                        + " "
                        + e.getValue().stream()
                            .map(t -> String.format(Locale.ROOT, "%+.3f", t / 1e9))
                            .collect(Collectors.joining(", ", "[", "] s")))
            .collect(Collectors.joining("; "));
    long back = firstReturn(err, promoted + wallOffset) - wallOffset;
    long firstAfterBack =
        arrivals.stream()
            .mapToLong(TestDestination.Arrival::nanos)
            .filter(t -> t >= back)
            .min()
            .orElseThrow();
    long handOverEnds = RetryGrid.handOverEnds(promoted + wallOffset) - wallOffset;
    int recovered =
        TestDestination.count(arrivals, handOverEnds + SECOND, handOverEnds + 4 * SECOND);
    System.out.printf(
        Locale.ROOT,
        "failover: %s; primary killed %.1f s after the first arrival,"
            + " standby promoted %.2f s later; %d requests between the kill and the promotion;"
            + " PostgreSQL answered again %.2f s after the promotion, the first request %.2f s"
            + " after that; longest gap from the kill on %.2f s; %d in [hand-over end + 1 s,"
            + " + 4 s]; %d fetched more than once (s from the kill): %s%n",
        fleet,
        (killed - arrivals.get(0).nanos()) / 1e9,
        (promoted - killed) / 1e9,
        TestDestination.count(arrivals, killed, promoted),
        (back - promoted) / 1e9,
        (firstAfterBack - back) / 1e9,
        TestDestination.longestGap(arrivals, killed) / 1e9,
        recovered,
        twice.size(),
        fetchedTwice);
    System.out.println(
        "failover: requests per second from the kill on: "
            + TestDestination.perSecond(arrivals, killed));
    long fullRate = handOverEnds + SECOND;
    System.out.printf(
        Locale.ROOT,
        "failover: turns missed against the %d/s grid: %.1f in the 2 s"
            + " before the kill, %.1f from the kill to the return (%.2f s), %.1f from the return"
            + " to 1 s after the hand-over's end (%.2f s), %.1f in the 3 s after that; busiest 1-s"
            + " window from the return on %d%n",
        RATE,
        missedTurns(arrivals, killed - 2 * SECOND, killed),
        missedTurns(arrivals, killed, back),
        (back - killed) / 1e9,
        missedTurns(arrivals, back, fullRate),
        (fullRate - back) / 1e9,
        missedTurns(arrivals, fullRate, fullRate + 3 * SECOND),
        new Timeline(
                arrivals.stream()
                    .map(TestDestination.Arrival::nanos)
                    .filter(t -> t >= back)
                    .toList())
            .peakOneSecondWindow());

    TestDestination.assertHeldCeiling(arrivals, RATE);
    assertThat(fetches).as("no item lost").hasSize(ITEMS);
    assertThat(doneRows(job))
        .as("each item recorded done exactly once, on the new primary")
        .isEqualTo(ITEMS);
    // The worker's store commits asynchronously, and WAL is streamed once flushed (within three
    // wal_writer_delay, 600 ms): the claims and records of the last moments before the kill are
    // lost with the primary, and their items fetched again; nothing older.
    assertThat(twice.values())
        .as("items fetched more than once: %s", fetchedTwice)
        .allSatisfy(times -> assertThat(times.get(0)).isGreaterThanOrEqualTo(-SECOND));
    assertThat(arrivals.stream().mapToLong(TestDestination.Arrival::nanos).max().orElseThrow())
        .as("the run outlasts the 3 s judged after the hand-over (else it needs more items)")
        .isGreaterThan(handOverEnds + 4 * SECOND);
    assertThat(recovered / 3.0)
        .as("full rate after the hand-over")
        .isGreaterThanOrEqualTo(0.9 * RATE);
    assertThat(cursorRows(job)).as("the cursor row, re-inserted on the new primary").isEqualTo(1);

    Cli.Result refused = fetchLockedOut("failover-locked-after");
    assertThat(refused.code()).as(refused.err()).isEqualTo(3);
    assertThat(refused.err()).contains("destination failover-locked is locked out");
    assertThat(lockedOut.arrivals())
        .as("the locked-out destination, after the failover too")
        .hasSize(1);
  }

  /** The turns of the {@link #RATE} grid in {@code [from, to)} less the arrivals there. */
  private static double missedTurns(List<TestDestination.Arrival> arrivals, long from, long to) {
    return (to - from) * RATE / 1e9 - TestDestination.count(arrivals, from, to);
  }

  /**
   * The wall-clock instant (ns since the epoch) of the first "PostgreSQL answers again" a process
   * of the run logged, on the day of {@code epochNanos}; the log's times are local times of day.
   */
  private static long firstReturn(String err, long epochNanos) {
    ZoneId zone = ZoneId.systemDefault();
    LocalDate day = LocalDate.ofInstant(Instant.ofEpochSecond(0, epochNanos), zone);
    return err.lines()
        .filter(l -> l.contains("PostgreSQL answers again"))
        .map(l -> LocalTime.parse(l.substring(0, 12)).atDate(day).atZone(zone).toInstant())
        .mapToLong(i -> i.getEpochSecond() * SECOND + i.getNano())
        .min()
        .orElseThrow(() -> new AssertionError("no process said PostgreSQL answers again"));
  }

  private long doneRows(String job) throws SQLException {
    return count(
        "SELECT count(*) FROM pacer_item WHERE job = ? AND state = 'done'"
            + " AND finished_at IS NOT NULL",
        job);
  }

  private long cursorRows(String name) throws SQLException {
    return count("SELECT count(*) FROM pacer_cursor WHERE name = ?", name);
  }

  private long count(String sql, String parameter) throws SQLException {
    try (Connection c = DriverManager.getConnection(standby.jdbcUrl());
        PreparedStatement s = c.prepareStatement(sql)) {
      s.setString(1, parameter);
      try (ResultSet r = s.executeQuery()) {
        r.next();
        return r.getLong(1);
      }
    }
  }
}
