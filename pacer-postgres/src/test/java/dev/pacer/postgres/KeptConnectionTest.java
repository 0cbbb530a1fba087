package dev.pacer.postgres;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.pacer.TimeSource;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * Work whose statement committed and whose answer was lost with the connection, on a real
 * PostgreSQL behind a {@link TcpProxy} that cuts the connection when the server's ReadyForQuery for
 * the statement arrives: {@code call} does such work twice, {@code callOnce} once, and says that
 * its outcome is unknown.
 */
class KeptConnectionTest {

  private static OutagePolicy policy() {
    return new OutagePolicy(
        "test", Duration.ofSeconds(5), TimeSource.SYSTEM, OutagePolicy.Scheduler.none(), () -> {});
  }

  private static KeptConnection kept(TcpProxy proxy, OutagePolicy policy) {
    String url =
        "jdbc:postgresql://127.0.0.1:"
            + proxy.port()
            + "/postgres?user=postgres&sslmode=disable&gssEncMode=disable";
    return KeptConnection.whenUnavailable(
        policy, () -> DriverManager.getConnection(url), Duration.ofSeconds(10));
  }

  private static String freshTable() {
    String table = "kept_" + UUID.randomUUID().toString().substring(0, 8);
    TestDatabase.execute("CREATE TABLE " + table + " (n int)");
    return table;
  }

  private static int insert(Connection c, String table) throws SQLException {
    try (PreparedStatement s = c.prepareStatement("INSERT INTO " + table + " VALUES (1)")) {
      return s.executeUpdate();
    }
  }

  private static long rows(String table) throws SQLException {
    try (Connection c = TestDatabase.connect();
        Statement s = c.createStatement();
        ResultSet r = s.executeQuery("SELECT count(*) FROM " + table)) {
      r.next();
      return r.getLong(1);
    }
  }

  /** A first call, so that the connection the work runs on is a reused one: the retry's case. */
  private static void warm(KeptConnection kept) throws SQLException {
    assertThat(kept.<Boolean>call(c -> c.isValid(1))).isTrue();
  }

  @Test
  void callOnceWhoseAnswerIsLostAfterItCommittedIsNotDoneAgainAndAnswersOutcomeUnknown()
      throws Exception {
    String table = freshTable();
    OutagePolicy policy = policy();
    try (TcpProxy proxy = new TcpProxy(TestDatabase.port());
        KeptConnection kept = kept(proxy, policy)) {
      warm(kept);
      proxy.loseTheAnswerTo("INSERT INTO " + table);

      assertThatThrownBy(() -> kept.callOnce(c -> insert(c, table)))
          .isInstanceOfSatisfying(
              SQLException.class,
              e -> assertThat(KeptConnection.isOutcomeUnknown(e)).as(e.toString()).isTrue());
      assertThat(proxy.answersLost()).isEqualTo(1);
      assertThat(rows(table)).as("done once: its answer was lost, not the work").isEqualTo(1);
      assertThat(policy.isDown())
          .as("the replacement connection opened: the database answers, no outage")
          .isFalse();
      assertThat(kept.isConnected()).isTrue();
      assertThat(kept.<Integer>callOnce(c -> insert(c, table))).isEqualTo(1);
      assertThat(rows(table)).isEqualTo(2);
    }
  }

  @Test
  void callDoesWorkWhoseAnswerIsLostAfterItCommittedTwice() throws Exception {
    // What callOnce is for: the proxy reproduces a commit whose answer was lost, which call, for
    // work that may be done twice, cannot tell from a connection that died between calls.
    String table = freshTable();
    OutagePolicy policy = policy();
    try (TcpProxy proxy = new TcpProxy(TestDatabase.port());
        KeptConnection kept = kept(proxy, policy)) {
      warm(kept);
      proxy.loseTheAnswerTo("INSERT INTO " + table);

      assertThat(kept.<Integer>call(c -> insert(c, table))).isEqualTo(1);
      assertThat(proxy.answersLost()).isEqualTo(1);
      assertThat(rows(table)).isEqualTo(2);
      assertThat(policy.isDown()).isFalse();
    }
  }

  @Test
  void callOnceOnAFreshConnectionThatIsLostAnswersOutcomeUnknownAndCountsAnOutage()
      throws Exception {
    String table = freshTable();
    OutagePolicy policy = policy();
    try (TcpProxy proxy = new TcpProxy(TestDatabase.port());
        KeptConnection kept = kept(proxy, policy)) {
      proxy.loseTheAnswerTo("INSERT INTO " + table);

      assertThatThrownBy(() -> kept.callOnce(c -> insert(c, table)))
          .isInstanceOfSatisfying(
              SQLException.class,
              e -> assertThat(KeptConnection.isOutcomeUnknown(e)).as(e.toString()).isTrue());
      assertThat(rows(table)).isEqualTo(1);
      assertThat(policy.isDown())
          .as("a connection lost in its first call is no connection that died between calls")
          .isTrue();
    }
  }

  @Test
  void callOnceWhoseStatementFailsThrowsItsFailureAsItIs() throws Exception {
    OutagePolicy policy = policy();
    try (TcpProxy proxy = new TcpProxy(TestDatabase.port());
        KeptConnection kept = kept(proxy, policy)) {
      assertThatThrownBy(() -> kept.callOnce(c -> insert(c, "kept_no_such_table")))
          .isInstanceOfSatisfying(
              SQLException.class, e -> assertThat(e.getSQLState()).isEqualTo("42P01"));
      assertThat(policy.isDown()).isFalse();
    }
  }
}
