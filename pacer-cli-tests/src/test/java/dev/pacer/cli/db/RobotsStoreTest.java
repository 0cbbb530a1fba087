package dev.pacer.cli.db;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.cli.db.FrontierStore.Claim;
import dev.pacer.cli.db.FrontierStore.HostCeiling;
import dev.pacer.cli.db.RobotsStore.Fetched;
import dev.pacer.cli.db.RobotsStore.Settlement;
import dev.pacer.cli.db.RobotsStore.Work;
import dev.pacer.postgres.TestDatabase;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The robots.txt rows of a per-host job and the gate they hold its hosts behind, on a real
 * PostgreSQL.
 */
class RobotsStoreTest {

  private static final AtomicInteger UNIQUE = new AtomicInteger();
  private WorkState store;
  private String job;

  @BeforeEach
  void open() throws Exception {
    store = new WorkState(new Database(TestDatabase.jdbcUrl()));
    store.ensureSchema();
    job = "robots-" + ProcessHandle.current().pid() + "-" + UNIQUE.incrementAndGet();
  }

  @AfterEach
  void close() {
    store.close();
  }

  /** A claim of a host's robots.txt by {@code worker}, under a lease token of its own. */
  private Optional<Work> claim(String worker, long leaseMillis) throws Exception {
    return store.robots().claim(job, worker, UUID.randomUUID().toString(), leaseMillis);
  }

  private String host(String label) {
    return label + "." + job + ".test";
  }

  /**
   * Two hosts, {@code a} and {@code b}, with /item/1-2 and /private/1 each, gated by robots.txt.
   */
  private void plan() throws Exception {
    List<String> urls = new ArrayList<>();
    Map<String, HostCeiling> ceilings = new LinkedHashMap<>();
    for (String h : List.of(host("a"), host("b"))) {
      ceilings.put(h, new HostCeiling(10, 4));
      urls.addAll(
          List.of(
              "http://" + h + "/item/1", "http://" + h + "/item/2", "http://" + h + "/private/1"));
    }
    store.jobs().enqueue(UUID.randomUUID().toString(), job, "per-host", 10, urls);
    store.frontier().plan(job, ceilings);
    store.robots().plan(job);
  }

  private Settlement privateDisallowed(Duration delay) {
    return new Settlement(
        "1 rule", url -> url.contains("/private/"), "disallowed by robots.txt", delay);
  }

  private Map<String, String> states() throws Exception {
    Map<String, String> out = new LinkedHashMap<>();
    try (Connection c = TestDatabase.connect();
        Statement s = c.createStatement();
        ResultSet r =
            s.executeQuery(
                "SELECT url, state FROM pacer_item WHERE job = '" + job + "' ORDER BY seq")) {
      while (r.next()) {
        out.put(r.getString(1).replaceFirst("^http://([a-z])\\..*\\.test", "$1"), r.getString(2));
      }
    }
    return out;
  }

  /** A timestamp the query answers, in microseconds since the epoch. */
  private static long micros(String query) throws Exception {
    try (Connection c = TestDatabase.connect();
        Statement s = c.createStatement();
        ResultSet r =
            s.executeQuery("SELECT (extract(epoch FROM (" + query + ")) * 1000000)" + "::bigint")) {
      r.next();
      return r.getLong(1);
    }
  }

  @Test
  void everyHostWaitsBehindItsGateAndEachRobotsTxtGoesToOneWorker() throws Exception {
    plan();
    assertThat(store.frontier().claim(job, "w1", "w1/t1", 60_000))
        .as("no host before its robots.txt")
        .isEqualTo(new Claim.Idle(Optional.empty(), false, false));
    assertThat(store.frontier().hasClaimableWork(job, true)).isTrue();
    assertThat(store.frontier().hasClaimableWork(job, false)).as("without --robots").isFalse();

    Work first = claim("w1", 60_000).orElseThrow();
    Work second = claim("w2", 60_000).orElseThrow();
    assertThat(List.of(first.host(), second.host()))
        .containsExactlyInAnyOrder(host("a"), host("b"));
    assertThat(first.stored()).isEmpty();
    assertThat(first.rate()).isEqualTo(10);
    assertThat(first.sampleUrl()).contains("http://" + first.host() + "/item/1");
    assertThat(claim("w3", 60_000)).as("both are being fetched").isEmpty();
    assertThat(store.robots().hasOpenHosts(job)).isTrue();

    Work a = first.host().equals(host("a")) ? first : second;
    long before = micros("SELECT clock_timestamp()");
    int skipped =
        store
            .robots()
            .settle(
                a,
                Optional.of(
                    new Fetched(
                        200,
                        "User-agent: *\nDisallow: /private/\n".getBytes(StandardCharsets.UTF_8))),
                privateDisallowed(Duration.ofSeconds(60)));
    assertThat(skipped).isEqualTo(1);
    assertThat(states())
        .containsEntry("a/private/1", "skipped")
        .containsEntry("a/item/1", "pending")
        .containsEntry("b/private/1", "pending");
    try (Connection c = TestDatabase.connect();
        Statement s = c.createStatement();
        ResultSet r =
            s.executeQuery(
                "SELECT rate, interval_us FROM pacer_frontier WHERE job = '"
                    + job
                    + "' AND host = '"
                    + host("a")
                    + "'")) {
      r.next();
      assertThat(r.getDouble(1)).isCloseTo(1 / 60.0, org.assertj.core.data.Offset.offset(1e-12));
      assertThat(r.getLong(2)).isEqualTo(60_000_000);
    }
    // Host a's gate is open, and its first turn is one Crawl-delay after robots.txt was applied:
    // the claim finds the cursor there (the frontier's copy is healed) and says when to wake.
    assertThat(micros("SELECT next_at FROM pacer_cursor WHERE name = '" + host("a") + "'"))
        .as("host a's cursor, from before robots.txt was applied (µs)")
        .isGreaterThanOrEqualTo(before + 60_000_000);
    assertThat(store.frontier().claim(job, "w1", "w1/t1", 60_000))
        .isEqualTo(new Claim.Refused(host("a")));
    Claim idle = store.frontier().claim(job, "w1", "w1/t1", 60_000);
    assertThat(idle).isInstanceOf(Claim.Idle.class);
    assertThat(((Claim.Idle) idle).wake())
        .hasValueSatisfying(
            w ->
                assertThat(w)
                    .isBetween(Duration.ofSeconds(50), Duration.ofSeconds(60).minusMillis(25)));
  }

  @Test
  void aLapsedLeaseIsTakenAgainAndAFailedHostIsDeferredThenWantedByTheNextRun() throws Exception {
    plan();
    Work lapsed = claim("dead", 0).orElseThrow();
    Work other = claim("w1", 60_000).orElseThrow();
    assertThat(other.host()).isNotEqualTo(lapsed.host());
    Work again = claim("w2", 60_000).orElseThrow();
    assertThat(again.host()).as("taken again once its lease ran out").isEqualTo(lapsed.host());

    store.robots().retry(again, "HTTP 500", Duration.ofMinutes(1));
    assertThat(claim("w3", 60_000)).as("not before its retry time").isEmpty();
    store.robots().giveUp(again, "HTTP 500; 2 attempt(s)", true);
    String h = again.host().substring(0, 1);
    assertThat(states())
        .containsEntry(h + "/item/1", "deferred")
        .containsEntry(h + "/private/1", "deferred");

    store
        .robots()
        .settle(
            other,
            Optional.of(new Fetched(404, new byte[0])),
            new Settlement("HTTP 404: allow all", url -> false, "", Duration.ZERO));
    assertThat(store.robots().hasOpenHosts(job)).isFalse();
    assertThat(store.robots().counts(job)).isEqualTo(new RobotsStore.Counts(1, 1));
    assertThat(store.robots().report(job, 10))
        .extracting(RobotsStore.HostReport::host)
        .containsExactly(again.host());

    // The next run: the unavailable host is wanted afresh, the other's answer is applied again
    // from what was stored, without a fetch.
    store.items().reviveDeferred(job);
    store
        .frontier()
        .plan(job, Map.of(host("a"), new HostCeiling(10, 4), host("b"), new HostCeiling(10, 4)));
    store.robots().plan(job);
    List<Work> next = new ArrayList<>();
    next.add(claim("w1", 60_000).orElseThrow());
    next.add(claim("w1", 60_000).orElseThrow());
    Work stored =
        next.stream().filter(w -> w.host().equals(other.host())).findFirst().orElseThrow();
    Work wanted =
        next.stream().filter(w -> w.host().equals(again.host())).findFirst().orElseThrow();
    assertThat(stored.stored()).hasValueSatisfying(f -> assertThat(f.status()).isEqualTo(404));
    assertThat(wanted.stored()).isEmpty();
    assertThat(wanted.attempts()).isZero();
  }
}
