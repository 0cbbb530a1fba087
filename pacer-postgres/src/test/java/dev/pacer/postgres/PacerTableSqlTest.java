package dev.pacer.postgres;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.pacer.BackoffScope;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

class PacerTableSqlTest {

  private static final String TABLE = "pacer_table_sql_test";

  @Test
  void aTableNameThatIsNotAnIdentifierIsRefusedBeforeAnySql() {
    assertThatThrownBy(() -> PacerTableSql.createTable("pacer_cursor; DROP TABLE x"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("table");
    assertThatThrownBy(() -> PacerTableSql.countCleanAnswers("a b"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("table");
  }

  @Test
  void cleanAnswersHalveTheMultiplierAtTheLibrarysCountAndTouchOnlyRowsBackedOff()
      throws SQLException {
    TestDatabase.execute(PacerTableSql.createTable(TABLE));
    TestDatabase.execute("DELETE FROM " + TABLE);
    int halve = BackoffScope.CLEAN_ANSWERS_TO_HALVE;
    TestDatabase.execute(
        "INSERT INTO "
            + TABLE
            + " (name, next_at, updated_at, backoff, clean)"
            + " VALUES ('reaches', now(), now(), 4, "
            + (halve - 10)
            + "),"
            + " ('short', now(), now(), 8, "
            + (halve - 60)
            + "),"
            + " ('not-backed-off', now(), now(), 1, 0)");
    Map<String, Integer> clean = new LinkedHashMap<>();
    clean.put("reaches", 10);
    clean.put("short", 20);
    clean.put("not-backed-off", 5);
    clean.put("no-row", 500);
    try (Connection c = TestDatabase.connect();
        PreparedStatement s = c.prepareStatement(PacerTableSql.countCleanAnswers(TABLE))) {
      s.setArray(1, c.createArrayOf("text", clean.keySet().toArray()));
      s.setArray(2, c.createArrayOf("integer", clean.values().toArray()));
      assertThat(s.executeUpdate()).isEqualTo(2);
    }
    assertThat(row("reaches")).isEqualTo("2/0");
    assertThat(row("short")).isEqualTo("8/" + (halve - 40));
    assertThat(row("not-backed-off")).isEqualTo("1/0");
  }

  /** A row's backoff and clean answers, as "backoff/clean". */
  private static String row(String name) throws SQLException {
    try (Connection c = TestDatabase.connect();
        PreparedStatement s =
            c.prepareStatement("SELECT backoff, clean FROM " + TABLE + " WHERE name = ?")) {
      s.setString(1, name);
      try (ResultSet r = s.executeQuery()) {
        r.next();
        return r.getInt(1) + "/" + r.getInt(2);
      }
    }
  }
}
