package dev.pacer.bench;

import dev.pacer.cli.db.FrontierStore;
import dev.pacer.cli.db.FrontierStore.HostCeiling;
import dev.pacer.cli.db.WorkState;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;

/**
 * What one per-host claim costs as the frontier grows: a job of {@code hosts} hosts with {@code
 * itemsPerHost} items each, planned as {@code pacer fetch --per-host} plans it, then claimed by one
 * thread, one claim after another, each timed from the call to its answer ({@link
 * FrontierStore#claim}: the one statement that picks the soonest due host, advances its cursor row
 * and leases one of its items). Every host's ceiling is high enough (1,000/s) and its in-flight cap
 * wide enough that a host is always due, so each claim is the statement's full work and none waits
 * for a turn. One thread measures the statement, not contention between claims, which the frontier
 * runs of {@link FrontierBench} show.
 *
 * <p>The host names are this run's own ({@code h<i>.claims-<nanoTime>.test}): a host's cursor row
 * is shared by name with every job and program that paces on it.
 */
final class ClaimCost {

  /** The frontier sizes, the items of each host, and the claims timed after a warm-up. */
  record Load(List<Integer> hostCounts, int itemsPerHost, int warmupClaims, int claims) {
    Load {
      hostCounts = List.copyOf(hostCounts);
      if (hostCounts.isEmpty() || itemsPerHost < 1 || claims < 1 || warmupClaims < 0) {
        throw new IllegalArgumentException(
            "hosts, items and claims must be positive: "
                + hostCounts
                + ", "
                + itemsPerHost
                + ", "
                + claims);
      }
    }
  }

  /** One frontier size: the claims' latencies, and how many answered without an item. */
  record Point(
      int hosts,
      int items,
      int claims,
      double p50Millis,
      double p99Millis,
      double maxMillis,
      int withoutItem) {}

  private static final double HOST_RATE = 1_000;

  private ClaimCost() {}

  static List<Point> measure(Database.Target db, Load load) throws SQLException {
    List<Point> points = new ArrayList<>();
    for (int hosts : load.hostCounts()) {
      points.add(measureOne(db, hosts, load));
    }
    return points;
  }

  private static Point measureOne(Database.Target db, int hosts, Load load) throws SQLException {
    try (WorkState store = new WorkState(new dev.pacer.cli.db.Database(db.jdbcUrl()))) {
      store.ensureSchema();
      String run = "claims-" + System.nanoTime();
      String job = "bench-" + run;
      Map<String, HostCeiling> ceilings = new LinkedHashMap<>();
      for (int h = 0; h < hosts; h++) {
        ceilings.put("h" + h + "." + run + ".test", new HostCeiling(HOST_RATE, 1_000_000));
      }
      List<String> urls = new ArrayList<>(hosts * load.itemsPerHost());
      for (int i = 0; i < load.itemsPerHost(); i++) {
        for (String host : ceilings.keySet()) {
          urls.add("http://" + host + "/item/" + i);
        }
      }
      store.jobs().enqueue(UUID.randomUUID().toString(), job, "bench-claims", HOST_RATE, urls);
      store.frontier().plan(job, ceilings);
      for (int i = 0; i < load.warmupClaims(); i++) {
        store.frontier().claim(job, "bench", "bench/1", 600_000);
      }
      long[] nanos = new long[load.claims()];
      int withoutItem = 0;
      for (int i = 0; i < nanos.length; i++) {
        long asked = System.nanoTime();
        FrontierStore.Claim claim = store.frontier().claim(job, "bench", "bench/1", 600_000);
        nanos[i] = System.nanoTime() - asked;
        if (!(claim instanceof FrontierStore.Claim.Claimed)) {
          withoutItem++;
        }
      }
      Arrays.sort(nanos);
      return new Point(
          hosts,
          urls.size(),
          nanos.length,
          percentileMillis(nanos, 0.50),
          percentileMillis(nanos, 0.99),
          nanos[nanos.length - 1] / 1e6,
          withoutItem);
    }
  }

  private static double percentileMillis(long[] sorted, double p) {
    int index = (int) Math.ceil(p * sorted.length) - 1;
    return sorted[Math.max(0, Math.min(sorted.length - 1, index))] / 1e6;
  }

  /** Standalone: {@code ClaimCost [HOSTS...]} on an embedded PostgreSQL, 10 items a host. */
  public static void main(String[] args) throws Exception {
    List<Integer> hosts = new ArrayList<>();
    for (String a : args) {
      hosts.add(Integer.parseInt(a));
    }
    Load load = new Load(hosts.isEmpty() ? List.of(1_000, 10_000) : hosts, 10, 200, 2_000);
    try (Database db = Database.embedded()) {
      for (Point p : measure(db.target(), load)) {
        System.out.printf(
            Locale.ROOT,
            "%,d hosts (%,d items): %,d claims, p50 %.2f ms, p99 %.2f"
                + " ms, max %.2f ms, %d without an item%n",
            p.hosts(),
            p.items(),
            p.claims(),
            p.p50Millis(),
            p.p99Millis(),
            p.maxMillis(),
            p.withoutItem());
      }
    }
  }
}
