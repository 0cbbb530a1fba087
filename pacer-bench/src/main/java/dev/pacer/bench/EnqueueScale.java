package dev.pacer.bench;

import dev.pacer.cli.db.WorkState;
import dev.pacer.cli.model.UrlList;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.InputStream;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.UUID;

/**
 * Enqueue at scale: {@code urls} URLs over {@code hosts} hosts (about 60 characters each, the hosts
 * taken in turn) enqueued into a new job by a JVM of its own with a small heap ({@link #HEAP}),
 * exactly as {@code pacer fetch} enqueues its input ({@code UrlList.read}, then {@code
 * JobStore.enqueue}), and then once more, which must add nothing. Reports URLs per second (reading
 * and checking the input included, the JVM's start not), and the child's peak memory: the sum of
 * its heap pools' peaks (an upper bound of the heap's peak) and its peak resident set ({@code
 * VmHWM}).
 */
final class EnqueueScale {

  /** The child's heap: the list is many times larger, so nothing holds it whole. */
  static final String HEAP = "-Xmx64m";

  record Result(
      int urls,
      int hosts,
      double seconds,
      long added,
      long addedAgain,
      long peakHeapBytes,
      long peakRssBytes,
      long inputBytes) {
    double perSecond() {
      return urls / seconds;
    }
  }

  private EnqueueScale() {}

  static Result measure(Database.Target db, int urls, int hosts, Path work)
      throws IOException, InterruptedException {
    Path list = work.resolve("enqueue-urls.txt");
    try (BufferedWriter w = Files.newBufferedWriter(list, StandardCharsets.UTF_8)) {
      for (int i = 0; i < urls; i++) {
        w.write("https://host-" + (i % hosts) + ".example.com/articles/" + i + "/index.html\n");
      }
    }
    String job = "bench-enqueue-" + System.nanoTime();
    try {
      String[] first = run(db, list, job);
      String[] again = run(db, list, job);
      return new Result(
          urls,
          hosts,
          Double.parseDouble(first[1]),
          Long.parseLong(first[0]),
          Long.parseLong(again[0]),
          Long.parseLong(first[2]),
          Long.parseLong(first[3]),
          Files.size(list));
    } finally {
      Files.deleteIfExists(list);
    }
  }

  private static String[] run(Database.Target db, Path list, String job)
      throws IOException, InterruptedException {
    List<String> out =
        FetchThroughput.childWith(
            List.of(HEAP),
            Child.class.getName(),
            List.of(db.jdbcUrl(), list.toString(), job),
            list.resolveSibling(job + ".err"));
    return out.get(out.size() - 1).trim().split(" ");
  }

  /** Standalone: {@code EnqueueScale [URLS [HOSTS]]} on an embedded PostgreSQL. */
  public static void main(String[] args) throws Exception {
    int urls = args.length > 0 ? Integer.parseInt(args[0]) : 1_000_000;
    int hosts = args.length > 1 ? Integer.parseInt(args[1]) : 10_000;
    Path work = Files.createTempDirectory("pacer-enqueue-bench");
    try (Database db = Database.embedded()) {
      Result r = measure(db.target(), urls, hosts, work);
      System.out.printf(
          java.util.Locale.ROOT,
          "%,d URLs over %,d hosts: %.1f s, %,.0f URLs/s;"
              + " %,d new, again %,d; peak heap %.1f MiB, peak RSS %.1f MiB (%s)%n",
          r.urls(),
          r.hosts(),
          r.seconds(),
          r.perSecond(),
          r.added(),
          r.addedAgain(),
          r.peakHeapBytes() / 1048576.0,
          r.peakRssBytes() / 1048576.0,
          HEAP);
    } finally {
      FetchThroughput.deleteTree(work);
    }
  }

  /**
   * The child JVM: {@code EnqueueScale$Child JDBC_URL LIST JOB}; prints "{@code <added> <seconds>
   * <peak heap bytes> <peak rss bytes>}".
   */
  static final class Child {
    public static void main(String[] args) throws Exception {
      enqueueInThisJvm(args);
    }
  }

  private static void enqueueInThisJvm(String[] args) throws Exception {
    dev.pacer.cli.db.Database database = new dev.pacer.cli.db.Database(args[0]);
    try (WorkState store = new WorkState(database)) {
      store.ensureSchema();
      long started = System.nanoTime();
      int added;
      try (InputStream in = Files.newInputStream(Path.of(args[1]));
          UrlList urls = UrlList.read(in, args[1])) {
        added =
            store
                .jobs()
                .enqueue(UUID.randomUUID().toString(), args[2], "bench-enqueue", 1.0, urls.urls());
      }
      double seconds = (System.nanoTime() - started) / 1e9;
      long peakHeap = 0;
      for (MemoryPoolMXBean pool : ManagementFactory.getMemoryPoolMXBeans()) {
        if (pool.getType() == MemoryType.HEAP) {
          peakHeap += pool.getPeakUsage().getUsed();
        }
      }
      System.out.println(added + " " + seconds + " " + peakHeap + " " + peakRss());
    }
  }

  private static long peakRss() throws IOException {
    for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
      if (line.startsWith("VmHWM:")) {
        return Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024;
      }
    }
    return -1;
  }
}
