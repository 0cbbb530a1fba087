package dev.pacer.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.Destination;
import dev.pacer.postgres.internal.CursorSql;
import dev.pacer.testing.FakeTime;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.OptionalInt;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * The census of the processes taking turns, on a real server: each census counts the others that
 * stamped the destination within the window, forgets those that stopped, and bounds what rows it
 * did not write can make it answer. The stamps' ages are the server's, so the window here is short
 * and real; the census's own period and the age of what it remembers run on a fake clock.
 */
class FetcherCensusTest {

  private static final Duration SHORT_WINDOW = Duration.ofMillis(800);

  private final FakeTime time = new FakeTime();
  private final String table = "census_" + UUID.randomUUID().toString().substring(0, 8);
  private final CursorSql sql = CursorSql.pacerTable(table);

  private FetcherCensus census(Duration window) {
    return new FetcherCensus(
        sql.census().statement(), time, FetcherCensus.PERIOD, window, this::createTable);
  }

  private void createTable(Connection c) throws SQLException {
    try (Statement s = c.createStatement()) {
      s.execute(sql.census().createTable());
    }
  }

  @Test
  void eachProcessCountsTheOthersThatTookTurnsWithinTheWindow() throws Exception {
    try (Connection c = TestDatabase.connect()) {
      FetcherCensus first = census(SHORT_WINDOW);
      FetcherCensus second = census(SHORT_WINDOW);
      first.note("api");
      first.takeIfDue(c);
      assertThat(first.processes("api"))
          .as("the census's table is made at the first census")
          .isEqualTo(OptionalInt.of(1));
      second.note("api");
      second.note("other");
      second.takeIfDue(c);
      assertThat(second.processes("api")).isEqualTo(OptionalInt.of(2));
      assertThat(second.processes("other")).isEqualTo(OptionalInt.of(1));

      first.note("api");
      first.takeIfDue(c);
      assertThat(first.censuses()).as("within a period: no census").isEqualTo(1);
      time.advance(FetcherCensus.PERIOD);
      first.takeIfDue(c);
      assertThat(first.censuses()).isEqualTo(2);
      assertThat(first.processes("api")).isEqualTo(OptionalInt.of(2));

      // The second stops taking turns; a window later the first no longer counts it, and its
      // stamp is gone.
      Thread.sleep(SHORT_WINDOW.toMillis() + 200);
      time.advance(FetcherCensus.PERIOD);
      first.note("api");
      first.takeIfDue(c);
      assertThat(first.processes("api")).isEqualTo(OptionalInt.of(1));
      assertThat(rows(c, "api")).isEqualTo(1);
    }
  }

  @Test
  void aCensusStampsABoundedNumberOfDestinationsAndTheRestSoonAfter() throws Exception {
    try (Connection c = TestDatabase.connect()) {
      FetcherCensus census = census(FetcherCensus.WINDOW);
      int keys = FetcherCensus.MOST_KEYS_PER_CENSUS + 10;
      for (int i = 0; i < keys; i++) {
        census.note("host-" + i);
      }
      census.takeIfDue(c);
      assertThat(census.processes("host-0")).isEqualTo(OptionalInt.of(1));
      assertThat(census.processes("host-" + (keys - 1))).as("left for the next census").isEmpty();
      time.advance(FetcherCensus.PERIOD.dividedBy(8).minusNanos(1));
      census.takeIfDue(c);
      assertThat(census.censuses()).isEqualTo(1);
      time.advance(Duration.ofNanos(1));
      census.takeIfDue(c);
      assertThat(census.censuses()).as("an eighth of a period later").isEqualTo(2);
      assertThat(census.processes("host-" + (keys - 1))).isEqualTo(OptionalInt.of(1));
      assertThat(census.processes("host-0")).as("still known").isEqualTo(OptionalInt.of(1));
    }
  }

  @Test
  void whatACensusLearnedIsForgottenAWindowLater() throws Exception {
    try (Connection c = TestDatabase.connect()) {
      FetcherCensus census = census(FetcherCensus.WINDOW);
      census.note("api");
      census.takeIfDue(c);
      time.advance(FetcherCensus.WINDOW.minusNanos(1));
      assertThat(census.processes("api")).isEqualTo(OptionalInt.of(1));
      time.advance(Duration.ofNanos(1));
      assertThat(census.processes("api")).isEmpty();
      assertThat(census.processes("never")).isEmpty();
    }
  }

  @Test
  void rowsItDidNotWriteCountAtMostTheCapAndStampsOutsideTheWindowNotAtAll() throws Exception {
    try (Connection c = TestDatabase.connect()) {
      FetcherCensus census = census(FetcherCensus.WINDOW);
      census.note("api");
      census.takeIfDue(c);
      try (Statement s = c.createStatement()) {
        s.execute(
            "INSERT INTO "
                + table
                + "_fetcher (name, process, seen_at)"
                + " SELECT 'api', 'foreign-' || i, now() FROM generate_series(1, 1000) AS i");
        s.execute(
            "INSERT INTO "
                + table
                + "_fetcher (name, process, seen_at) VALUES"
                + " ('solo', 'ahead', 'infinity'), ('solo', 'behind', '-infinity'),"
                + " ('solo', 'long-ago', now() - interval '1 hour')");
      }
      time.advance(FetcherCensus.PERIOD);
      census.note("api");
      census.note("solo");
      census.takeIfDue(c);
      assertThat(census.processes("api"))
          .isEqualTo(OptionalInt.of(Destination.MOST_PROCESSES_COUNTED));
      assertThat(census.processes("solo")).isEqualTo(OptionalInt.of(1));
      assertThat(rows(c, "solo")).as("only its own stamp is left").isEqualTo(1);
    }
  }

  @Test
  void aCensusThatFailsCostsOnlyTheCensus() throws Exception {
    try (Connection c = TestDatabase.connect()) {
      FetcherCensus census =
          new FetcherCensus(
              sql.census().statement(),
              time,
              FetcherCensus.PERIOD,
              FetcherCensus.WINDOW,
              ignored -> {
                throw new SQLException("no table for you", "42501");
              });
      census.note("api");
      census.takeIfDue(c);
      assertThat(census.processes("api")).isEmpty();
      try (Statement s = c.createStatement();
          ResultSet r = s.executeQuery("SELECT 1")) {
        assertThat(r.next()).as("the connection still answers").isTrue();
      }
    }
  }

  private int rows(Connection c, String name) throws SQLException {
    try (PreparedStatement s =
        c.prepareStatement("SELECT count(*) FROM " + table + "_fetcher WHERE name = ?")) {
      s.setString(1, name);
      try (ResultSet r = s.executeQuery()) {
        r.next();
        return r.getInt(1);
      }
    }
  }
}
