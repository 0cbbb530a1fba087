package dev.pacer.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.cli.db.Database;
import dev.pacer.cli.db.FrontierStore.HostCeiling;
import dev.pacer.cli.db.RequestLog;
import dev.pacer.cli.db.WorkState;
import dev.pacer.postgres.TestDatabase;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * {@code pacer status} on a per-host job, on a real PostgreSQL: the busiest hosts of the last
 * minute against their ceilings, the hosts paused and backed off, the hosts locked out, the backlog
 * by host, each list cut to {@code --hosts} with the rest counted; and the hosts' cursors kept out
 * of the destinations' list.
 */
class PerHostStatusTest {

  private final String job = "status-hosts-" + ProcessHandle.current().pid();

  /** A host name of this test only: cursor rows are shared by name across tests. */
  private String host(String label) {
    return label + "." + job + ".test";
  }

  @Test
  void showsTheBusiestPausedLockedOutAndBackedUpHosts() throws Exception {
    // Hosts a..e with 30, 20, 10, 5 and 1 items; a at 2/s, the others at 1/s.
    Map<String, Integer> items = new LinkedHashMap<>();
    items.put(host("a"), 30);
    items.put(host("b"), 20);
    items.put(host("c"), 10);
    items.put(host("d"), 5);
    items.put(host("e"), 1);
    List<String> urls = new ArrayList<>();
    Map<String, HostCeiling> ceilings = new LinkedHashMap<>();
    items.forEach(
        (h, n) -> {
          ceilings.put(h, new HostCeiling(h.equals(host("a")) ? 2 : 1, 4));
          for (int i = 0; i < n; i++) {
            urls.add("http://" + h + "/" + i);
          }
        });
    try (WorkState state = new WorkState(new Database(TestDatabase.jdbcUrl()))) {
      RequestLog log = state.requestLog();
      state.ensureSchema();
      state.jobs().enqueue(UUID.randomUUID().toString(), job, RunOptions.perHostName(job), 1, urls);
      state.frontier().plan(job, ceilings);
      Instant now = log.databaseNow();
      long nowMicros = now.getEpochSecond() * 1_000_000L + now.getNano() / 1000;
      List<RequestLog.Sent> sent = new ArrayList<>();
      // a: 4 requests 0.2 s apart by this job and one by another job within the same second: 5 in
      // a 1-s window against its ceiling of 2/s (+ 1): exceeded, whoever sent them.
      for (int i = 0; i < 4; i++) {
        sent.add(
            new RequestLog.Sent(
                host("a"), job, "w", nowMicros - 10_000_000 + i * 200_000, 0, 0, 200));
      }
      sent.add(
          new RequestLog.Sent(host("a"), job + "-other", "w", nowMicros - 9_100_000, 0, 0, 200));
      // e: 2 requests 1 s apart, kept; c: one request 2 minutes ago, outside the last minute.
      sent.add(new RequestLog.Sent(host("e"), job, "w", nowMicros - 5_000_000, 0, 0, 200));
      sent.add(new RequestLog.Sent(host("e"), job, "w", nowMicros - 4_000_000, 0, 0, 200));
      sent.add(new RequestLog.Sent(host("c"), job, "w", nowMicros - 120_000_000, 0, 0, 200));
      log.append(java.util.UUID.randomUUID(), sent);
    }
    // b paused by its Retry-After and backed off; c backed off only; d locked out.
    TestDatabase.execute(
        "INSERT INTO pacer_cursor (name, next_at, updated_at, paused_until,"
            + " backoff) VALUES ('"
            + host("b")
            + "', now(), now(), now() + interval '30 s', 4),"
            + " ('"
            + host("c")
            + "', now(), now(), null, 2)");
    TestDatabase.execute(
        "INSERT INTO pacer_cursor_lockout (name, reason, locked_at) VALUES ('"
            + host("d")
            + "', '403 Forbidden', now())");

    Cli.Result status =
        Cli.run("status", "--job", job, "--hosts", "2", "--db", TestDatabase.jdbcUrl());
    System.out.println(status.out());
    assertThat(status.code()).as(status.err()).isZero();
    String out = status.out();

    assertThat(out).containsPattern("\n  " + job + " +per host: 5 host\\(s\\) +0/66 done");
    assertThat(out)
        .contains(
            "    busiest hosts in the last 60 s: 7 request(s) to 2 host(s),"
                + " 1 above ceiling + 1 in a 1-s window\n");
    assertThat(out)
        .containsPattern(
            "\n      "
                + host("a")
                + " +5 request\\(s\\)  busiest 1-s"
                + " window +5  ceiling 2/s: EXCEEDED\n");
    assertThat(out)
        .containsPattern(
            "\n      "
                + host("e")
                + " +2 request\\(s\\)  busiest 1-s"
                + " window +1  ceiling 1/s: kept\n");

    assertThat(out).contains("    held back: 2 host(s), 1 paused by their Retry-After");
    assertThat(out)
        .containsPattern(
            "\n      " + host("b") + " +PAUSED for \\d+\\.\\d s more" + "  backoff x4 ");
    assertThat(out).containsPattern("\n      " + host("c") + " +backoff x2 ");

    assertThat(out).contains("    locked out: 1 host(s), their 5 open item(s) passed over;");
    assertThat(out)
        .containsPattern(
            "\n      "
                + host("d")
                + " +LOCKED OUT since .*: 403"
                + " Forbidden; 5 open item\\(s\\)\n");

    // The slowest to drain is b (20 at 1/s), not a (30 at 2/s), the host with the most.
    assertThat(out)
        .contains(
            "    backlog: 66 open item(s) over 5 host(s); slowest to drain: "
                + host("b")
                + ", 20 open at 1/s: at least 20 s\n");
    assertThat(out)
        .containsPattern(
            "\n      "
                + host("a")
                + " +30 open at 2/s: at least 15 s\n"
                + "      "
                + host("b")
                + " +20 open at 1/s: at least 20 s\n"
                + "      \\.\\.\\. and 3 more host\\(s\\), 16 open item\\(s\\)\n");

    String destinations = out.substring(out.indexOf("\nDestinations"));
    assertThat(destinations).doesNotContain(job).contains("host(s) of per-host jobs");
  }

  @Test
  void aBadHostsCountIsNamed() {
    Cli.Result status = Cli.run("status", "--hosts", "0", "--db", TestDatabase.jdbcUrl());
    assertThat(status.code()).isEqualTo(Main.EXIT_USAGE);
    assertThat(status.err()).contains("--hosts must be 1-10000, got 0");
  }
}
