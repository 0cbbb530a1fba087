package dev.pacer.bench;

import dev.pacer.cli.db.FrontierStore;
import dev.pacer.cli.db.FrontierStore.HostCeiling;
import dev.pacer.cli.db.WorkState;
import dev.pacer.postgres.PostgresCursor;
import dev.pacer.postgres.PostgresCursorConfig;
import dev.pacer.postgres.TableLayout;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.function.BiConsumer;
import java.util.function.LongSupplier;
import java.util.stream.Stream;
import org.postgresql.PGStatement;

/**
 * What one statement costs the PostgreSQL server in CPU time, the input the scaling model (see
 * {@code docs/scaling.md}) cannot take from a throughput figure: on a machine whose cores the
 * clients share, statements per second says what the whole machine managed, not what the server
 * spent.
 *
 * <p>The server's CPU time is read from Linux's {@code /proc/<pid>/schedstat} (time on a CPU, in
 * nanoseconds) for every child of the postmaster (the backends and the background processes: the
 * WAL writer is where an asynchronous commit's flush is paid) before and after a fixed number of
 * statements, the connections kept open between the two reads (a backend's time leaves with it).
 * The backends of the measured connections are also summed alone. The client's share is this JVM's
 * CPU time over the same statements (its threads, its JIT and its collector).
 *
 * <p>Workloads: {@code SELECT 1} from one connection (a floor); one destination's holds read from
 * one connection; a reservation through {@link PacerOperation} (one {@code PostgresCursor} a
 * thread, Pacer's own table, zero interval) from {@code n} threads on one key, and on a key a
 * thread; a per-host claim ({@link FrontierStore#claim}) from one thread on a frontier of many
 * hosts, always due. Linux only; run it pinned to one core ({@code taskset -c 1}) so that nothing
 * else's time is in the figures and the server never waits for a core the clients hold elsewhere.
 */
final class ServerCpu {

  /** One workload's figures, over {@code statements} statements. */
  record Point(
      String workload,
      int connections,
      int statements,
      double serverMicros,
      double backendMicros,
      double clientMicros,
      double perSecond) {}

  /** Server, measured backends and client CPU time, and the wall clock, all in nanoseconds. */
  private record Sample(long server, long backends, long client, long wall) {}

  private final Database.Target db;
  private final long postmaster;

  private ServerCpu(Database.Target db) throws SQLException, IOException {
    this.db = db;
    try (Connection c = db.connect();
        Statement s = c.createStatement();
        ResultSet r = s.executeQuery("SELECT pg_backend_pid()")) {
      r.next();
      this.postmaster = parent(r.getLong(1));
    }
  }

  /**
   * A meter of the server's CPU time (ns, the postmaster and every child) for a server on this
   * machine, or null where it cannot be read (not Linux, or the server elsewhere). Each reading
   * adds what every process of the server spent since the last reading that saw it: the difference
   * of two readings counts the processes alive at the second in full, a process started between
   * them from its start, and leaves out only what a process that exited between them spent after
   * the first (a backend's time leaves with it).
   */
  static LongSupplier serverMeter(Database.Target db) {
    ServerCpu cpu;
    try {
      cpu = new ServerCpu(db);
      cpu.serverNanos();
    } catch (SQLException | IOException | RuntimeException unreadable) {
      return null;
    }
    Map<Long, Long> seen = new HashMap<>();
    long[] total = {0};
    return () -> {
      try {
        synchronized (seen) {
          cpu.eachServerProcess(
              (pid, nanos) -> {
                Long before = seen.put(pid, nanos);
                total[0] += nanos - (before == null ? 0 : before);
              });
          return total[0];
        }
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    };
  }

  private static long parent(long pid) throws IOException {
    String stat = Files.readString(Path.of("/proc", Long.toString(pid), "stat"));
    String[] fields = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
    return Long.parseLong(fields[1]);
  }

  private static long onCpuNanos(long pid) {
    try {
      String schedstat = Files.readString(Path.of("/proc", Long.toString(pid), "schedstat"));
      return Long.parseLong(schedstat.substring(0, schedstat.indexOf(' ')));
    } catch (IOException | RuntimeException gone) {
      return 0;
    }
  }

  private long serverNanos() throws IOException {
    long[] sum = {0};
    eachServerProcess((pid, nanos) -> sum[0] += nanos);
    return sum[0];
  }

  /** The postmaster's and each child's time on a CPU so far, ns. */
  private void eachServerProcess(BiConsumer<Long, Long> onCpu) throws IOException {
    onCpu.accept(postmaster, onCpuNanos(postmaster));
    try (Stream<Path> procs = Files.list(Path.of("/proc"))) {
      for (Path p : (Iterable<Path>) procs::iterator) {
        String name = p.getFileName().toString();
        if (name.chars().allMatch(Character::isDigit)) {
          long pid = Long.parseLong(name);
          try {
            if (parent(pid) == postmaster) {
              onCpu.accept(pid, onCpuNanos(pid));
            }
          } catch (IOException | RuntimeException gone) {
            // a process that ended between the listing and the read
          }
        }
      }
    }
  }

  private Sample sample(List<Long> backends) throws IOException {
    long mine = 0;
    for (long pid : backends) {
      mine += onCpuNanos(pid);
    }
    var os =
        (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
    return new Sample(serverNanos(), mine, os.getProcessCpuTime(), System.nanoTime());
  }

  private Point point(String workload, int connections, int statements, Sample a, Sample b) {
    return new Point(
        workload,
        connections,
        statements,
        (b.server() - a.server()) / 1e3 / statements,
        (b.backends() - a.backends()) / 1e3 / statements,
        (b.client() - a.client()) / 1e3 / statements,
        statements / ((b.wall() - a.wall()) / 1e9));
  }

  /** Backend pids of the connections named {@code applicationName}. */
  private List<Long> backendsNamed(String applicationName) throws SQLException {
    List<Long> pids = new ArrayList<>();
    try (Connection c = db.connect();
        PreparedStatement s =
            c.prepareStatement("SELECT pid FROM pg_stat_activity WHERE application_name = ?")) {
      s.setString(1, applicationName);
      try (ResultSet r = s.executeQuery()) {
        while (r.next()) {
          pids.add(r.getLong(1));
        }
      }
    }
    return pids;
  }

  Point selectOne(int warmup, int statements) throws SQLException, IOException {
    try (Connection c = db.connect();
        PreparedStatement ping = c.prepareStatement("SELECT 1")) {
      ping.unwrap(PGStatement.class).setPrepareThreshold(1);
      long pid;
      try (Statement s = c.createStatement();
          ResultSet r = s.executeQuery("SELECT pg_backend_pid()")) {
        r.next();
        pid = r.getLong(1);
      }
      for (int i = 0; i < warmup; i++) {
        ping.executeQuery().close();
      }
      Sample a = sample(List.of(pid));
      for (int i = 0; i < statements; i++) {
        ping.executeQuery().close();
      }
      return point("select 1", 1, statements, a, sample(List.of(pid)));
    }
  }

  /**
   * {@code threads} threads, each reserving through a cursor of its own, on one key ({@code hot})
   * or on a key a thread.
   */
  Point reserve(int threads, boolean hot, int warmup, int statements)
      throws SQLException, IOException, InterruptedException {
    String run = "model-" + System.nanoTime();
    List<PacerOperation> ops = new ArrayList<>();
    try {
      for (int t = 0; t < threads; t++) {
        String key = hot ? run : run + "-" + t;
        ops.add(
            new PacerOperation(
                db, TableLayout.pacerTable(Contender.PACER_TABLE), false, new String[] {key}));
      }
      List<Long> pids = backendsNamed("pacer-cursor");
      runAll(ops, warmup / threads);
      Sample a = sample(pids);
      runAll(ops, statements / threads);
      Sample b = sample(pids);
      String workload = hot ? "reservation, one key" : "reservation, a key per connection";
      return point(workload, threads, statements / threads * threads, a, b);
    } finally {
      ops.forEach(PacerOperation::close);
    }
  }

  private static void runAll(List<PacerOperation> ops, int each) throws InterruptedException {
    CountDownLatch start = new CountDownLatch(1);
    List<Thread> threads = new ArrayList<>();
    for (PacerOperation op : ops) {
      Thread t =
          new Thread(
              () -> {
                try {
                  start.await();
                } catch (InterruptedException e) {
                  Thread.currentThread().interrupt();
                  return;
                }
                for (int i = 0; i < each; i++) {
                  op.perform();
                }
              });
      t.start();
      threads.add(t);
    }
    start.countDown();
    for (Thread t : threads) {
      t.join();
    }
  }

  /**
   * One connection reading one destination's holds ({@link PostgresCursor#holdsInForce}): the read
   * that a process behind a pooler makes, for every destination it serves at once, each poll.
   */
  Point holds(int warmup, int statements) throws SQLException, IOException {
    String key = "model-holds-" + System.nanoTime();
    try (PostgresCursor cursor =
        new PostgresCursor(
            PostgresCursorConfig.forUrl(db.jdbcUrl(), db.properties())
                .layout(TableLayout.pacerTable(Contender.PACER_TABLE))
                .build())) {
      PacerOperation.awaitConnected(cursor);
      for (int i = 0; i < warmup; i++) {
        cursor.holdsInForce(key);
      }
      List<Long> pids = backendsNamed("pacer-cursor");
      Sample a = sample(pids);
      for (int i = 0; i < statements; i++) {
        cursor.holdsInForce(key);
      }
      return point("holds of one destination", 1, statements, a, sample(pids));
    }
  }

  /** One thread's claims on a frontier of {@code hosts} hosts, every host always due. */
  Point claim(int hosts, int itemsPerHost, int warmup, int statements)
      throws SQLException, IOException {
    try (WorkState store = new WorkState(new dev.pacer.cli.db.Database(db.jdbcUrl()))) {
      store.ensureSchema();
      String run = "model-claims-" + System.nanoTime();
      String job = "bench-" + run;
      Map<String, HostCeiling> ceilings = new LinkedHashMap<>();
      for (int h = 0; h < hosts; h++) {
        ceilings.put("h" + h + "." + run + ".test", new HostCeiling(1_000, 1_000_000));
      }
      List<String> urls = new ArrayList<>(hosts * itemsPerHost);
      for (int i = 0; i < itemsPerHost; i++) {
        for (String host : ceilings.keySet()) {
          urls.add("http://" + host + "/item/" + i);
        }
      }
      store.jobs().enqueue(UUID.randomUUID().toString(), job, "bench-claims", 1_000, urls);
      store.frontier().plan(job, ceilings);
      for (int i = 0; i < warmup; i++) {
        store.frontier().claim(job, "bench", "bench/1", 600_000);
      }
      List<Long> pids = backendsNamed("pacer-store");
      Sample a = sample(pids);
      for (int i = 0; i < statements; i++) {
        store.frontier().claim(job, "bench", "bench/1", 600_000);
      }
      return point("claim, " + hosts + " hosts", 1, statements, a, sample(pids));
    }
  }

  /**
   * Standalone: {@code ServerCpu [ROUNDS]} on an embedded PostgreSQL: each workload {@code ROUNDS}
   * times (default 3), one line each.
   */
  public static void main(String[] args) throws Exception {
    int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 3;
    try (Database server = Database.embedded()) {
      ServerCpu cpu = new ServerCpu(server.target());
      for (int round = 1; round <= rounds; round++) {
        print(round, cpu.selectOne(5_000, 20_000));
        print(round, cpu.holds(2_000, 10_000));
        for (int threads : new int[] {1, 2, 4, 8}) {
          print(round, cpu.reserve(threads, true, 4_000, 16_000));
          print(round, cpu.reserve(threads, false, 4_000, 16_000));
        }
        print(round, cpu.claim(10_000, 2, 500, 4_000));
      }
    }
  }

  private static void print(int round, Point p) {
    System.out.printf(
        Locale.ROOT,
        "round %d  %-36s connections %d  statements %,7d  server %6.1f us  measured backends"
            + " %6.1f us  client JVM %6.1f us  %,8.0f/s%n",
        round,
        p.workload(),
        p.connections(),
        p.statements(),
        p.serverMicros(),
        p.backendMicros(),
        p.clientMicros(),
        p.perSecond());
  }
}
