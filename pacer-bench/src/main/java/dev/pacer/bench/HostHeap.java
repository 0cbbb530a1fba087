package dev.pacer.bench;

import dev.pacer.cli.run.PerHostDriver;
import dev.pacer.postgres.PostgresCursor;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * A per-host worker's retained heap as the hosts it has claimed grow: pacer-cli's {@link
 * PerHostDriver} drives the worker's own per-host state (its fetchers and limiters, on its claims'
 * prepaid turns, and the worker's PostgreSQL cursor with its hold listener's connection, against
 * the bench's server) over new hosts, {@code perSecond} a second on a fake clock, with a heartbeat
 * every second; in a JVM of its own ({@link #JVM}: the serial collector, whose {@code System.gc()}
 * is a full collection), which at each checkpoint collects and reports the heap in use, that is
 * what the worker retains, and the fetchers it holds. Checkpoint 0 is the heap before the first
 * host. Nothing is sent to any host: the HTTP client's connections are not measured.
 */
final class HostHeap {

  static final List<String> JVM = List.of("-Xmx256m", "-XX:+UseSerialGC");

  /**
   * The target: the heap after the most hosts at most this many times the heap after the fewest.
   */
  static final double FLAT = 1.1;

  /** The checkpoints (hosts claimed; 0 first), and how many new hosts are claimed a second. */
  record Load(List<Integer> checkpoints, int perSecond) {
    Load {
      checkpoints = List.copyOf(checkpoints);
      if (checkpoints.size() < 3 || checkpoints.get(0) != 0 || perSecond < 1) {
        throw new IllegalArgumentException(
            "checkpoints must start at 0 and have two more, and"
                + " perSecond be positive: "
                + checkpoints
                + ", "
                + perSecond);
      }
    }

    int hosts() {
      return checkpoints.get(checkpoints.size() - 1);
    }
  }

  /** One checkpoint: hosts claimed so far, fetchers held, heap retained. */
  record Point(int hosts, int fetchersHeld, long heapBytes) {}

  record Result(Load load, List<Point> points) {
    /** The heap after the last checkpoint's hosts ÷ after the first's (checkpoint 0 aside). */
    double ratio() {
      return (double) points.get(points.size() - 1).heapBytes() / points.get(1).heapBytes();
    }

    /** Per fetcher held at the last checkpoint, what the hosts added to the heap. */
    double bytesPerHeldFetcher() {
      Point last = points.get(points.size() - 1);
      return (double) (last.heapBytes() - points.get(0).heapBytes()) / last.fetchersHeld();
    }
  }

  private HostHeap() {}

  static Result measure(Database.Target db, Load load, Path work)
      throws IOException, InterruptedException {
    List<String> args = new ArrayList<>(List.of(db.jdbcUrl(), Integer.toString(load.perSecond())));
    load.checkpoints().forEach(c -> args.add(Integer.toString(c)));
    Path stderr = work.resolve("host-heap.err");
    List<String> out = FetchThroughput.childWith(JVM, Child.class.getName(), args, stderr);
    Files.deleteIfExists(stderr);
    List<Point> points = new ArrayList<>();
    for (String line : out) {
      String[] parts = line.trim().split(" ");
      points.add(
          new Point(
              Integer.parseInt(parts[0]), Integer.parseInt(parts[1]), Long.parseLong(parts[2])));
    }
    if (points.size() != load.checkpoints().size()) {
      throw new IllegalStateException("the host heap child reported " + out);
    }
    return new Result(load, points);
  }

  /** Standalone: {@code HostHeap [PER_SECOND [CHECKPOINT...]]} on an embedded PostgreSQL. */
  public static void main(String[] args) throws Exception {
    int perSecond = args.length > 0 ? Integer.parseInt(args[0]) : 10;
    List<Integer> checkpoints = new ArrayList<>(List.of(0));
    for (int i = 1; i < args.length; i++) {
      checkpoints.add(Integer.parseInt(args[i]));
    }
    if (checkpoints.size() == 1) {
      checkpoints.addAll(List.of(1_000, 10_000, 100_000));
    }
    Path work = Files.createTempDirectory("pacer-host-heap");
    try (Database db = Database.embedded()) {
      Result r = measure(db.target(), new Load(checkpoints, perSecond), work);
      for (Point p : r.points()) {
        System.out.printf(
            Locale.ROOT,
            "%,d hosts: %,d fetchers held, %.1f MiB retained%n",
            p.hosts(),
            p.fetchersHeld(),
            p.heapBytes() / 1048576.0);
      }
      System.out.printf(
          Locale.ROOT,
          "%,d new hosts a second: %,d ÷ %,d hosts %.3f; %.0f bytes" + " per fetcher held (%s)%n",
          perSecond,
          r.load().hosts(),
          r.points().get(1).hosts(),
          r.ratio(),
          r.bytesPerHeldFetcher(),
          String.join(" ", JVM));
    } finally {
      Files.deleteIfExists(work);
    }
  }

  /**
   * The child JVM: {@code HostHeap$Child JDBC_URL PER_SECOND CHECKPOINT...}; prints "{@code <hosts>
   * <fetchers held> <heap bytes>}" at each checkpoint.
   */
  static final class Child {
    public static void main(String[] args) throws Exception {
      int perSecond = Integer.parseInt(args[1]);
      Set<Integer> checkpoints = new HashSet<>();
      int hosts = 0;
      for (int i = 2; i < args.length; i++) {
        int c = Integer.parseInt(args[i]);
        checkpoints.add(c);
        hosts = Math.max(hosts, c);
      }
      try (PostgresCursor cursor = new dev.pacer.cli.db.Database(args[0]).cursor()) {
        PerHostDriver driver = new PerHostDriver(cursor);
        // This run's own names: a host's cursor row is shared by name with everything else.
        driver.drive(
            "heap-" + System.nanoTime() + ".test",
            hosts,
            perSecond,
            checkpoints,
            (claimed, held) -> System.out.println(claimed + " " + held + " " + retainedHeap()));
      }
    }

    private static long retainedHeap() throws InterruptedException {
      for (int i = 0; i < 3; i++) {
        System.gc();
        Thread.sleep(20);
      }
      return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
    }
  }
}
