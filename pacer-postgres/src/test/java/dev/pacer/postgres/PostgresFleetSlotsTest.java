package dev.pacer.postgres;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.pacer.Destination;
import dev.pacer.DestinationLimiter;
import dev.pacer.LimiterRegistry;
import dev.pacer.TimeSource;
import dev.pacer.spi.FleetSlots;
import dev.pacer.spi.FleetSlots.Claim;
import dev.pacer.testing.FakeTime;
import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The fleet slots in PostgreSQL: taking, giving back, renewal, expiry after a kill -9, cost. */
class PostgresFleetSlotsTest {

  private final List<PostgresFleetSlots> opened = new ArrayList<>();

  @AfterEach
  void close() {
    opened.forEach(PostgresFleetSlots::close);
  }

  private PostgresFleetSlots slots(Duration lease) {
    PostgresFleetSlots s =
        new PostgresFleetSlots(
            PostgresCursorConfig.forUrl(TestDatabase.jdbcUrl()).build(),
            policy(),
            "test:" + opened.size(),
            lease);
    opened.add(s);
    return s;
  }

  private static OutagePolicy policy() {
    return new OutagePolicy(
        "test", Duration.ofSeconds(5), TimeSource.SYSTEM, OutagePolicy.Scheduler.none(), () -> {});
  }

  private static String fresh() {
    return "slots-" + UUID.randomUUID().toString().substring(0, 8);
  }

  @Test
  void nSlotsAreTakenAcrossHoldersThenTheSetIsFullUntilOneIsGivenBack() {
    PostgresFleetSlots a = slots(PostgresFleetSlots.DEFAULT_LEASE);
    PostgresFleetSlots b = slots(PostgresFleetSlots.DEFAULT_LEASE);
    String d = fresh();
    List<FleetSlots.Lease> leases = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      leases.add((i % 2 == 0 ? a : b).tryTake(d, 3).lease());
    }
    assertThat(leases).extracting(FleetSlots.Lease::slot).containsExactlyInAnyOrder(0, 1, 2);
    assertThat(a.tryTake(d, 3).outcome()).isEqualTo(Claim.Outcome.FULL);
    assertThat(b.tryTake(d, 3).outcome()).isEqualTo(Claim.Outcome.FULL);
    leases.get(1).giveBack();
    leases.get(1).giveBack();
    Claim again = a.tryTake(d, 3);
    assertThat(again.lease().slot()).isEqualTo(leases.get(1).slot());
    assertThat(b.tryTake(d, 3).outcome()).isEqualTo(Claim.Outcome.FULL);
    assertThat(a.tryTake(d, 4).outcome())
        .as("a larger cap creates the next slot")
        .isEqualTo(Claim.Outcome.TAKEN);
  }

  /**
   * A take that committed and whose answer was lost with the connection, as a restart or a cut
   * network can make it (the proxy cuts the connection at the server's ReadyForQuery for the take):
   * the take is made again on a new connection and must find the slot it took, not take another,
   * which nobody would give back and the fleet would miss until its lease ran out.
   */
  @Test
  void aTakeWhoseAnswerWasLostAfterItCommittedHoldsOneSlot() throws Exception {
    try (TcpProxy proxy = new TcpProxy(TestDatabase.port())) {
      PostgresFleetSlots s =
          new PostgresFleetSlots(
              PostgresCursorConfig.forUrl(
                      "jdbc:postgresql://127.0.0.1:"
                          + proxy.port()
                          + "/postgres?user=postgres&sslmode=disable&gssEncMode=disable")
                  .build(),
              policy(),
              "test:lost-answer",
              PostgresFleetSlots.DEFAULT_LEASE);
      opened.add(s);
      String d = fresh();
      // A take and its give back first: the take whose answer is lost runs on a reused
      // connection, which is the case where the take is made again.
      s.tryTake(d, 3).lease().giveBack();
      proxy.loseTheAnswerTo("generate_series");

      Claim taken = s.tryTake(d, 3);
      assertThat(proxy.answersLost()).as("the take's answer was lost").isEqualTo(1);
      assertThat(taken.outcome()).isEqualTo(Claim.Outcome.TAKEN);
      assertThat(liveSlots(d))
          .as("one slot held for one take")
          .containsExactly(taken.lease().slot());
      assertThat(s.heldByThisProcess()).isEqualTo(1);
      taken.lease().giveBack();
      assertThat(liveSlots(d)).as("given back, no slot is left held").isEmpty();
    }
  }

  /** The slots of {@code destination} held under live leases, by anyone. */
  private static List<Integer> liveSlots(String destination) throws SQLException {
    List<Integer> live = new ArrayList<>();
    try (Connection c = TestDatabase.connect();
        java.sql.PreparedStatement s =
            c.prepareStatement(
                "SELECT slot FROM pacer_fleet_slot WHERE destination = ? AND holder IS NOT NULL"
                    + " AND expires_at >= now() ORDER BY slot")) {
      s.setString(1, destination);
      try (java.sql.ResultSet r = s.executeQuery()) {
        while (r.next()) {
          live.add(r.getInt(1));
        }
      }
    }
    return live;
  }

  @Test
  void aHeldSlotIsRenewedPastItsLease() throws Exception {
    PostgresFleetSlots holder = slots(Duration.ofMillis(600));
    PostgresFleetSlots other = slots(Duration.ofMillis(600));
    String d = fresh();
    FleetSlots.Lease lease = holder.tryTake(d, 1).lease();
    for (int i = 0; i < 12; i++) {
      Thread.sleep(200);
      assertThat(other.tryTake(d, 1).outcome())
          .as("after %d ms", (i + 1) * 200)
          .isEqualTo(Claim.Outcome.FULL);
      assertThat(holder.holds(lease)).as("held after %d ms", (i + 1) * 200).isTrue();
    }
    lease.giveBack();
    assertThat(holder.holds(lease)).as("given back").isFalse();
    assertThat(other.tryTake(d, 1).outcome()).isEqualTo(Claim.Outcome.TAKEN);
  }

  /**
   * A holder that cannot renew (its database held down by the outage policy) stops counting on its
   * slot one lease after its last renewal was sent, although nobody has taken the slot yet.
   */
  @Test
  void aLeaseNotRenewedForAWholeLeaseIsNotCountedOn() throws Exception {
    // The policy's clock stands still, so its retry boundary (a multiple of the cooldown on its
    // wall clock) cannot fall inside the wait and let a renewal through.
    OutagePolicy policy =
        new OutagePolicy(
            "test", Duration.ofSeconds(5), new FakeTime(), OutagePolicy.Scheduler.none(), () -> {});
    PostgresFleetSlots holder =
        new PostgresFleetSlots(
            PostgresCursorConfig.forUrl(TestDatabase.jdbcUrl()).build(),
            policy,
            "test:unrenewed",
            Duration.ofMillis(600));
    opened.add(holder);
    FleetSlots.Lease lease = holder.tryTake(fresh(), 1).lease();
    assertThat(holder.holds(lease)).isTrue();
    assertThatThrownBy(
            () ->
                policy.open(
                    () -> {
                      throw new SQLException("gone", "08006");
                    }))
        .isInstanceOf(SQLException.class);
    Thread.sleep(700);
    assertThat(policy.refusesNow()).as("the policy still holds the database down").isTrue();
    assertThat(holder.holds(lease)).as("700 ms without a renewal, on a 600-ms lease").isFalse();
  }

  /**
   * A slot that another holder took after its lease ran out (here run out by hand, as a stall
   * longer than a lease would) is no longer held once the old holder's next renewal finds its token
   * gone; it is not renewed again, and the new holder keeps it.
   */
  @Test
  void aSlotTakenByAnotherHolderIsNoLongerHeldAfterTheNextRenewal() throws Exception {
    PostgresFleetSlots holder = slots(Duration.ofSeconds(2));
    PostgresFleetSlots other = slots(Duration.ofSeconds(2));
    String d = fresh();
    FleetSlots.Lease lease = holder.tryTake(d, 1).lease();
    Claim taken = Claim.full();
    // The holder's renewal may extend the lease between the two statements: then again.
    for (int i = 0; i < 5 && taken.outcome() != Claim.Outcome.TAKEN; i++) {
      try (Connection c = TestDatabase.connect();
          java.sql.PreparedStatement s =
              c.prepareStatement(
                  "UPDATE pacer_fleet_slot SET expires_at = now() - interval '1 second'"
                      + " WHERE destination = ?")) {
        s.setString(1, d);
        s.executeUpdate();
      }
      taken = other.tryTake(d, 1);
    }
    assertThat(taken.outcome()).isEqualTo(Claim.Outcome.TAKEN);
    long deadline = System.nanoTime() + Duration.ofSeconds(2).toNanos();
    while (holder.holds(lease)) {
      assertThat(System.nanoTime())
          .as("not held within 2 s (renewals every 0.5 s)")
          .isLessThan(deadline);
      Thread.sleep(20);
    }
    assertThat(holder.heldByThisProcess()).as("no longer renewed").isZero();
    Thread.sleep(2_500);
    assertThat(other.holds(taken.lease())).as("the new holder's, renewed").isTrue();
    assertThat(holder.tryTake(d, 1).outcome()).isEqualTo(Claim.Outcome.FULL);
  }

  @Test
  void whileTheDatabaseIsDownTakesAnswerUnavailableWithoutTheNetwork() {
    OutagePolicy down = policy();
    assertThatThrownBy(
            () ->
                down.open(
                    () -> {
                      throw new SQLException("gone", "08006");
                    }))
        .isInstanceOf(SQLException.class);
    PostgresFleetSlots s =
        new PostgresFleetSlots(
            PostgresCursorConfig.forUrl("jdbc:postgresql://127.0.0.1:1/none").build(),
            down,
            "t",
            PostgresFleetSlots.DEFAULT_LEASE);
    opened.add(s);
    assertThat(s.tryTake(fresh(), 2).outcome()).isEqualTo(Claim.Outcome.UNAVAILABLE);
    assertThat(down.failureCount()).isEqualTo(1);
  }

  /**
   * A pool that throws its own exception instead of a connection (closed, say): a take answers
   * unavailable and a give back returns, as {@link FleetSlots} promises, instead of throwing.
   */
  @Test
  void aPoolThatThrowsCostsATakeAndAGiveBackNothingButTheirAnswer() throws Exception {
    AtomicReference<Connection> lent = new AtomicReference<>();
    AtomicBoolean poolClosed = new AtomicBoolean();
    DataSourceAdapter pool =
        new DataSourceAdapter() {
          @Override
          public Connection getConnection() throws SQLException {
            if (poolClosed.get()) {
              throw new IllegalStateException("pool closed (test)");
            }
            lent.set(TestDatabase.connect());
            return lent.get();
          }
        };
    PostgresFleetSlots s =
        new PostgresFleetSlots(
            PostgresCursorConfig.forDataSource(pool).build(),
            policy(),
            "t",
            PostgresFleetSlots.DEFAULT_LEASE);
    opened.add(s);
    String d = fresh();
    FleetSlots.Lease lease = s.tryTake(d, 2).lease();
    poolClosed.set(true);
    lent.get().close();
    lease.giveBack();
    assertThat(s.tryTake(d, 2).outcome()).isEqualTo(Claim.Outcome.UNAVAILABLE);
  }

  /**
   * A holder killed with SIGKILL renews nothing more: its slots are free at most one lease after
   * the kill (here 2 s), and not before its last renewal's lease has run out (at least 3/4 of it).
   */
  @Test
  void slotsOfAProcessKilledWithSigkillAreFreeWithinOneLease() throws Exception {
    long leaseMillis = 2000;
    String d = fresh();
    String java =
        System.getProperty("java.home") + File.separator + "bin" + File.separator + "java";
    Process p =
        new ProcessBuilder(
                java,
                "-XX:TieredStopAtLevel=1",
                "-cp",
                System.getProperty("java.class.path"),
                FleetSlotHolder.class.getName(),
                TestDatabase.jdbcUrl(),
                d,
                "2",
                "2",
                Long.toString(leaseMillis))
            .redirectError(ProcessBuilder.Redirect.INHERIT)
            .start();
    try {
      BufferedReader out =
          new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
      String line;
      while (!"HOLDING".equals(line = out.readLine())) {
        assertThat(line).as("holder output").isNotNull().startsWith("TAKEN");
      }
      // Past a renewal or two, so that the kill falls at a random point of the renewal cycle.
      Thread.sleep(leaseMillis + 300);
      PostgresFleetSlots waiter = slots(PostgresFleetSlots.DEFAULT_LEASE);
      assertThat(waiter.tryTake(d, 2).outcome()).isEqualTo(Claim.Outcome.FULL);
      p.destroyForcibly().waitFor();
      long killed = System.nanoTime();
      int freed = 0;
      long firstFree = 0;
      while (freed < 2 && System.nanoTime() - killed < 3 * leaseMillis * 1_000_000L) {
        if (waiter.tryTake(d, 2).outcome() == Claim.Outcome.TAKEN) {
          freed++;
          firstFree = firstFree == 0 ? System.nanoTime() : firstFree;
        } else {
          Thread.sleep(20);
        }
      }
      double seconds = (System.nanoTime() - killed) / 1e9;
      System.out.printf(
          Locale.ROOT,
          "kill -9 of a holder of 2 slots (lease %d ms): first free"
              + " %.2f s, both %.2f s after the kill%n",
          leaseMillis,
          (firstFree - killed) / 1e9,
          seconds);
      assertThat(freed).as("slots freed").isEqualTo(2);
      assertThat(seconds)
          .as("seconds until both were free")
          .isLessThanOrEqualTo(leaseMillis / 1000.0 + 0.3);
      assertThat((firstFree - killed) / 1e9)
          .as("not before a renewal's lease ran out")
          .isGreaterThanOrEqualTo(leaseMillis * 0.75 / 1000.0 - 0.5);
    } finally {
      p.destroyForcibly();
    }
  }

  /**
   * What the cap costs a request, counted: a take and a give back, one statement each on the slots'
   * connection, and nothing there for an uncapped request. The median times of a take and a give
   * back, and of a whole capped acquire and close against an uncapped one on the same cursor (at a
   * rate so high that no turn waits), are printed for docs/operations.md, not asserted: a latency
   * belongs to {@code ./bench}.
   */
  @Test
  void whatTheCapCostsARequest() throws Exception {
    Connection real = TestDatabase.connect();
    CountingConnection counted = new CountingConnection(real);
    DataSourceAdapter oneConnection =
        new DataSourceAdapter() {
          @Override
          public Connection getConnection() {
            return counted.connection();
          }
        };
    // A lease of an hour: no renewal (every quarter lease, while a slot is held) falls in the
    // count.
    PostgresFleetSlots s =
        new PostgresFleetSlots(
            PostgresCursorConfig.forDataSource(oneConnection).build(),
            policy(),
            "test:counted",
            Duration.ofHours(1));
    opened.add(s);
    String d = fresh();
    int n = 2000;
    long[] pair = new long[n];
    for (int i = 0; i < n; i++) {
      long t0 = System.nanoTime();
      s.tryTake(d, 4).lease().giveBack();
      pair[i] = System.nanoTime() - t0;
    }
    try (PostgresCursor cursor = TestDatabase.cursor(TableLayout.pacerTable())) {
      assertThat(cursor.connect(Duration.ofSeconds(10))).isTrue();
      LimiterRegistry registry = new LimiterRegistry(cursor, s);
      DestinationLimiter capped =
          registry.limiter(
              Destination.builder(fresh())
                  .ratePerSecond(1_000_000)
                  .maxConcurrencyFleetWide(4)
                  .build());
      DestinationLimiter uncapped =
          registry.limiter(Destination.builder(fresh()).ratePerSecond(1_000_000).build());
      long[] withCap = new long[n];
      long[] withoutCap = new long[n];
      long cappedStatements = 0;
      long uncappedStatements = 0;
      for (int i = 0; i < n; i++) {
        long before = counted.executions();
        long t0 = System.nanoTime();
        capped.acquire().close();
        long t1 = System.nanoTime();
        long between = counted.executions();
        uncapped.acquire().close();
        withCap[i] = t1 - t0;
        withoutCap[i] = System.nanoTime() - t1;
        cappedStatements += between - before;
        uncappedStatements += counted.executions() - between;
      }
      double pairMedian = median(pair);
      System.out.printf(
          Locale.ROOT,
          "fleet cap cost per request (%d of each, capped and uncapped interleaved): take + give"
              + " back median %.3f ms, p90 %.3f ms; acquire + close capped median %.3f ms, uncapped"
              + " %.3f ms%n",
          n,
          pairMedian / 1e6,
          percentile(pair, 0.9) / 1e6,
          median(withCap) / 1e6,
          median(withoutCap) / 1e6);
      assertThat(cappedStatements)
          .as(
              "statements on the slots' connection for %d capped"
                  + " requests: a take and a give back each",
              n)
          .isEqualTo(2L * n);
      assertThat(uncappedStatements).as("for %d uncapped requests", n).isZero();
    }
  }

  private static double median(long[] values) {
    return percentile(values, 0.5);
  }

  private static double percentile(long[] values, double q) {
    long[] sorted = values.clone();
    Arrays.sort(sorted);
    return sorted[(int) Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
  }
}
