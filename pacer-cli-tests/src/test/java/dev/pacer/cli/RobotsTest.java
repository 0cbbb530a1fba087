package dev.pacer.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.cli.db.Database;
import dev.pacer.cli.db.WorkState;
import dev.pacer.postgres.PacerTableSql;
import dev.pacer.postgres.TestDatabase;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code pacer fetch --per-host --robots} with two worker JVMs x 2 threads against six loopback
 * hosts, judged where the requests arrive: each host's robots.txt is asked for once for the whole
 * fleet (twice where it fails and is asked again); no disallowed URL reaches its host; a
 * Crawl-delay spaces its host's requests at the door; a host whose Crawl-delay is above the cap,
 * one that disallows everything to pacer, and one whose robots.txt answers 403 get no item request
 * and are reported; one whose robots.txt fails has its items deferred.
 */
class RobotsTest {

  private static final int RATE = 10;

  /** The Crawl-delay of the host with rules, in seconds: 2/s against the run's 10/s. */
  private static final double DELAY = 0.5;

  private static final int ALLOWED = 8;
  private static final int PRIVATE = 4;

  /**
   * How late the first or last item may reach the host after its turn: the first is a process's
   * first request, which DestinationFetcher measured up to 108 ms late on a loaded machine.
   */
  private static final double ENDS_LATE = 0.11;

  @TempDir Path dir;
  private LoopbackHosts hosts;

  @BeforeEach
  void start() throws Exception {
    hosts = new LoopbackHosts(6);
    try (WorkState state = new WorkState(new Database(TestDatabase.jdbcUrl()))) {
      state.ensureSchema();
    }
    // The hosts' cursor rows are shared by name with every earlier test of this JVM.
    TestDatabase.execute(PacerTableSql.createTable("pacer_cursor"));
    TestDatabase.execute(
        "DELETE FROM pacer_cursor WHERE name LIKE '127.0.0.%';"
            + " DELETE FROM pacer_cursor_lockout WHERE name LIKE '127.0.0.%'");
  }

  @AfterEach
  void stop() {
    hosts.close();
  }

  @Test
  void robotsTxtIsReadOnceForTheFleetAndObeyedAtTheDoor() throws Exception {
    List<String> h = hosts.hosts();
    hosts.servingRobots(
        Map.of(
            h.get(0),
                new LoopbackHosts.Robots(
                    200, "User-agent: *\nDisallow: /private/\nCrawl-delay: " + DELAY + "\n"),
            h.get(1),
                new LoopbackHosts.Robots(
                    200, "User-agent: pacer\nDisallow: /\n\nUser-agent: *\nAllow: /\n"),
            h.get(2), new LoopbackHosts.Robots(200, "User-agent: *\nCrawl-delay: 60\n"),
            h.get(3), new LoopbackHosts.Robots(404, "not here"),
            h.get(4), new LoopbackHosts.Robots(403, "forbidden"),
            h.get(5), new LoopbackHosts.Robots(500, "broken")));
    List<String> urls = new ArrayList<>(hosts.urls(0, ALLOWED));
    hosts.urls(0, PRIVATE).forEach(u -> urls.add(u.replace("/item/", "/private/")));
    for (int i = 1; i < 6; i++) {
      urls.addAll(hosts.urls(i, 3));
    }
    String job = "robots-" + ProcessHandle.current().pid();
    Path input = Files.write(dir.resolve(job + ".txt"), urls);
    long started = System.nanoTime();
    Cli.Result run =
        Cli.run(
            "fetch",
            input.toString(),
            "--job",
            job,
            "--per-host",
            "--robots",
            "--db",
            TestDatabase.jdbcUrl(),
            "--out",
            dir.resolve("out").toString(),
            "--max-load",
            "1000",
            "--no-progress",
            "--processes",
            "2",
            "--threads",
            "2",
            "--rate",
            Integer.toString(RATE),
            "--max-attempts",
            "2");
    double seconds = (System.nanoTime() - started) / 1e9;
    run.err()
        .lines()
        .filter(l -> l.startsWith("pacer:") || l.contains("WARN") || l.contains("ERROR"))
        .forEach(l -> System.out.println(job + " | " + l));
    assertThat(run.code()).as(run.err()).isZero();

    Map<String, List<LoopbackHosts.Arrival>> byHost = hosts.byHost();
    for (int i = 0; i < 5; i++) {
      assertThat(byHost.get(h.get(i)).stream().filter(a -> a.path().equals("/robots.txt")))
          .as("robots.txt requests at %s", h.get(i))
          .hasSize(1);
    }
    assertThat(byHost.get(h.get(5)).stream().filter(a -> a.path().equals("/robots.txt")))
        .as("robots.txt requests at %s, which answers 500 (--max-attempts 2)", h.get(5))
        .hasSize(2);
    assertThat(hosts.arrivals())
        .as("disallowed requests at the door")
        .noneMatch(a -> a.path().startsWith("/private/"));
    for (int i : new int[] {1, 2, 4, 5}) {
      assertThat(byHost.get(h.get(i)))
          .as("item requests at %s", h.get(i))
          .allMatch(a -> a.path().equals("/robots.txt"));
    }
    assertThat(byHost.get(h.get(3)).stream().filter(a -> a.path().startsWith("/item/")))
        .as("items of the host whose robots.txt is 404")
        .hasSize(3);

    List<LoopbackHosts.Arrival> delayed = byHost.get(h.get(0));
    List<LoopbackHosts.Arrival> items =
        delayed.stream().filter(a -> a.path().startsWith("/item/")).toList();
    assertThat(items).hasSize(ALLOWED);
    int busiest = LoopbackHosts.busiestSecond(items);
    double meanGap = (items.get(ALLOWED - 1).nanos() - items.get(0).nanos()) / 1e9 / (ALLOWED - 1);
    double afterRobots = (items.get(0).nanos() - delayed.get(0).nanos()) / 1e9;
    // A process's first request to a host takes two turns (DestinationFetcher: it opens the
    // connection), so each process that fetched the host stretches the span by one interval.
    long processes = items.stream().map(LoopbackHosts.Arrival::worker).distinct().count();
    double expectedGap = DELAY * (ALLOWED - 1 + processes) / (ALLOWED - 1);
    System.out.printf(
        Locale.ROOT,
        "robots: Crawl-delay %.1f s at %d/s: busiest 1-s window %d,"
            + " mean gap %.3f s over %d items from %d process(es) (turns alone: %.3f s), first"
            + " item %.3f s after robots.txt; arrivals at ms %s; run %.1f s%n",
        DELAY,
        RATE,
        busiest,
        meanGap,
        ALLOWED,
        processes,
        expectedGap,
        afterRobots,
        LoopbackHosts.offsets(delayed),
        seconds);
    assertThat(busiest)
        .as("busiest 1-s window at the host with Crawl-delay %s s", DELAY)
        .isLessThanOrEqualTo((int) Math.floor(1 / DELAY) + 1);
    // The claims space the host's turns by the delay exactly, on PostgreSQL's clock; the door
    // sees them through the send jitter of the first and last arrival: never closer than the
    // delay on average, nor slower than the turns the claims gave out.
    assertThat(meanGap)
        .as("mean gap")
        .isBetween(DELAY - ENDS_LATE / (ALLOWED - 1), expectedGap + ENDS_LATE / (ALLOWED - 1));
    assertThat(afterRobots)
        .as("first item after robots.txt")
        .isGreaterThanOrEqualTo(DELAY - TestDestination.SPAN_TOLERANCE_SECONDS);

    assertThat(run.number("done")).isEqualTo(ALLOWED + 3);
    assertThat(run.number("skipped"))
        .as(
            "skipped: private 4, pacer disallowed 3, Crawl-delay"
                + " above the cap 3, robots.txt 403 3")
        .isEqualTo(PRIVATE + 3 + 3 + 3);
    assertThat(run.number("deferred"))
        .as("the items of the host whose robots.txt failed")
        .isEqualTo(3);
    assertThat(run.number("failed")).isZero();
    assertThat(run.err())
        .contains(
            "robots.txt of "
                + h.get(2)
                + ": Crawl-delay 60 s, above --max-crawl-delay 30 s: host skipped; 3 item(s)"
                + " skipped");
    assertThat(run.err()).contains("robots.txt of " + h.get(4) + ": HTTP 403: disallow all");
    assertThat(run.err())
        .contains("robots.txt: read for 5 host(s), unavailable for 1;" + " 13 item(s) skipped");
    try (Connection c = TestDatabase.connect();
        Statement s = c.createStatement();
        ResultSet r =
            s.executeQuery(
                "SELECT rate, interval_us FROM pacer_frontier WHERE job = '"
                    + job
                    + "' AND host = '"
                    + h.get(0)
                    + "'")) {
      assertThat(r.next()).isTrue();
      assertThat(r.getDouble(1)).as("the host's rate, widened to its Crawl-delay").isEqualTo(2.0);
      assertThat(r.getLong(2)).isEqualTo(500_000);
    }
  }
}
