package dev.pacer.cli.db;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.offset;

import dev.pacer.postgres.TestDatabase;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The door figures are computed in PostgreSQL from the request log: exact on known rows. */
class RequestLogTest {

  private static final AtomicInteger UNIQUE = new AtomicInteger();
  private static final long T0 = 1_900_000_000_000_000L; // microseconds since the epoch
  private WorkState store;
  private RequestLog log;
  private String destination;

  @BeforeEach
  void open() throws Exception {
    Database database = new Database(TestDatabase.jdbcUrl());
    store = new WorkState(database);
    store.ensureSchema();
    log = store.requestLog();
    destination = "door-" + ProcessHandle.current().pid() + "-" + UNIQUE.incrementAndGet();
  }

  @AfterEach
  void close() {
    store.close();
  }

  private RequestLog.Sent sent(String job, long atMicros, long latenessMicros) {
    return new RequestLog.Sent(destination, job, "w1", T0 + atMicros, latenessMicros, 0, 200);
  }

  @Test
  void theBusiestWindowIsHalfOpenAndCountsEveryJobOfTheDestination() throws Exception {
    List<RequestLog.Sent> rows = new ArrayList<>();
    // 7/s for 2 s from job a: a window [t, t + 1 s) holds 7 of them.
    for (int i = 0; i < 14; i++) {
      rows.add(sent("a", i * 1_000_000L / 7, 1000 + i));
    }
    log.append(UUID.randomUUID(), rows);
    Instant from = Instant.ofEpochSecond(0, (T0 - 1) * 1000);
    RequestLog.DoorFigures door = log.destinationSince(destination, from);
    assertThat(door.requests()).isEqualTo(14);
    assertThat(door.busiestOneSecondWindow()).isEqualTo(7);
    assertThat(door.achievedRatePerSecond()).isCloseTo(7.0, offset(0.01));

    // The 8th request of job a, exactly 1 s after the first, is outside the first's window;
    // one 999,999 µs after it is inside.
    log.append(UUID.randomUUID(), List.of(sent("b", 999_999, 5000)));
    door = log.destinationSince(destination, from);
    assertThat(door.busiestOneSecondWindow()).isEqualTo(8);
    assertThat(door.latenessMaxMillis()).isEqualTo(5.0);
    assertThat(log.duringJob("b", destination).requests())
        .as("during job b (one instant): only what was sent at that instant")
        .isEqualTo(1);
    assertThat(log.duringJob("a", destination).requests()).isEqualTo(15);
  }

  /**
   * On a worker's store, whose sessions commit asynchronously, an append still commits durably: a
   * trigger on the log, in a database of the test's own, notes the setting its transaction ran
   * with.
   */
  @Test
  void anAppendOnAWorkersAsynchronousStoreCommitsDurably() throws Exception {
    String name = "request_log_" + ProcessHandle.current().pid() + "_" + UNIQUE.incrementAndGet();
    TestDatabase.execute("CREATE DATABASE " + name);
    try (WorkState worker =
        WorkState.forWorker(
            new Database(TestDatabase.postgres().getJdbcUrl("postgres", name)), 1)) {
      worker.ensureSchema();
      try (Connection c =
              DriverManager.getConnection(TestDatabase.postgres().getJdbcUrl("postgres", name));
          Statement s = c.createStatement()) {
        s.execute("CREATE TABLE commit_mode_seen (setting text)");
        s.execute(
            "CREATE FUNCTION note_commit_mode() RETURNS trigger LANGUAGE plpgsql AS"
                + " $$BEGIN INSERT INTO commit_mode_seen"
                + " VALUES (current_setting('synchronous_commit')); RETURN NULL; END$$");
        s.execute(
            "CREATE TRIGGER note_commit_mode AFTER INSERT ON pacer_request"
                + " FOR EACH STATEMENT EXECUTE FUNCTION note_commit_mode()");
        worker.requestLog().append(UUID.randomUUID(), List.of(sent("a", 0, 0)));
        List<String> seen = new ArrayList<>();
        try (ResultSet r = s.executeQuery("SELECT setting FROM commit_mode_seen")) {
          while (r.next()) {
            seen.add(r.getString(1));
          }
        }
        assertThat(seen).containsExactly("on");
      }
    } finally {
      TestDatabase.execute("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)");
    }
  }

  @Test
  void latenessPercentilesAreTheRequestsOwn() throws Exception {
    List<RequestLog.Sent> rows = new ArrayList<>();
    for (int i = 1; i <= 100; i++) {
      rows.add(sent("a", i * 200_000L, i * 1000L)); // 1..100 ms
    }
    log.append(UUID.randomUUID(), rows);
    RequestLog.DoorFigures door = log.duringJob("a", destination);
    assertThat(door.latenessP50Millis()).isEqualTo(50.0);
    assertThat(door.latenessP99Millis()).isEqualTo(99.0);
    assertThat(door.latenessMaxMillis()).isEqualTo(100.0);
    assertThat(door.busiestOneSecondWindow()).isEqualTo(5);
  }

  @Test
  void theDatabaseClockOffsetIsSmallOnOneHost() throws Exception {
    log.sampleClock();
    Instant wall = Instant.now();
    long database = log.databaseEpochMicros(System.nanoTime(), 0);
    long wallMicros = wall.getEpochSecond() * 1_000_000L + wall.getNano() / 1000;
    assertThat(Math.abs(database - wallMicros)).isLessThan(50_000);
  }

  @Test
  void aStampIsTheWallClockUntilTheDatabaseClockWasRead() throws Exception {
    assertThat(log.databaseEpochMicros(System.nanoTime(), 42)).isEqualTo(42);
  }
}
