package dev.pacer.postgres;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.pacer.Destination;
import dev.pacer.TimeSource;
import dev.pacer.spi.Reservation;
import dev.pacer.testing.TurnClock;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.postgresql.PGConnection;

/** Self-healing, the shared-table row format, and the dedicated connection, on a real server. */
class PostgresCursorTest {

  private static final Duration GAP = Duration.ofMillis(100);
  private static final String CACHE = "shared_cache";
  private static PostgresCursor pacerTable;
  private static PostgresCursor cacheTable;

  @BeforeAll
  static void open() {
    TestDatabase.createDjangoCacheTable(CACHE);
    pacerTable = TestDatabase.cursor(TableLayout.pacerTable());
    cacheTable = TestDatabase.cursor(TableLayout.djangoCache(CACHE));
  }

  @AfterAll
  static void close() {
    pacerTable.close();
    cacheTable.close();
  }

  private static String freshName() {
    return "pg-" + UUID.randomUUID().toString().substring(0, 8);
  }

  @Test
  void aDeletedRowCostsAtMostOneImmediateTurn() {
    for (PostgresCursor cursor : new PostgresCursor[] {pacerTable, cacheTable}) {
      String name = freshName();
      cursor.reserve(name, GAP);
      cursor.reserve(name, GAP);
      deleteRow(cursor, name);
      long before = System.nanoTime();
      assertThat(waitMillis(cursor.reserve(name, GAP))).isBetween(0L, 1L);
      assertAGapAfter(before, cursor.reserve(name, GAP), "no burst");
    }
  }

  @Test
  void aCursorImplausiblyFarAheadIsResetButAnHonestQueueIsKept() {
    String name = freshName();
    pacerTable.reserve(name, GAP);
    update(
        "UPDATE pacer_cursor SET next_at = clock_timestamp() + interval '30 minutes' WHERE name ="
            + " ?",
        name);
    assertThat(waitMillis(pacerTable.reserve(name, GAP)))
        .as("30 min ahead is within the 1 h bound: queue behind it")
        .isBetween(30 * 60_000L - 1000, 30 * 60_000L);
    update(
        "UPDATE pacer_cursor SET next_at = clock_timestamp() + interval '2 hours' WHERE name = ?",
        name);
    long before = System.nanoTime();
    assertThat(waitMillis(pacerTable.reserve(name, GAP))).as("reset").isBetween(0L, 1L);
    assertAGapAfter(before, pacerTable.reserve(name, GAP), "after the reset");
  }

  /**
   * Another role pushes the row far ahead while a reservation is on its way: the reservation's
   * snapshot still holds the row as it was, but its upsert waits for the other role's lock and then
   * resets the value it finds. Whoever resets a row says so.
   */
  @Test
  void aRowPushedFarAheadUnderAReservationInFlightIsResetWithAWarn() throws Exception {
    assertResetWithAWarnUnderAReservationInFlight(
        pacerTable,
        "UPDATE pacer_cursor SET next_at = clock_timestamp() + interval '2 hours' WHERE name = ?");
  }

  @Test
  void aKeyValueRowPushedFarAheadUnderAReservationInFlightIsResetWithAWarnToo() throws Exception {
    assertResetWithAWarnUnderAReservationInFlight(
        cacheTable,
        "UPDATE "
            + CACHE
            + " SET value = (extract(epoch FROM clock_timestamp()) + 7200)::text"
            + " WHERE cache_key = 'harvest-rate-cursor:' || ?");
  }

  /** {@code push} moves the row of its one parameter, a destination name, 2 h ahead. */
  private static void assertResetWithAWarnUnderAReservationInFlight(
      PostgresCursor cursor, String push) throws Exception {
    String name = freshName();
    cursor.reserve(name, GAP);
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    PrintStream originalErr = System.err;
    System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
    try (Connection writer = TestDatabase.connect()) {
      writer.setAutoCommit(false);
      update(writer, push, name);
      CompletableFuture<Reservation> inFlight =
          CompletableFuture.supplyAsync(() -> cursor.reserve(name, GAP));
      awaitBlockedBy(writer);
      writer.commit();
      assertThat(waitMillis(inFlight.get(5, TimeUnit.SECONDS))).as("reset").isBetween(0L, 1L);
    } finally {
      System.setErr(originalErr);
    }
    assertThat(
            err.toString(StandardCharsets.UTF_8)
                .lines()
                .filter(l -> l.contains("WARN") && l.contains(name + " was 71"))
                .filter(l -> l.contains("s ahead of the database clock")))
        .as("the WARN of the reset, in %s", err)
        .hasSize(1);
  }

  @Test
  void aKeyValueCursorFarAheadIsResetToo() {
    String name = freshName();
    cacheTable.reserve(name, GAP);
    update(
        "UPDATE "
            + CACHE
            + " SET value = (extract(epoch FROM now()) + 7200)::text"
            + " WHERE cache_key = ?",
        "harvest-rate-cursor:" + name);
    assertThat(waitMillis(cacheTable.reserve(name, GAP))).isBetween(0L, 1L);
  }

  @Test
  void aPauseLongerThanTheResetBoundSurvivesTheNextReservation() {
    // The CLI's bound for a fast destination, and the default cap on a Retry-After.
    Duration bound = Duration.ofMinutes(2);
    long pauseMillis = Duration.ofMinutes(10).toMillis();
    try (PostgresCursor cursor =
        new PostgresCursor(
            PostgresCursorConfig.forUrl(TestDatabase.jdbcUrl()).resetBeyond(bound).build())) {
      String name = freshName();
      cursor.reserve(name, GAP);
      assertThat(cursor.pause(name, Duration.ofMillis(pauseMillis))).as("recorded").isTrue();
      assertThat(waitMillis(cursor.reserve(name, GAP)))
          .as("the turn is placed after the pause")
          .isBetween(pauseMillis - 1000, pauseMillis);
      assertThat(waitMillis(cursor.reserve(name, GAP)))
          .as("and the next behind it")
          .isBetween(pauseMillis + 100 - 1000, pauseMillis + 100);
    }
  }

  @Test
  void aCursorFurtherAheadOfItsPauseThanTheBoundIsStillReset() {
    String name = freshName();
    pacerTable.reserve(name, GAP);
    update(
        "UPDATE pacer_cursor SET next_at = clock_timestamp() + interval '2 hours',"
            + " paused_until = clock_timestamp() - interval '1 minute' WHERE name = ?",
        name);
    assertThat(waitMillis(pacerTable.reserve(name, GAP)))
        .as("a pause that has ended explains" + " nothing")
        .isBetween(0L, 1L);
    update(
        "UPDATE pacer_cursor SET next_at = clock_timestamp() + interval '210 minutes',"
            + " paused_until = clock_timestamp() + interval '3 hours' WHERE name = ?",
        name);
    assertThat(waitMillis(pacerTable.reserve(name, GAP)))
        .as("30 min behind a pause of 3 h is within the 1 h bound: queue behind it")
        .isBetween(210 * 60_000L - 1000, 210 * 60_000L);
    update(
        "UPDATE pacer_cursor SET next_at = clock_timestamp() + interval '5 hours',"
            + " paused_until = clock_timestamp() + interval '3 hours' WHERE name = ?",
        name);
    long before = System.nanoTime();
    assertThat(waitMillis(pacerTable.reserve(name, GAP)))
        .as("2 h behind it: reset")
        .isBetween(0L, 1L);
    assertAGapAfter(before, pacerTable.reserve(name, GAP), "after the reset");
  }

  @Test
  void aPauseIsHonouredNoFurtherThanTheLongestADestinationMayAskFor() {
    String name = freshName();
    pacerTable.reserve(name, GAP);
    // Another role's row: no destination can ask for a pause without end.
    update(
        "UPDATE pacer_cursor SET next_at = clock_timestamp() + interval '20 hours',"
            + " paused_until = 'infinity' WHERE name = ?",
        name);
    assertThat(waitMillis(pacerTable.reserve(name, GAP)))
        .as("20 h: within a day")
        .isBetween(20 * 3_600_000L - 1000, 20 * 3_600_000L);
    update(
        "UPDATE pacer_cursor SET next_at = clock_timestamp() + interval '3 days',"
            + " paused_until = 'infinity' WHERE name = ?",
        name);
    assertThat(waitMillis(pacerTable.reserve(name, GAP))).as("3 days: reset").isBetween(0L, 1L);
    long day = Destination.LONGEST_RETRY_AFTER.toMillis();
    String paused = freshName();
    assertThat(pacerTable.pause(paused, Duration.ofDays(3))).isTrue();
    assertThat(waitMillis(pacerTable.reserve(paused, GAP)))
        .as("a pause asked of the cursor itself is cut to a day, and kept")
        .isBetween(day - 1000, day);
  }

  @Test
  void aRowWrittenInTheOriginalFormatIsHonoured() {
    String name = freshName();
    update(
        "INSERT INTO "
            + CACHE
            + " (cache_key, value, expires) VALUES (?, (extract(epoch FROM clock_timestamp()) +"
            + " 5)::text, now() + interval '30 days')",
        "harvest-rate-cursor:" + name);
    assertThat(waitMillis(cacheTable.reserve(name, GAP))).isBetween(4900L, 5000L);
  }

  @Test
  void pacerWritesTheOriginalRowFormat() throws SQLException {
    String name = freshName();
    cacheTable.reserve(name, GAP);
    try (Connection c = TestDatabase.connect();
        PreparedStatement s =
            c.prepareStatement(
                "SELECT value, expires, extract(epoch FROM clock_timestamp())"
                    + " FROM "
                    + CACHE
                    + " WHERE cache_key = ?")) {
      s.setString(1, "harvest-rate-cursor:" + name);
      try (ResultSet row = s.executeQuery()) {
        assertThat(row.next()).isTrue();
        String value = row.getString(1);
        assertThat(value).matches("[0-9]+\\.[0-9]{1,6}");
        BigDecimal ahead = new BigDecimal(value).subtract(row.getBigDecimal(3));
        // At most one gap ahead of the read; behind it if the read came later than that (a new
        // connection on a busy host), but by far less than a second: in ms or us the value would
        // be a thousand or a million times the epoch seconds.
        assertThat(ahead.doubleValue())
            .as("seconds, not ms or us")
            .isBetween(-1.0, GAP.toNanos() / 1e9);
        assertThat(row.getTimestamp(2).toInstant())
            .isBetween(
                Instant.now().plus(Duration.ofDays(29)), Instant.now().plus(Duration.ofDays(31)));
      }
    }
  }

  /** The original (Python) design's reservation, on its key/value row; parameters: key, gap x 4. */
  private static final String ORIGINAL_DESIGN_STATEMENT = OriginalDesign.statement(CACHE);

  /**
   * The statement of the original (Python) design, run beside Pacer on the same row: the two fleets
   * queue behind each other, so they share one ceiling.
   */
  @Test
  void aPythonFleetUsingTheOriginalStatementSharesTheCeiling() throws SQLException {
    String name = freshName();
    String key = "harvest-rate-cursor:" + name;
    Duration second = Duration.ofSeconds(1);
    assertThat(waitMillis(cacheTable.reserve(name, second))).isBetween(0L, 1L);
    try (Connection c = TestDatabase.connect();
        PreparedStatement python = c.prepareStatement(ORIGINAL_DESIGN_STATEMENT)) {
      python.setString(1, key);
      for (int i = 2; i <= 5; i++) {
        python.setBigDecimal(i, BigDecimal.ONE);
      }
      try (ResultSet row = python.executeQuery()) {
        row.next();
        assertThat(row.getDouble(1)).as("Python queues behind Pacer").isBetween(0.3, 1.0);
      }
    }
    assertThat(waitMillis(cacheTable.reserve(name, second)))
        .as("Pacer queues behind Python")
        .isBetween(1300L, 2000L);
  }

  /**
   * A Retry-After heard by a Java process pauses a Python fleet on the original row format too: the
   * pause is the cursor value itself, so the original statement's next turn lies after it.
   */
  @Test
  void aPythonFleetUsingTheOriginalStatementPausesForARetryAfter() throws SQLException {
    String name = freshName();
    String key = "harvest-rate-cursor:" + name;
    cacheTable.reserve(name, GAP);
    assertThat(cacheTable.pause(name, Duration.ofSeconds(3))).isTrue();
    try (Connection c = TestDatabase.connect();
        PreparedStatement python = c.prepareStatement(ORIGINAL_DESIGN_STATEMENT)) {
      python.setString(1, key);
      for (int i = 2; i <= 5; i++) {
        python.setBigDecimal(i, new BigDecimal("0.1"));
      }
      try (ResultSet row = python.executeQuery()) {
        row.next();
        assertThat(row.getDouble(1))
            .as("Python's next turn waits out the pause")
            .isBetween(2.8, 3.0);
      }
    }
    assertThat(waitMillis(cacheTable.reserve(name, GAP)))
        .as("and Pacer's after Python's")
        .isBetween(2900L, 3100L);
  }

  @Test
  void theHoldsInForceAreReadForOperators() {
    String name = freshName();
    assertThat(pacerTable.holdsInForce(name)).isEqualTo(DestinationHolds.NONE);
    pacerTable.pause(name, Duration.ofSeconds(5));
    pacerTable.lockOut(name, "HTTP 403 from https://example.org/");
    DestinationHolds holds = pacerTable.holdsInForce(name);
    assertThat(holds.pauseLeft()).isBetween(Duration.ofMillis(4500), Duration.ofSeconds(5));
    assertThat(holds.lockoutReason()).contains("HTTP 403 from https://example.org/");
    pacerTable.clearLockout(name);
    assertThat(pacerTable.holdsInForce(name).isLockedOut()).isFalse();
    assertThat(cacheTable.holdsInForce(name))
        .as("the key/value layout records none")
        .isEqualTo(DestinationHolds.NONE);
  }

  @Test
  void aLongNonAsciiLockoutReasonIsRecordedAndAnnouncedWithoutAnOutage() throws Exception {
    String name = freshName();
    String reason = "HTTP 403: " + "é".repeat(5000);
    java.util.concurrent.CountDownLatch heard = new java.util.concurrent.CountDownLatch(1);
    pacerTable.listen(
        name,
        new dev.pacer.spi.Cursor.Listener() {
          @Override
          public void paused(Duration left) {}

          @Override
          public void lockedOut(String r) {
            if (r.equals(reason)) {
              heard.countDown();
            }
          }
        });
    assertThat(pacerTable.reserve(name, GAP).isGranted()).isTrue();
    assertThat(pacerTable.lockOut(name, reason)).as("recorded").isTrue();
    assertThat(pacerTable.holdsInForce(name).lockoutReason()).contains(reason);
    assertThat(heard.await(5, java.util.concurrent.TimeUnit.SECONDS)).as("announced").isTrue();
    assertThat(pacerTable.isLatched()).as("taken for an outage").isFalse();
    pacerTable.clearLockout(name);
  }

  @Test
  void aLockoutReachesAnotherProcessOnItsCheckedRowAndOutlivesTheRowsLoss() {
    String reason = "HTTP 403 from https://example.org/";
    try (PostgresCursor other = TestDatabase.cursor(TableLayout.pacerTable())) {
      String name = freshName();
      assertThat(other.reserve(name, GAP).isGranted()).as("the row made and checked").isTrue();
      assertThat(other.reserve(name, GAP).isGranted()).as("on the row alone").isTrue();
      assertThat(pacerTable.lockOut(name, reason)).isTrue();
      assertThat(other.reserve(name, GAP).lockoutReason())
          .as("another process's next reservation")
          .isEqualTo(reason);

      String lost = freshName();
      assertThat(other.reserve(lost, GAP).isGranted()).as("the row made and checked").isTrue();
      assertThat(other.reserve(lost, GAP).isGranted()).as("on the row alone").isTrue();
      assertThat(pacerTable.lockOut(lost, reason)).isTrue();
      // A crash empties the unlogged cursor table; the lockout's record is logged. A pause then
      // makes the row again, unchecked against the record.
      deleteRow(pacerTable, lost);
      pacerTable.pause(lost, Duration.ofMillis(1));
      assertThat(other.reserve(lost, GAP).lockoutReason())
          .as("a row a pause made after the row's loss")
          .isEqualTo(reason);
      deleteRow(pacerTable, lost);
      assertThat(other.reserve(lost, GAP).lockoutReason()).as("no row").isEqualTo(reason);
      pacerTable.clearLockout(lost);
      assertThat(other.reserve(lost, GAP).isGranted()).as("cleared").isTrue();
      assertThat(other.reserve(lost, GAP).isGranted()).as("cleared, on the row alone").isTrue();
      pacerTable.clearLockout(name);
    }
  }

  @Test
  void anInfiniteCursorWrittenByAnotherRoleIsHealedAtTheNextReservation() {
    assertThat(pacerTable.reserve(freshName(), GAP).isGranted()).as("the table made").isTrue();
    for (String value : new String[] {"infinity", "-infinity"}) {
      String name = freshName();
      TestDatabase.execute(
          "INSERT INTO pacer_cursor (name, next_at, updated_at, paused_until)"
              + " VALUES ('"
              + name
              + "', '"
              + value
              + "', '"
              + value
              + "', '"
              + value
              + "')");
      Reservation healed = pacerTable.reserve(name, GAP);
      assertThat(healed.isGranted()).as("next_at = %s", value).isTrue();
      assertThat(waitMillis(healed)).as("next_at = %s", value).isLessThanOrEqualTo(10L);
      assertThat(waitMillis(pacerTable.reserve(name, GAP)))
          .as("then the gap")
          .isBetween(GAP.toMillis() - 50, GAP.toMillis());
    }
  }

  @Test
  void aCorruptValueIsOverwrittenAtTheNextReservation() {
    String name = freshName();
    cacheTable.reserve(name, GAP);
    for (String garbage : new String[] {"garbage", "", "NaN", "1e99999", "12.5.6", "-Infinity"}) {
      update(
          "UPDATE "
              + CACHE
              + " SET value = '"
              + garbage.replace("'", "''")
              + "' WHERE cache_key = ?",
          "harvest-rate-cursor:" + name);
      long before = System.nanoTime();
      assertThat(waitMillis(cacheTable.reserve(name, GAP))).as(garbage).isBetween(0L, 1L);
      assertAGapAfter(before, cacheTable.reserve(name, GAP), garbage);
    }
    assertThat(cacheTable.failureCount()).isZero();
  }

  @Test
  void aRefusalLeavesTheRowUntouched() throws SQLException {
    String name = freshName();
    pacerTable.reserve(name, Duration.ofSeconds(10));
    pacerTable.reserve(name, Duration.ofSeconds(10));
    String before = readNextAt(name);
    assertThat(pacerTable.tryReserve(name, GAP, Duration.ofSeconds(5)).isRefused()).isTrue();
    assertThat(readNextAt(name)).isEqualTo(before);
  }

  /**
   * A pool configured with autocommit off (HikariCP's {@code autoCommit=false}, common where every
   * unit of work is a transaction) hands the cursor a connection in a transaction. Left so, the
   * first reservation would hold the cursor row's lock until that transaction ended, and no other
   * process would ever see the turn. Seen from another session, the reservation is committed.
   */
  @Test
  void aReservationIsCommittedEvenOnAConnectionHandedOutWithoutAutocommit() throws SQLException {
    DataSourceAdapter transactional =
        new DataSourceAdapter() {
          @Override
          public Connection getConnection() throws SQLException {
            Connection c = TestDatabase.connect();
            c.setAutoCommit(false);
            return c;
          }
        };
    try (PostgresCursor cursor =
        new PostgresCursor(PostgresCursorConfig.forDataSource(transactional).build())) {
      pacerTable.reserve(freshName(), GAP); // the table exists, whatever this cursor does
      String name = freshName();
      assertThat(cursor.reserve(name, Duration.ofSeconds(10)).isGranted()).isTrue();
      assertThat(readNextAt(name))
          .as("visible to another session while the cursor stays open")
          .isNotNull();
      Reservation second = pacerTable.reserve(name, Duration.ofSeconds(10));
      assertThat(second.isGranted())
          .as("another cursor queues behind it, no row lock kept: %s", second)
          .isTrue();
      assertThat(second.waitTime()).isBetween(Duration.ofSeconds(9), Duration.ofSeconds(10));
    }
  }

  @Test
  void aDataSourceConnectionIsTakenOnceAndKept() {
    CountingDataSource source =
        new CountingDataSource(TestDatabase.postgres().getPostgresDatabase());
    try (PostgresCursor cursor =
        new PostgresCursor(PostgresCursorConfig.forDataSource(source).build())) {
      String name = freshName();
      for (int i = 0; i < 20; i++) {
        assertThat(cursor.reserve(name, Duration.ofMillis(1)).isGranted()).isTrue();
      }
      assertThat(source.connectionsTaken()).isEqualTo(1);
    }
  }

  @Test
  void aConnectionThatDiedBetweenCallsIsReplacedWithinTheSameCall() throws SQLException {
    String application = "pacer-test-" + UUID.randomUUID().toString().substring(0, 8);
    java.util.Properties props = new java.util.Properties();
    props.setProperty("ApplicationName", application);
    try (PostgresCursor cursor =
        new PostgresCursor(PostgresCursorConfig.forUrl(TestDatabase.jdbcUrl(), props).build())) {
      String name = freshName();
      assertThat(cursor.reserve(name, GAP).isGranted()).isTrue();
      try (Connection c = TestDatabase.connect();
          PreparedStatement kill =
              c.prepareStatement(
                  "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE"
                      + " application_name = ?")) {
        kill.setString(1, application);
        try (ResultSet row = kill.executeQuery()) {
          row.next();
          assertThat(row.getInt(1)).isEqualTo(1);
        }
      }
      Reservation afterKill = cursor.reserve(name, GAP);
      assertThat(afterKill.isGranted()).as("retried on a new connection: %s", afterKill).isTrue();
      assertThat(cursor.connectionAttempts()).isEqualTo(2);
      assertThat(cursor.failureCount()).isZero();
    }
  }

  @Test
  void aRowLockedByAStuckTransactionCostsAboutOneSecondThenDegrades() throws SQLException {
    String name = freshName();
    pacerTable.reserve(name, GAP);
    try (PostgresCursor cursor = TestDatabase.cursor(TableLayout.pacerTable());
        Connection blocker = TestDatabase.connect()) {
      blocker.setAutoCommit(false);
      update(blocker, "SELECT * FROM pacer_cursor WHERE name = ? FOR UPDATE", name);
      long started = System.nanoTime();
      Reservation stuck = cursor.reserve(name, GAP);
      double seconds = (System.nanoTime() - started) / 1e9;
      assertThat(stuck.isUnavailable()).isTrue();
      assertThat(seconds).isBetween(0.9, 1.6);

      started = System.nanoTime();
      assertThat(cursor.reserve(name, GAP).isUnavailable()).as("latched").isTrue();
      assertThat((System.nanoTime() - started) / 1e6).isLessThan(50.0);
      blocker.rollback();
    }
  }

  @Test
  void reservationsWaitingTogetherShareOneRoundTripAndKeepTheSpacing() throws Exception {
    int callers = 16;
    Duration gap = Duration.ofMillis(50);
    String name = freshName();
    TurnClock clock = new TurnClock(TimeSource.SYSTEM);
    try (PostgresCursor cursor = TestDatabase.cursor(TableLayout.pacerTable(), clock);
        Connection holder = TestDatabase.connect()) {
      TestDatabase.settleClock(cursor, clock);
      cursor.reserve(name, Duration.ZERO);
      long statementsBefore = cursor.reservationStatements();
      // The row locked by another transaction holds the first caller's statement, and with it
      // the connection, while the others queue behind it.
      holder.setAutoCommit(false);
      update(holder, "SELECT 1 FROM pacer_cursor WHERE name = ? FOR UPDATE", name);
      java.util.concurrent.ExecutorService threads =
          java.util.concurrent.Executors.newFixedThreadPool(callers);
      try {
        java.util.List<java.util.concurrent.Future<Long>> starts = new java.util.ArrayList<>();
        for (int i = 0; i < callers; i++) {
          starts.add(
              threads.submit(
                  () -> {
                    Reservation turn = cursor.reserve(name, gap);
                    assertThat(turn.isGranted()).as("granted: %s", turn).isTrue();
                    return clock.startOf(turn);
                  }));
        }
        Thread.sleep(300);
        holder.commit();
        java.util.List<Long> turns = new java.util.ArrayList<>();
        for (java.util.concurrent.Future<Long> start : starts) {
          turns.add(start.get(20, java.util.concurrent.TimeUnit.SECONDS));
        }
        java.util.Collections.sort(turns);
        long statements = cursor.reservationStatements() - statementsBefore;
        // The first caller's turn began when its statement did, before it waited for the row: its
        // answer is "now", well after that turn's start. The turns of one combined statement are
        // a gap apart to the microsecond the statement counts in. Between two statements the
        // database's spacing holds too, seen through the mapping of its clock onto this one,
        // which the clock's kept sample makes good to well under a millisecond; a statement that
        // began after its turn was due starts it later, never sooner.
        long gapNanos = gap.toNanos();
        long exact = java.util.concurrent.TimeUnit.MICROSECONDS.toNanos(2);
        long mapping = TestDatabase.CLOCK_MAPPING.toNanos();
        int spacedExactly = 0;
        for (int i = 2; i < callers; i++) {
          long spacing = turns.get(i) - turns.get(i - 1);
          assertThat(spacing)
              .as("turn %d after turn %d, of %s", i + 1, i, turns)
              .isGreaterThanOrEqualTo(gapNanos - mapping);
          if (Math.abs(spacing - gapNanos) <= exact) {
            spacedExactly++;
          }
        }
        assertThat(spacedExactly)
            .as(
                "turns a gap apart to the microsecond, of %s, from %d statements",
                turns, statements)
            .isGreaterThanOrEqualTo((int) (callers - statements));
      } finally {
        threads.shutdownNow();
      }
      assertThat(cursor.reservationStatements() - statementsBefore)
          .as("round trips for %d reservations, the first holding the rest up", callers)
          .isLessThan(callers / 2);
    }
  }

  @Test
  void aHoldPollIntervalOutsideItsRangeIsRefusedByName() {
    PostgresCursorConfig.Builder config = PostgresCursorConfig.forUrl(TestDatabase.jdbcUrl());
    assertThat(config.build().holdPollInterval()).isEqualTo(Duration.ofMillis(100));
    for (Duration bad :
        new Duration[] {
          null,
          Duration.ZERO,
          Duration.ofMillis(9),
          Duration.ofMillis(10_001),
          Duration.ofMillis(-100)
        }) {
      assertThatThrownBy(() -> config.holdPollInterval(bad))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("holdPollInterval")
          .hasMessageContaining(String.valueOf(bad));
    }
    assertThat(config.holdPollInterval(Duration.ofMillis(10)).build().holdPollInterval())
        .isEqualTo(Duration.ofMillis(10));
    assertThat(config.holdPollInterval(Duration.ofSeconds(10)).build().holdPollInterval())
        .isEqualTo(Duration.ofSeconds(10));
  }

  @Test
  void badIdentifiersAreRefusedBeforeAnySql() {
    assertThatThrownBy(() -> TableLayout.djangoCache("x; drop table y"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("table")
        .hasMessageContaining("x; drop table y");
    assertThatThrownBy(() -> TableLayout.pacerTable("a.b.c")).hasMessageContaining("a.b.c");
    assertThatThrownBy(() -> TableLayout.keyValueTable("t", "k\"", "v", "e", "p:"))
        .hasMessageContaining("keyColumn");
    assertThat(TableLayout.pacerTable("public.my_cursor_2")).isNotNull();
  }

  @Test
  void aMissingUserTableMakesReservationsUnavailableNotExceptions() {
    try (PostgresCursor cursor = TestDatabase.cursor(TableLayout.djangoCache("no_such_table"))) {
      assertThat(cursor.reserve(freshName(), GAP).isUnavailable()).isTrue();
    }
  }

  private static String readNextAt(String name) throws SQLException {
    try (Connection c = TestDatabase.connect();
        PreparedStatement s =
            c.prepareStatement("SELECT next_at::text FROM pacer_cursor WHERE name = ?")) {
      s.setString(1, name);
      try (ResultSet row = s.executeQuery()) {
        return row.next() ? row.getString(1) : null;
      }
    }
  }

  private static void deleteRow(PostgresCursor cursor, String name) {
    if (cursor == pacerTable) {
      update("DELETE FROM pacer_cursor WHERE name = ?", name);
    } else {
      update("DELETE FROM " + CACHE + " WHERE cache_key = ?", "harvest-rate-cursor:" + name);
    }
  }

  private static void update(String sql, String param) {
    try (Connection c = TestDatabase.connect()) {
      update(c, sql, param);
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  private static void update(Connection c, String sql, String param) throws SQLException {
    try (PreparedStatement s = c.prepareStatement(sql)) {
      s.setString(1, param);
      s.execute();
    }
  }

  /** Waits until another session is blocked by {@code holder}'s locks. */
  private static void awaitBlockedBy(Connection holder) throws SQLException, InterruptedException {
    try (Connection c = TestDatabase.connect();
        PreparedStatement s =
            c.prepareStatement(
                "SELECT count(*) FROM pg_stat_activity"
                    + " WHERE ?::int = ANY(pg_blocking_pids(pid))")) {
      s.setInt(1, holder.unwrap(PGConnection.class).getBackendPID());
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
      while (true) {
        try (ResultSet row = s.executeQuery()) {
          row.next();
          if (row.getInt(1) > 0) {
            return;
          }
        }
        assertThat(System.nanoTime()).as("a session blocked within 5 s").isLessThan(deadline);
        TimeUnit.MILLISECONDS.sleep(5);
      }
    }
  }

  /**
   * Asserts that {@code second}, reserved right after a turn granted at once, waits a gap after
   * that turn: the gap less the time since {@code beforeFirstNanos}, when the first call began, and
   * no more than the gap. Measured, not assumed: on a loaded machine tens of milliseconds pass
   * between two calls. A burst, the second granted at once too, fails it whenever the two calls
   * took less than the gap.
   */
  private static void assertAGapAfter(long beforeFirstNanos, Reservation second, String what) {
    long elapsed = (long) Math.ceil((System.nanoTime() - beforeFirstNanos) / 1e6);
    assertThat(waitMillis(second))
        .as("%s: the next turn, %d ms after the first call began", what, elapsed)
        .isBetween(GAP.toMillis() - elapsed - 1, GAP.toMillis());
  }

  private static long waitMillis(Reservation r) {
    assertThat(r.isGranted()).as("granted: %s", r).isTrue();
    return Math.round(r.waitTime().toNanos() / 1e6);
  }
}
