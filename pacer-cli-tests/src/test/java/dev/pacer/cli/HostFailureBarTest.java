package dev.pacer.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.cli.db.Database;
import dev.pacer.cli.db.WorkState;
import dev.pacer.postgres.PacerTableSql;
import dev.pacer.postgres.TestDatabase;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The failure bar per host ({@code pacer fetch --per-host}): a host that fails its items is passed
 * over, its open items deferred to the next run, while the job goes on with the other hosts; the
 * job is never halted for it, and answers about the items themselves (404) fail no host.
 */
class HostFailureBarTest {

  private static final int RATE = 10;

  /** Each failing host's items: 6 s of its turns, against the bar's 5 failures. */
  private static final int FAILING_ITEMS = 60;

  private static final int HEALTHY_ITEMS = 20;

  @TempDir Path dir;
  private LoopbackHosts hosts;

  @BeforeEach
  void start() throws Exception {
    hosts = new LoopbackHosts(3);
    // The hosts' cursor rows are shared by name with every earlier test of this JVM.
    try (WorkState state = new WorkState(new Database(TestDatabase.jdbcUrl()))) {
      state.ensureSchema();
    }
    TestDatabase.execute(PacerTableSql.createTable("pacer_cursor"));
    TestDatabase.execute(
        "DELETE FROM pacer_cursor WHERE name LIKE '127.0.%';"
            + " DELETE FROM pacer_cursor_lockout WHERE name LIKE '127.0.%'");
  }

  @AfterEach
  void stop() {
    hosts.close();
  }

  @Test
  void aFailingHostIsPassedOverAndTheJobGoesOnWithTheOthers() throws Exception {
    String erring = hosts.hosts().get(0);
    String refusing = hosts.hosts().get(1);
    String healthy = hosts.hosts().get(2);
    List<String> urls = new ArrayList<>(hosts.urls(0, FAILING_ITEMS));
    urls.addAll(hosts.urls(1, FAILING_ITEMS));
    urls.addAll(hosts.urls(2, HEALTHY_ITEMS + 2));
    hosts.refusing(1);
    Set<String> deadPaths = Set.of("/item/" + (HEALTHY_ITEMS + 1), "/item/" + (HEALTHY_ITEMS + 2));
    String job = "host-bar-" + ProcessHandle.current().pid() + "-" + System.nanoTime();
    Path input = Files.write(dir.resolve(job + ".txt"), urls);
    hosts.answeringByPath(
        (host, path) -> host.equals(erring) ? 500 : deadPaths.contains(path) ? 404 : 200);

    Cli.Result run =
        Cli.run(
            "fetch",
            input.toString(),
            "--job",
            job,
            "--per-host",
            "--rate",
            Integer.toString(RATE),
            "--concurrency",
            "2",
            "--threads",
            "6",
            "--db",
            TestDatabase.jdbcUrl(),
            "--out",
            dir.resolve("out").toString(),
            "--max-load",
            "1000",
            "--no-progress");

    assertThat(run.code()).as(run.err()).isEqualTo(0);
    assertThat(run.text("haltedBar")).isEqualTo("null");
    assertThat(run.number("done")).as(run.err()).isEqualTo(HEALTHY_ITEMS);
    assertThat(run.number("pending")).isZero();
    Map<String, Map<String, Long>> states = states(job);
    assertThat(states.get(healthy))
        .as("the healthy host, its two dead links failed, not passed" + " over")
        .isEqualTo(Map.of("done", (long) HEALTHY_ITEMS, "failed", 2L));
    for (String failing : List.of(erring, refusing)) {
      assertThat(states.get(failing)).as(failing).containsKey("deferred");
      assertThat(states.get(failing).keySet()).as(failing).isSubsetOf("deferred", "failed");
      assertThat(run.err()).contains("pacer: host " + failing + " was passed over: ");
    }
    assertThat(run.err())
        .contains("HTTP 500 from http://" + erring, "network error for http://" + refusing);
    long asked =
        hosts.arrivals().stream()
            .filter(a -> a.host().equals(erring))
            .map(LoopbackHosts.Arrival::path)
            .distinct()
            .count();
    assertThat(asked)
        .as("items of the erring host asked before it was passed over")
        .isLessThan(FAILING_ITEMS);
    assertThat(lastError(job, erring)).startsWith("host passed over: ");

    Cli.Result status = Cli.run("status", "--job", job, "--db", TestDatabase.jdbcUrl());
    assertThat(status.out()).contains("passed over: 2 host(s)", erring, refusing);
  }

  /** Each host's items by state. */
  private static Map<String, Map<String, Long>> states(String job) throws Exception {
    Map<String, Map<String, Long>> out = new TreeMap<>();
    try (Connection c = TestDatabase.connect();
        PreparedStatement s =
            c.prepareStatement(
                "SELECT host, state, count(*) FROM pacer_item WHERE job = ? GROUP BY host,"
                    + " state")) {
      s.setString(1, job);
      try (ResultSet r = s.executeQuery()) {
        while (r.next()) {
          out.computeIfAbsent(r.getString(1), h -> new TreeMap<>())
              .put(r.getString(2), r.getLong(3));
        }
      }
    }
    return out;
  }

  /** The reason recorded on one of the host's deferred items. */
  private static String lastError(String job, String host) throws Exception {
    try (Connection c = TestDatabase.connect();
        PreparedStatement s =
            c.prepareStatement(
                "SELECT last_error FROM pacer_item WHERE job = ? AND host = ? AND state ="
                    + " 'deferred' LIMIT 1")) {
      s.setString(1, job);
      s.setString(2, host);
      try (ResultSet r = s.executeQuery()) {
        assertThat(r.next()).isTrue();
        return r.getString(1);
      }
    }
  }
}
