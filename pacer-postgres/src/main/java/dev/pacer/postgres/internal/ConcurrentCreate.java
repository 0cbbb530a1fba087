package dev.pacer.postgres.internal;

import java.sql.SQLException;
import java.sql.Statement;
import java.util.Set;

/**
 * Creating tables that several processes may create at once. {@code CREATE TABLE IF NOT EXISTS}
 * does not hold against a concurrent creator: the statement that loses the race fails on the
 * winner's catalog rows, as a unique violation in a catalog (23505), a duplicate of the table's row
 * type (42710) or a duplicate table (42P07). By then the winner's creation has committed, so the
 * loser runs its script once more, and it passes over what now exists. A clash that is not a race
 * (a type or a view of the table's name) fails the second time too, and that error is thrown.
 */
public final class ConcurrentCreate {

  private static final Set<String> LOST_RACE = Set.of("23505", "42710", "42P07");

  private ConcurrentCreate() {}

  /**
   * Runs {@code ddl}, a script of {@code IF NOT EXISTS} creations, once more if it lost a race to
   * another creator.
   *
   * @throws SQLException what the script threw, the second time if it lost a race the first
   */
  public static void execute(Statement s, String ddl) throws SQLException {
    try {
      s.execute(ddl);
    } catch (SQLException e) {
      if (!LOST_RACE.contains(e.getSQLState())) {
        throw e;
      }
      s.execute(ddl);
    }
  }
}
