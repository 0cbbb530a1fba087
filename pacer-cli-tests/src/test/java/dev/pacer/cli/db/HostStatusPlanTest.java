package dev.pacer.cli.db;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.postgres.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.Locale;
import org.junit.jupiter.api.Test;

/**
 * {@code pacer status}'s per-host statements read the job through indexes: no sequential scan of
 * the items or the request log, in the plans PostgreSQL makes for a job of {@value #HOSTS} hosts x
 * {@value #ITEMS_PER_HOST} items (analysed, as {@code FrontierStore.plan} leaves it), beside an
 * earlier job of the same size. The job's frontier rows, one per host, are half the frontier table
 * here, which the planner may read whole, once per statement: that is one read of the hosts, not
 * one per host. Each statement's time is printed. {@code -Dpacer.statusHosts=10000} runs it at
 * 10,000 hosts (100,000 items), the size docs/cli.md reports. Written without its {@code OFFSET 0},
 * the busiest hosts' statement reads the request log whole, and this fails.
 */
class HostStatusPlanTest {

  private static final int HOSTS = 1_000;
  private static final int ITEMS_PER_HOST = 10;

  /**
   * Requests per host in the request log: one in the last minute, the others 10, 20, … minutes
   * before (the log keeps every request of every run).
   */
  private static final int REQUESTS_PER_HOST = 6;

  @Test
  void theStatusStatementsReadTheJobThroughIndexes() throws Exception {
    int hosts = Integer.getInteger("pacer.statusHosts", HOSTS);
    String job = "status-plan-" + ProcessHandle.current().pid() + "-" + hosts;
    String host = "'h' || g || '." + job + ".test'";
    try (WorkState state = new WorkState(new Database(TestDatabase.jdbcUrl()))) {
      state.ensureSchema();
      state.frontier().plan(job + "-none", java.util.Map.of()); // the cursors' tables
    }
    long started = System.nanoTime();
    // An earlier job over the same hosts, done, as a database that has run jobs holds it.
    String earlier = job + "-earlier";
    TestDatabase.execute(
        "INSERT INTO pacer_job (name, destination, ceiling) VALUES ('"
            + earlier
            + "', 'per-host:"
            + earlier
            + "', 1);"
            + " INSERT INTO pacer_frontier (job, host, rate, interval_us, max_in_flight, active)"
            + "   SELECT '"
            + earlier
            + "', "
            + host
            + ", 0.5, 2000000, 2, false"
            + "   FROM generate_series(1, "
            + hosts
            + ") g;"
            + " INSERT INTO pacer_item (job, url_key, url, host, state)"
            + "   SELECT '"
            + earlier
            + "', md5(g || '/' || i), 'http://' || "
            + host
            + " || '/' || i, "
            + host
            + ", 'done' FROM generate_series(1, "
            + hosts
            + ") g, generate_series(1, "
            + ITEMS_PER_HOST
            + ") i; INSERT INTO pacer_request (destination, job, worker, sent_at, lateness_us, hop,"
            + " status)   SELECT "
            + host
            + ", '"
            + earlier
            + "', 'w', clock_timestamp() - (7200 + g % 50 + 600"
            + "   * r) * interval '1 second', 0, 0, 200"
            + "   FROM generate_series(1, "
            + hosts
            + ") g, generate_series(0, "
            + (REQUESTS_PER_HOST - 1)
            + ") r;");
    TestDatabase.execute(
        "INSERT INTO pacer_job (name, destination, ceiling) VALUES ('"
            + job
            + "', 'per-host:"
            + job
            + "', 1);"
            + " INSERT INTO pacer_frontier (job, host, rate, interval_us, max_in_flight)"
            + "   SELECT '"
            + job
            + "', "
            + host
            + ", 0.5, 2000000, 2 FROM generate_series(1, "
            + hosts
            + ") g;"
            + " INSERT INTO pacer_item (job, url_key, url, host, state)"
            + "   SELECT '"
            + job
            + "', md5(g || '/' || i), 'http://' || "
            + host
            + " || '/' || i, "
            + host
            + ", CASE WHEN i <= 2 THEN 'done' WHEN i = 3 THEN 'leased' ELSE 'pending' END"
            + "   FROM generate_series(1, "
            + hosts
            + ") g, generate_series(1, "
            + ITEMS_PER_HOST
            + ") i; INSERT INTO pacer_request (destination, job, worker, sent_at, lateness_us, hop,"
            + " status)   SELECT "
            + host
            + ", '"
            + job
            + "', 'w', clock_timestamp() - (g % 50 + 600 * r)"
            + "   * interval '1 second', 0, 0, 200"
            + "   FROM generate_series(1, "
            + hosts
            + ") g, generate_series(0, "
            + (REQUESTS_PER_HOST - 1)
            + ") r;"
            + " INSERT INTO pacer_cursor (name, next_at, updated_at, paused_until, backoff)"
            + "   SELECT "
            + host
            + ", now(), now(), CASE WHEN g % 100 = 0 THEN now()"
            + "   + interval '30 s' END, CASE WHEN g % 50 = 0 THEN 4 ELSE 1 END"
            + "   FROM generate_series(1, "
            + hosts
            + ") g;"
            + " INSERT INTO pacer_cursor_lockout (name, reason, locked_at)"
            + "   SELECT "
            + host
            + ", '403', now() FROM generate_series(1, "
            + hosts
            + ") g"
            + "   WHERE g % 100 = 1;"
            + " ANALYZE pacer_item; ANALYZE pacer_frontier; ANALYZE pacer_request;"
            + " ANALYZE pacer_cursor; ANALYZE pacer_cursor_lockout");
    System.out.printf(
        Locale.ROOT,
        "status plans: %,d hosts, %,d items, %,d requests made in" + " %.1f s%n",
        hosts,
        hosts * ITEMS_PER_HOST,
        hosts * REQUESTS_PER_HOST,
        (System.nanoTime() - started) / 1e9);

    try (Connection c = TestDatabase.connect()) {
      check(
          c,
          "frontier",
          "SELECT count(*), coalesce(sum(rate), 0) FROM pacer_frontier" + " WHERE job = ?",
          job);
      check(c, "busiest hosts", RequestLog.BUSIEST_HOSTS, job, 60_000_000L, 60_000_000L, job, 10);
      check(c, "held back", HostStatus.heldBackSql("pacer_cursor"), job, 10);
      check(c, "locked out", HostStatus.lockedOutSql("pacer_cursor_lockout"), job, 10);
      check(c, "backlog", HostStatus.BACKLOG, job, job, 10);
      check(c, "passed over", HostStatus.PASSED_OVER, job, 10);
    }
  }

  private static void check(Connection c, String name, String sql, Object... parameters)
      throws Exception {
    StringBuilder plan = new StringBuilder();
    try (PreparedStatement s = c.prepareStatement("EXPLAIN (ANALYZE, COSTS OFF) " + sql)) {
      for (int i = 0; i < parameters.length; i++) {
        s.setObject(i + 1, parameters[i]);
      }
      try (ResultSet r = s.executeQuery()) {
        while (r.next()) {
          plan.append(r.getString(1)).append('\n');
        }
      }
    }
    String text = plan.toString();
    String time = text.lines().filter(l -> l.startsWith("Execution Time")).findFirst().orElse("?");
    System.out.printf(Locale.ROOT, "status plan, %s: %s%n%s", name, time, text);
    assertThat(text)
        .as(name)
        .doesNotContain("Seq Scan on pacer_item")
        .doesNotContain("Seq Scan on pacer_request");
  }
}
