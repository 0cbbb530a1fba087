package dev.pacer.cli.db;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.cli.db.FrontierStore.Claim;
import dev.pacer.cli.db.FrontierStore.HostCeiling;
import dev.pacer.postgres.PostgresCursor;
import dev.pacer.postgres.TestDatabase;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The per-host claim (one statement that reserves the host's turn and leases its item), on a real
 * PostgreSQL.
 */
class FrontierStoreTest {

  private static final AtomicInteger UNIQUE = new AtomicInteger();
  private WorkState store;
  private String job;

  @BeforeEach
  void open() throws Exception {
    store = new WorkState(new Database(TestDatabase.jdbcUrl()));
    store.ensureSchema();
    job = "frontier-" + ProcessHandle.current().pid() + "-" + UNIQUE.incrementAndGet();
  }

  @AfterEach
  void close() {
    store.close();
  }

  /** A host name of this test only: cursor rows are shared by name across jobs. */
  private String host(String label) {
    return label + "." + job + ".test";
  }

  /**
   * Enqueues {@code items} URLs per host, in the map's order, under one ceiling per host; the
   * hosts' frontier copies are then set a millisecond apart in that order, so that the claim's
   * {@code next_at} order is the map's (every copy starts at {@code '-infinity'}, and which of
   * equal keys an index gives first is its own affair).
   */
  private void plan(Map<String, Integer> items, double rate, int maxInFlight) throws Exception {
    List<String> urls = new ArrayList<>();
    Map<String, HostCeiling> ceilings = new LinkedHashMap<>();
    items.forEach(
        (h, n) -> {
          ceilings.put(h, new HostCeiling(rate, maxInFlight));
          for (int i = 0; i < n; i++) {
            String url = "http://" + h + "/" + i;
            urls.add(url);
          }
        });
    store.jobs().enqueue(UUID.randomUUID().toString(), job, "per-host", rate, urls);
    store.frontier().plan(job, ceilings);
    int order = 0;
    for (String h : items.keySet()) {
      TestDatabase.execute(
          "UPDATE pacer_frontier SET next_at = clock_timestamp() - interval '1 s'"
              + " + "
              + order++
              + " * interval '1 ms' WHERE job = '"
              + job
              + "' AND host = '"
              + h
              + "'");
    }
  }

  private Claim claim() throws Exception {
    return claimAs("w1/t1");
  }

  private Claim claimAs(String claimant) throws Exception {
    return store.frontier().claim(job, "w1", claimant, 60_000);
  }

  private Claim.Claimed claimed() throws Exception {
    Claim c = claim();
    assertThat(c).isInstanceOf(Claim.Claimed.class);
    return (Claim.Claimed) c;
  }

  private static List<String> tokens(int n) {
    List<String> out = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      out.add(ItemStore.newLeaseToken());
    }
    return out;
  }

  /**
   * Leasing ahead spreads over the hosts (every host's first item before any host's second), each
   * host's items in input order, at most seconds x rate (rounded up) of a host's items leased ahead
   * by one worker, counting those it leased before; another worker has room of its own, and a host
   * locked out or passed over gets none leased ahead.
   */
  @Test
  void leasingAheadSpreadsOverTheHostsUpToEachHostsShare() throws Exception {
    Map<String, Integer> items = new LinkedHashMap<>();
    items.put(host("a"), 10);
    items.put(host("b"), 10);
    items.put(host("c"), 1);
    items.put(host("locked"), 3);
    items.put(host("passed"), 3);
    plan(items, 2.0, 10);
    TestDatabase.execute(
        "INSERT INTO pacer_cursor_lockout (name, reason, locked_at) VALUES ('"
            + host("locked")
            + "', '403', now())");
    TestDatabase.execute(
        "UPDATE pacer_frontier SET passed_over = 'x', next_at = 'infinity' WHERE job = '"
            + job
            + "' AND host = '"
            + host("passed")
            + "'");
    List<FrontierStore.Ahead> first =
        store.frontier().leaseAhead(job, "w1", tokens(4), 60_000, 1.5);
    assertThat(first)
        .extracting(a -> a.item().url())
        .containsExactlyInAnyOrder(
            "http://" + host("a") + "/0",
            "http://" + host("b") + "/0",
            "http://" + host("c") + "/0",
            "http://" + host("a") + "/1");
    assertThat(first).extracting(FrontierStore.Ahead::rate).containsOnly(2.0);
    // ceil(1.5 x 2) = 3 of a host's items at once: a has 1 more, b 2 more, c none left.
    List<FrontierStore.Ahead> more =
        store.frontier().leaseAhead(job, "w1", tokens(10), 60_000, 1.5);
    assertThat(more)
        .extracting(a -> a.item().url())
        .containsExactlyInAnyOrder(
            "http://" + host("a") + "/2",
            "http://" + host("b") + "/1",
            "http://" + host("b") + "/2");
    assertThat(store.frontier().leaseAhead(job, "w2", tokens(1), 60_000, 1.5))
        .extracting(a -> a.item().url())
        .containsExactly("http://" + host("a") + "/3");
    assertThat(
            store
                .frontier()
                .barredHosts(job, java.util.Set.of(host("a"), host("locked"), host("passed"))))
        .containsExactlyInAnyOrder(host("locked"), host("passed"));
  }

  /**
   * A worker's claim takes its own buffered item at the host's turn (the lowest in input order),
   * but not one its threads hold under the buffered token, nor another worker's; and items leased
   * ahead do not count against a host's in-flight cap.
   */
  @Test
  void aClaimTakesItsWorkersBufferedItemsAtTheirHostsTurn() throws Exception {
    Map<String, Integer> items = new LinkedHashMap<>();
    items.put(host("a"), 3);
    plan(items, 1000.0, 1);
    List<FrontierStore.Ahead> ahead = store.frontier().leaseAhead(job, "w1", tokens(2), 60_000, 1);
    assertThat(ahead).hasSize(2);
    String heldToken = ahead.get(0).item().token();
    Claim other = store.frontier().claim(job, "w2", "w2/t1", List.of(), true, 60_000);
    assertThat(other).isInstanceOf(Claim.Claimed.class);
    assertThat(((Claim.Claimed) other).item().url()).isEqualTo("http://" + host("a") + "/2");
    Thread.sleep(5);
    // w2's item is in flight (the cap is 1): nothing more until it is done.
    assertThat(store.frontier().claim(job, "w1", "w1/t1", List.of(heldToken), true, 60_000))
        .isNotInstanceOf(Claim.Claimed.class);
    store.items().release(((Claim.Claimed) other).item());
    Thread.sleep(5);
    Claim mine = store.frontier().claim(job, "w1", "w1/t1", List.of(heldToken), true, 60_000);
    assertThat(mine).isInstanceOf(Claim.Claimed.class);
    assertThat(((Claim.Claimed) mine).item().key()).isEqualTo(ahead.get(1).item().key());
    assertThat(((Claim.Claimed) mine).item().token()).isNotEqualTo(ahead.get(1).item().token());
  }

  @Test
  void aSkewedBacklogDoesNotHoldTheOtherHostsBack() throws Exception {
    // The heavy host's 50 items come first in input order: a FIFO claim would take them all first.
    Map<String, Integer> items = new LinkedHashMap<>();
    items.put(host("heavy"), 50);
    for (int i = 0; i < 5; i++) {
      items.put(host("light" + i), 1);
    }
    plan(items, 1.0, 10);
    try (Connection clock = TestDatabase.connect()) {
      List<String> hosts = new ArrayList<>();
      for (int i = 0; i < 6; i++) {
        Claim.Claimed c = claimed();
        assertThat(c.turnIn()).isLessThanOrEqualTo(FrontierStore.HORIZON);
        hosts.add(c.host());
      }
      assertThat(hosts).doesNotHaveDuplicates().containsAll(items.keySet());
      // Every host has had its turn; the next is the first host's, a second after its first, and no
      // item is leased for it.
      TimedIdle idle = timedIdleClaim(clock);
      assertThat(idle.claim().wake())
          .hasValueSatisfying(
              w ->
                  assertThat(w)
                      .isLessThanOrEqualTo(
                          Duration.ofSeconds(1).minus(FrontierStore.HORIZON.dividedBy(2))));
      idle.assertWakesHalfTheHorizonBefore(cursorMicros(clock, hosts.get(0)));
    }
    assertThat(store.items().counts(job).leased()).isEqualTo(6);
  }

  @Test
  void aHostsTurnsAreSpacedByItsIntervalOnTheDatabaseClock() throws Exception {
    String h = host("spaced");
    plan(Map.of(h, 3), 5.0, 10); // 200 ms apart
    try (Connection clock = TestDatabase.connect()) {
      assertThat(claimed().host()).isEqualTo(h);
      long first = cursorMicros(clock, h);
      TimedIdle idle = timedIdleClaim(clock);
      assertThat(idle.claim().held()).isFalse();
      Duration wake = idle.claim().wake().orElseThrow();
      // Half the horizon before the next turn, within the interval of the first.
      assertThat(wake)
          .isLessThanOrEqualTo(Duration.ofMillis(200).minus(FrontierStore.HORIZON.dividedBy(2)));
      idle.assertWakesHalfTheHorizonBefore(first);
      Thread.sleep(wake.toMillis() + 1);
      Claim.Claimed second = claimed();
      assertThat(second.turnIn()).isLessThanOrEqualTo(FrontierStore.HORIZON);
      // The second turn started at the first's next_at (the claim landed before it) or later,
      // never before.
      assertThat(cursorMicros(clock, h) - first).isBetween(200_000L, 700_000L);
    }
  }

  /**
   * An idle claim, with the database's clock read just before and just after it: the claim reads
   * that clock once, between the two.
   */
  private record TimedIdle(Claim.Idle claim, long beforeMicros, long afterMicros) {

    /**
     * Asserts the claim says to wake half the horizon before {@code turnMicros} (on the database's
     * clock), counted from the claim's own reading of the clock, so from no earlier than {@code
     * beforeMicros} and no later than {@code afterMicros}; a wake already past is at once.
     */
    void assertWakesHalfTheHorizonBefore(long turnMicros) {
      long wakeAt = turnMicros - FrontierStore.HORIZON.toNanos() / 2000;
      assertThat(claim.wake().orElseThrow().toNanos() / 1000)
          .as(
              "wake (us), half the horizon before the turn at %d, claimed between %d and %d",
              turnMicros, beforeMicros, afterMicros)
          .isBetween(Math.max(0, wakeAt - afterMicros), Math.max(0, wakeAt - beforeMicros));
    }
  }

  /**
   * An idle claim timed on {@code clock}, a connection the test opened before its first claim: a
   * connection opened between claims would delay the later one by tens of milliseconds on a busy
   * machine, which a host's interval of 200 ms cannot spare.
   */
  private TimedIdle timedIdleClaim(Connection clock) throws Exception {
    long before = databaseMicros(clock);
    Claim claim = claim();
    long after = databaseMicros(clock);
    assertThat(claim).isInstanceOf(Claim.Idle.class);
    return new TimedIdle((Claim.Idle) claim, before, after);
  }

  private static long databaseMicros(Connection c) throws Exception {
    try (Statement s = c.createStatement();
        ResultSet r =
            s.executeQuery("SELECT (extract(epoch FROM clock_timestamp()) * 1000000)::bigint")) {
      r.next();
      return r.getLong(1);
    }
  }

  /** In whole microseconds: seconds since 1970 as a double keep only about a quarter of one. */
  private static long cursorMicros(Connection c, String host) throws Exception {
    try (Statement s = c.createStatement();
        ResultSet r =
            s.executeQuery(
                "SELECT (extract(epoch FROM next_at) * 1000000)::bigint"
                    + " FROM pacer_cursor WHERE name = '"
                    + host
                    + "'")) {
      r.next();
      return r.getLong(1);
    }
  }

  @Test
  void aPausedHostIsRefusedWithoutConsumingAndTheOthersGoOn() throws Exception {
    String paused = host("paused");
    String other = host("other");
    Map<String, Integer> items = new LinkedHashMap<>();
    items.put(paused, 2);
    items.put(other, 2);
    plan(items, 50.0, 10);
    // What PostgresCursor.pause writes for a Retry-After of 30 s.
    TestDatabase.execute(
        "INSERT INTO pacer_cursor (name, next_at, updated_at, paused_until)"
            + " VALUES ('"
            + paused
            + "', clock_timestamp() + interval '30 s', clock_timestamp(),"
            + " clock_timestamp() + interval '30 s')");
    String before = cursorValue(paused);
    List<String> hosts = new ArrayList<>();
    List<Class<?>> outcomes = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      Claim c = claim();
      outcomes.add(c.getClass());
      if (c instanceof Claim.Claimed got) {
        hosts.add(got.host());
        Thread.sleep(25); // one interval at 50/s
      }
    }
    assertThat(outcomes.get(0))
        .as("the paused host sorts first, is refused, and sorts last after")
        .isEqualTo(Claim.Refused.class);
    assertThat(cursorValue(paused))
        .as("a refused claim leaves the cursor as it was")
        .isEqualTo(before);
    assertThat(hosts).containsOnly(other).hasSizeGreaterThanOrEqualTo(2);
    assertThat(store.items().counts(job).leased()).isEqualTo(2);
  }

  @Test
  void aPauseLongerThanTheResetBoundHoldsTheHostThroughAReservationOnItsRow() throws Exception {
    String paused = host("long-pause");
    String other = host("going-on");
    Map<String, Integer> items = new LinkedHashMap<>();
    items.put(paused, 2);
    items.put(other, 2);
    plan(items, 50.0, 10);
    // A fetcher's cursor beside the claims, with the CLI's bound for so fast a host (2 min): a
    // Retry-After of 10 min (the default cap), then a reservation on the host's row outside any
    // claim, as a redirect hop or the host's robots.txt takes one.
    try (PostgresCursor cursor =
        new Database(TestDatabase.jdbcUrl()).cursor(Duration.ofMinutes(2))) {
      assertThat(cursor.pause(paused, Duration.ofMinutes(10))).as("recorded").isTrue();
      cursor.reserve(paused, Duration.ofMillis(20));
    }
    List<String> hosts = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      if (claim() instanceof Claim.Claimed got) {
        hosts.add(got.host());
        Thread.sleep(25); // one interval at 50/s
      }
    }
    assertThat(hosts)
        .as("no item of the paused host is leased")
        .containsOnly(other)
        .hasSizeGreaterThanOrEqualTo(2);
  }

  @Test
  void aPauseWithoutEndHoldsAHostNoFurtherThanTheLongestADestinationMayAskFor() throws Exception {
    String h = host("endless");
    plan(Map.of(h, 1), 1000.0, 10);
    // Another role's row: no destination can ask for a pause of more than a day.
    TestDatabase.execute(
        "INSERT INTO pacer_cursor (name, next_at, updated_at, paused_until)"
            + " VALUES ('"
            + h
            + "', clock_timestamp() + interval '3 days', clock_timestamp(),"
            + " 'infinity')");
    assertThat(claimed().turnIn())
        .as("3 days ahead: reset to now")
        .isLessThanOrEqualTo(Duration.ofMillis(20));
  }

  @Test
  void aMissingOrImplausibleCursorHeals() throws Exception {
    String h = host("heal");
    plan(Map.of(h, 3), 1000.0, 10);
    TestDatabase.execute("DELETE FROM pacer_cursor WHERE name = '" + h + "'");
    assertThat(claimed().host()).as("missing row: inserted").isEqualTo(h);
    TestDatabase.execute(
        "UPDATE pacer_cursor SET next_at = clock_timestamp() + interval '1 year'"
            + " WHERE name = '"
            + h
            + "'");
    TestDatabase.execute(
        "UPDATE pacer_frontier SET next_at = '-infinity' WHERE job = '" + job + "'");
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    PrintStream originalErr = System.err;
    System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
    Claim.Claimed reset;
    try {
      reset = claimed();
    } finally {
      System.setErr(originalErr);
    }
    assertThat(reset.turnIn())
        .as("a year ahead: reset to now")
        .isLessThanOrEqualTo(Duration.ofMillis(20));
    assertThat(
            err.toString(StandardCharsets.UTF_8)
                .lines()
                .filter(l -> l.contains("WARN") && l.contains("Cursor " + h + " was 3"))
                .filter(l -> l.contains("s ahead of the database clock (bound PT2M)")))
        .as("the reset, told: %s", err)
        .hasSize(1);
  }

  @Test
  void aPlausibleCursorIsNotToldAsReset() throws Exception {
    String h = host("plain");
    plan(Map.of(h, 3), 1000.0, 10);
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    PrintStream originalErr = System.err;
    System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
    try {
      for (int i = 0; i < 3; i++) {
        assertThat(claimed().host()).isEqualTo(h);
      }
    } finally {
      System.setErr(originalErr);
    }
    assertThat(err.toString(StandardCharsets.UTF_8))
        .as("three claims of a host whose cursor is where it should be")
        .doesNotContain("ahead of the database clock");
  }

  @Test
  void aLockedOutHostIsPassedOver() throws Exception {
    String locked = host("locked");
    String other = host("fine");
    Map<String, Integer> items = new LinkedHashMap<>();
    items.put(locked, 2);
    items.put(other, 1);
    plan(items, 100.0, 10);
    TestDatabase.execute(
        "INSERT INTO pacer_cursor_lockout (name, reason, locked_at) VALUES ('"
            + locked
            + "', 'HTTP 403 from test', clock_timestamp())");
    Claim first = claim();
    assertThat(first).isInstanceOf(Claim.LockedOut.class);
    assertThat(((Claim.LockedOut) first).reason()).isEqualTo("HTTP 403 from test");
    Claim.Claimed fine = claimed();
    assertThat(fine.host()).isEqualTo(other);
    assertThat(store.frontier().hasClaimableWork(job, false)).as("its item is in flight").isTrue();
    store.items().markDone(new ItemStore.Done(fine.item(), 200, "/x", 1));
    assertThat(store.frontier().hasClaimableWork(job, false)).isFalse();
    assertThat(store.frontier().lockedOutHosts(job)).containsEntry(locked, 2L);
  }

  @Test
  void aHostAtItsInFlightCapIsHeldUntilAnItemFinishes() throws Exception {
    String h = host("capped");
    plan(Map.of(h, 3), 1000.0, 1);
    Claim.Claimed first = claimed();
    Thread.sleep(2);
    Claim held = claim();
    assertThat(held).isInstanceOf(Claim.Idle.class);
    assertThat(((Claim.Idle) held).held()).isTrue();
    assertThat(((Claim.Idle) held).contended()).as("no claim could have taken it").isFalse();
    assertThat(store.items().markDone(new ItemStore.Done(first.item(), 200, "/x", 1))).isTrue();
    assertThat(claimed().host()).isEqualTo(h);
  }

  @Test
  void anIdleClaimBesideAnEligibleHostAnotherClaimHoldsIsContended() throws Exception {
    String h = host("contended");
    plan(Map.of(h, 2), 1000.0, 4);
    try (Connection other = TestDatabase.connect()) {
      other.setAutoCommit(false);
      try (PreparedStatement lock =
          other.prepareStatement(
              "SELECT 1 FROM pacer_frontier WHERE job = ? AND host = ? FOR UPDATE")) {
        lock.setString(1, job);
        lock.setString(2, h);
        lock.executeQuery().close();
      }
      Claim skipped = claim();
      assertThat(skipped).isEqualTo(new Claim.Idle(java.util.Optional.empty(), true, true));
      other.rollback();
    }
    assertThat(claimed().host()).isEqualTo(h);
  }

  /**
   * Each claimant's idle claim awaits a turn no other claimant awaits, the soonest first, and says
   * to wake half the horizon before it; a claimant that asks again awaits its own turn again; with
   * every coming turn awaited, a claim says to wake one horizon after the soonest turn, when that
   * turn's claimant has taken it. A mark names its turn, so it lapses when the host's turn moves.
   */
  @Test
  void idleClaimsAwaitDifferentTurns() throws Exception {
    String a = host("await-a");
    String b = host("await-b");
    Map<String, Integer> items = new LinkedHashMap<>();
    items.put(a, 2);
    items.put(b, 2);
    plan(items, 1.0, 4);
    long start = System.nanoTime();
    String first = claimed().host();
    String second = claimed().host();
    assertThat(List.of(first, second)).containsExactlyInAnyOrder(a, b);
    assertThat(awaited()).isEmpty();

    Claim.Idle soonest = idleAs("w1/t2");
    assertThat(awaited()).containsExactly(first);
    idleAs("w1/t3");
    assertThat(awaited()).containsExactlyInAnyOrder(first, second);
    long half = FrontierStore.HORIZON.toNanos() / 2;
    // The first turn was taken after start, so its successor is less than 1 s after start.
    long interval = 1_000_000_000L;
    long elapsed = System.nanoTime() - start;
    assertThat(soonest.wake().orElseThrow().toNanos())
        .as("half the horizon before the turn")
        .isBetween(interval - elapsed - half, interval - half);
    Claim.Idle again = idleAs("w1/t2");
    elapsed = System.nanoTime() - start;
    assertThat(again.wake().orElseThrow().toNanos())
        .as("its own turn again, half the horizon before it")
        .isBetween(interval - elapsed - half, interval - half);

    Claim.Idle rest = idleAs("w1/t4");
    elapsed = System.nanoTime() - start;
    assertThat(rest.held()).isFalse();
    assertThat(rest.contended()).isFalse();
    long horizon = FrontierStore.HORIZON.toNanos();
    assertThat(rest.wake().orElseThrow().toNanos())
        .as("a horizon after the soonest turn")
        .isBetween(interval - elapsed + horizon, interval + horizon);
    assertThat(awaited()).containsExactlyInAnyOrder(first, second);

    TestDatabase.execute(
        "UPDATE pacer_frontier SET next_at = next_at + interval '1 second'"
            + " WHERE job = '"
            + job
            + "' AND host = '"
            + first
            + "'");
    assertThat(awaited()).as("the moved turn is awaited by no one").containsExactly(second);
    idleAs("w1/t5");
    assertThat(awaited()).containsExactlyInAnyOrder(first, second);
  }

  /**
   * A turn within the horizon that one claimant awaits is passed over by another claimant's claim
   * until it starts (held, not contended: no claim could take it), and its own claimant takes it.
   */
  @Test
  void anAwaitedTurnIsItsClaimantsUntilItStarts() throws Exception {
    String h = host("awaited");
    plan(Map.of(h, 4), 1.0, 4);
    assertThat(claimed().host()).isEqualTo(h);
    try (Connection setUp = TestDatabase.connect();
        PreparedStatement awaitSoon =
            setUp.prepareStatement(
                "WITH k AS (UPDATE pacer_cursor SET next_at = clock_timestamp()"
                    + " + ?::bigint * interval '1 microsecond' WHERE name = ? RETURNING next_at)"
                    + " UPDATE pacer_frontier f SET next_at = k.next_at, awaited_at = k.next_at,"
                    + " awaited_by = 'w1/t2' FROM k WHERE f.job = ? AND f.host = ?"
                    + " RETURNING (extract(epoch FROM k.next_at) * 1000000)::bigint")) {
      // A turn one horizon ahead, awaited by w1/t2: within the horizon of any claim after this.
      awaitSoon.setLong(1, FrontierStore.HORIZON.toNanos() / 1000);
      awaitSoon.setString(2, h);
      awaitSoon.setString(3, job);
      awaitSoon.setString(4, h);
      // The other claimant must ask before the turn starts. A claim that lands after it takes the
      // turn, as it may, and proves nothing: it is made again, at most 4 times, for a claim
      // descheduled for the horizon on a busy machine.
      for (int attempt = 1; ; attempt++) {
        long turn;
        try (ResultSet r = awaitSoon.executeQuery()) {
          r.next();
          turn = r.getLong(1);
        }
        Claim other = claimAs("w1/t3");
        if (!(other instanceof Claim.Claimed taken)) {
          assertThat(other).isEqualTo(new Claim.Idle(java.util.Optional.empty(), true, false));
          break;
        }
        // The turn taken starts at the later of the claim's now and the awaited turn: at the
        // awaited turn itself only if the claim came before it.
        assertThat(cursorMicros(setUp, h) - 1_000_000)
            .as("start of the awaited turn (at %d) another claimant took", turn)
            .isGreaterThan(turn);
        assertThat(attempt).as("attempts whose claim landed after the turn started").isLessThan(5);
        store.items().release(taken.item());
      }
    }
    assertThat(claimAs("w1/t2")).isInstanceOf(Claim.Claimed.class);
  }

  private Claim.Idle idleAs(String claimant) throws Exception {
    Claim c = claimAs(claimant);
    assertThat(c).isInstanceOf(Claim.Idle.class);
    return (Claim.Idle) c;
  }

  /** The job's hosts whose coming turn an idle claim awaits. */
  private List<String> awaited() throws Exception {
    List<String> hosts = new ArrayList<>();
    try (Connection c = TestDatabase.connect();
        PreparedStatement s =
            c.prepareStatement(
                "SELECT host FROM pacer_frontier" + " WHERE job = ? AND awaited_at = next_at")) {
      s.setString(1, job);
      try (ResultSet r = s.executeQuery()) {
        while (r.next()) {
          hosts.add(r.getString(1));
        }
      }
    }
    return hosts;
  }

  @Test
  void aDrainedHostLeavesTheIndex() throws Exception {
    String h = host("drained");
    plan(Map.of(h, 1), 1000.0, 1);
    Claim.Claimed only = claimed();
    assertThat(store.frontier().retireDrainedHosts(job)).as("its item is still leased").isZero();
    store.items().markDone(new ItemStore.Done(only.item(), 200, "/x", 1));
    assertThat(store.frontier().retireDrainedHosts(job)).isEqualTo(1);
    assertThat(claim()).isEqualTo(new Claim.Idle(java.util.Optional.empty(), false, false));
  }

  /**
   * The claim's plan reads every table through an index: with 400 hosts of 25 items each, 10,000
   * other cursor rows and 1,000 lockouts, analysed, for the plan the server makes with the values
   * and for the generic plan a prepared statement ends up with.
   */
  @Test
  void theClaimsPlanHasNoSequentialScan() throws Exception {
    Map<String, Integer> items = new LinkedHashMap<>();
    for (int i = 0; i < 400; i++) {
      items.put(host("h" + i), 25);
    }
    plan(items, 2.0, 4);
    for (int i = 0; i < 50; i++) {
      claimed();
    }
    // The library's tables as a database that has served 10,000 hosts holds them.
    TestDatabase.execute(
        "INSERT INTO pacer_cursor (name, next_at, updated_at)"
            + " SELECT 'other-' || g || '."
            + job
            + "', now(), now() FROM generate_series(1, 10000) g");
    TestDatabase.execute(
        "INSERT INTO pacer_cursor_lockout (name, reason, locked_at)"
            + " SELECT 'other-' || g || '."
            + job
            + "', 'x', now() FROM generate_series(1, 1000) g");
    TestDatabase.execute(
        "ANALYZE pacer_item; ANALYZE pacer_frontier; ANALYZE pacer_cursor;"
            + " ANALYZE pacer_cursor_lockout");
    try (Connection c = TestDatabase.connect()) {
      String custom = explain(c, "EXPLAIN " + FrontierClaimSql.claim("pacer_cursor"), true);
      assertThat(custom).as(custom).doesNotContain("Seq Scan");
      String prepared = numbered(FrontierClaimSql.claim("pacer_cursor"));
      try (Statement s = c.createStatement()) {
        s.execute(
            "PREPARE frontier_claim(text, bigint, bigint, text, text, text[], boolean, text,"
                + " bigint) AS "
                + prepared);
        s.execute("SET plan_cache_mode = force_generic_plan");
      }
      String generic =
          explain(
              c,
              "EXPLAIN EXECUTE frontier_claim('"
                  + job
                  + "', 20000, 120000000, 'w-explain/t1', 'w-explain', '{}', true, 't', 60000)",
              false);
      assertThat(generic).as(generic).doesNotContain("Seq Scan").contains("pacer_frontier_next");
    }
  }

  private String explain(Connection c, String sql, boolean bind) throws Exception {
    try (PreparedStatement s = c.prepareStatement(sql)) {
      if (bind) {
        FrontierClaimSql.bindClaim(s, job, "w-explain/t1", "w-explain", "t", 60_000);
      }
      StringBuilder plan = new StringBuilder();
      try (ResultSet r = s.executeQuery()) {
        while (r.next()) {
          plan.append(r.getString(1)).append('\n');
        }
      }
      return plan.toString();
    }
  }

  /** The statement with {@code $1..$n} for its {@code ?} placeholders, for PREPARE. */
  private static String numbered(String sql) {
    StringBuilder out = new StringBuilder();
    int n = 0;
    for (char ch : sql.toCharArray()) {
      if (ch == '?') {
        out.append('$').append(++n);
      } else {
        out.append(ch);
      }
    }
    return out.toString();
  }

  private static String cursorValue(String host) throws Exception {
    try (Connection c = TestDatabase.connect();
        Statement s = c.createStatement();
        ResultSet r =
            s.executeQuery(
                "SELECT next_at::text || '/' || updated_at::text"
                    + " FROM pacer_cursor WHERE name = '"
                    + host
                    + "'")) {
      return r.next() ? r.getString(1) : null;
    }
  }

  /**
   * The failure bar per host: counts of several calls (several workers) add up; a full window
   * starts again; crossing the bar passes the host over once, deferring its pending items with the
   * reason and leaving the one in flight to its outcome; the next run's plan clears it.
   */
  @Test
  void aHostOverItsFailureBarIsPassedOverOnceAndItsPendingItemsDeferred() throws Exception {
    String failing = host("failing");
    String other = host("other");
    plan(Map.of(failing, 3, other, 1), 1000.0, 10);
    Claim.Claimed inFlight = claimed();
    String failingItem = inFlight.host().equals(failing) ? inFlight.item().url() : null;

    assertThat(count(failing, 499, 4)).isEmpty();
    assertThat(count(failing, 1, 0)).as("500 items, 4 failed").isEmpty();
    assertThat(count(failing, 3, 1)).as("a new window: 3 items, 1 failed").isEmpty();
    assertThat(count(other, 10, 10)).as("another host's failures").hasSize(1);
    assertThat(count(failing, 10, 3)).as("13 items, 4 failed").isEmpty();
    List<FrontierStore.PassedOver> passed = count(failing, 1, 1);
    assertThat(passed)
        .containsExactly(
            new FrontierStore.PassedOver(
                failing,
                "5 of its last 14 item(s) failed (bar: 5 of 500); the last: HTTP 500 from "
                    + failing));
    assertThat(count(failing, 1, 1)).as("passed over once").isEmpty();

    Map<String, Long> states = states(failing);
    assertThat(states.get("deferred")).isEqualTo(failingItem == null ? 3L : 2L);
    assertThat(states.getOrDefault("leased", 0L)).isEqualTo(failingItem == null ? 0L : 1L);
    assertThat(store.hosts().passedOver(job, 10).top())
        .extracting(FrontierStore.PassedOver::host)
        .containsExactly(failing, other);

    plan(Map.of(failing, 3, other, 1), 1000.0, 10);
    assertThat(store.hosts().passedOver(job, 10).hosts())
        .as("cleared by the next run's plan")
        .isZero();
  }

  private List<FrontierStore.PassedOver> count(String host, int items, int failures)
      throws Exception {
    return store
        .frontier()
        .countItems(
            job,
            Map.of(
                host,
                new FrontierStore.HostItems(
                    items, failures, failures > 0 ? "HTTP 500 from " + host : null)),
            500,
            5);
  }

  private Map<String, Long> states(String host) throws Exception {
    Map<String, Long> out = new java.util.TreeMap<>();
    try (Connection c = TestDatabase.connect();
        PreparedStatement s =
            c.prepareStatement(
                "SELECT state, count(*) FROM pacer_item WHERE job = ? AND host = ? GROUP BY"
                    + " state")) {
      s.setString(1, job);
      s.setString(2, host);
      try (ResultSet r = s.executeQuery()) {
        while (r.next()) {
          out.put(r.getString(1), r.getLong(2));
        }
      }
    }
    return out;
  }
}
