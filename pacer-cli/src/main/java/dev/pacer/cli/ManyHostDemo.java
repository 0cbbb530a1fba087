package dev.pacer.cli;

import dev.pacer.cli.db.FrontierStore.HostCeiling;
import dev.pacer.cli.db.WorkState;
import dev.pacer.cli.demo.DemoServer;
import dev.pacer.cli.demo.HostLanesPlot;
import dev.pacer.cli.model.BadInputException;
import dev.pacer.cli.model.UrlList;
import dev.pacer.cli.run.RunSettings;
import dev.pacer.postgres.PostgresCursor;
import java.io.IOException;
import java.io.PrintWriter;
import java.net.BindException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ExecutorService;

/**
 * {@code pacer demo --hosts N}: per-host pacing across N local destinations, one on each loopback
 * address 127.0.0.2, 127.0.0.3, … (a host of its own to a URL, as a crawl's hosts are), each
 * enforcing its own ceiling (429 above it, as the single-destination demo's does). The ceilings
 * cycle through the demo's rate, half of it and a quarter of it; every fourth host is light (3
 * items), the others have a backlog of their ceiling x the run's seconds, all enqueued host by
 * host, the heavy ones first. The claim takes each host's turns as they come, so every host is
 * fetched at its own ceiling from the start and the light ones are done within their first second.
 * The PNG ({@link HostLanesPlot}) has a lane per host.
 *
 * @param hosts how many destinations
 * @param seconds about how long the heavy hosts' backlog lasts
 * @param rate the fastest host's ceiling
 */
record ManyHostDemo(int hosts, int seconds, double rate) {

  /** Loopback addresses 127.0.0.2 to 127.0.0.201. */
  static final int MAX_HOSTS = 200;

  /** Items of a light host. */
  static final int LIGHT_ITEMS = 3;

  /**
   * The {@code index}-th host's ceiling: the rate, half of it, a quarter of it, in turn, each
   * rounded to a whole number of requests per second (at least 1), so that "the ceiling + 1" is a
   * whole count of requests in a 1-s window for every host.
   */
  double ceiling(int index) {
    return Math.max(1, Math.round(rate / (1 << (index % 3))));
  }

  /** The {@code index}-th host's items. */
  int items(int index) {
    return index % 4 == 3 ? LIGHT_ITEMS : (int) Math.max(2, Math.round(ceiling(index) * seconds));
  }

  int run(
      WorkState store,
      RunSettings settings,
      int processes,
      boolean progress,
      Path png,
      PrintWriter out,
      PrintWriter err)
      throws Exception {
    long origin = System.nanoTime();
    ExecutorService threads = DemoServer.threads(16);
    List<DemoServer> servers = new ArrayList<>();
    try {
      List<String> urls = new ArrayList<>();
      Map<String, HostCeiling> ceilings = new LinkedHashMap<>();
      for (int i = 0; i < hosts; i++) {
        String address = "127.0.0." + (i + 2);
        DemoServer server = startServer(i, address, origin, threads);
        servers.add(server);
        ceilings.put(address, new HostCeiling(ceiling(i), settings.destination().maxConcurrency()));
        for (int n = 1; n <= items(i); n++) {
          urls.add(server.baseUrl() + "/item/" + n);
        }
      }
      clearCursors(store, ceilings.keySet());
      announce(urls.size(), ceilings, processes, settings, err);
      int code =
          new JobRun(store, out, err, progress)
              .run(
                  UrlList.of(urls),
                  settings,
                  ceilings,
                  processes,
                  Optional.of(Duration.ofSeconds(seconds + 15L)));
      return report(
          servers,
          ceilings,
          urls.size(),
          store.items().counts(settings.job()).done(),
          png,
          out,
          err,
          code);
    } finally {
      servers.forEach(DemoServer::close);
      threads.shutdownNow();
    }
  }

  /** The {@code index}-th host's destination, listening on {@code address}. */
  private DemoServer startServer(int index, String address, long origin, ExecutorService threads)
      throws IOException, BadInputException {
    try {
      return new DemoServer(address, ceiling(index), 2, origin, threads);
    } catch (BindException e) {
      throw new BadInputException(
          "cannot listen on "
              + address
              + " ("
              + e.getMessage()
              + "): the many-host demo needs the loopback addresses 127.0.0.2 to 127.0.0."
              + (hosts + 1)
              + ", which Linux has; on macOS add them first, e.g. sudo ifconfig"
              + " lo0 alias "
              + address
              + " up");
    }
  }

  /**
   * The hosts are the demo's own: a backoff, pause or lockout that an earlier demo left on their
   * cursor rows (kept per host, for every job) would slow this one, so each starts clear.
   */
  private static void clearCursors(WorkState store, Iterable<String> hosts) {
    try (PostgresCursor cursor = store.database().cursor()) {
      for (String host : hosts) {
        cursor.clear(host);
        cursor.clearLockout(host);
      }
    }
  }

  private void announce(
      int items,
      Map<String, HostCeiling> ceilings,
      int processes,
      RunSettings settings,
      PrintWriter err) {
    double ceilingSum = ceilings.values().stream().mapToDouble(HostCeiling::rate).sum();
    err.printf(
        Locale.ROOT,
        "pacer demo: %d items over %d hosts (127.0.0.2 to 127.0.0.%d),"
            + " ceilings %s/s, %s/s and %s/s in turn (%s/s in all), every fourth host %d items"
            + " only; %d worker processes x %d threads; each host answers 429 above its"
            + " ceiling%n",
        items,
        hosts,
        hosts + 1,
        HostReport.number(ceiling(0)),
        HostReport.number(ceiling(1)),
        HostReport.number(ceiling(2)),
        HostReport.number(ceilingSum),
        LIGHT_ITEMS,
        processes,
        settings.threads());
  }

  private int report(
      List<DemoServer> servers,
      Map<String, HostCeiling> ceilings,
      int items,
      long done,
      Path png,
      PrintWriter out,
      PrintWriter err,
      int code)
      throws IOException {
    Tally tally = new Tally();
    int i = 0;
    for (Map.Entry<String, HostCeiling> host : ceilings.entrySet()) {
      tally.add(host.getKey(), host.getValue().rate(), servers.get(i++).arrivals());
    }
    if (tally.requests == 0) {
      err.println("pacer demo: the hosts saw no request; nothing to report");
      return code == Main.EXIT_OK ? Main.EXIT_ERROR : code;
    }
    HostLanesPlot.write(
        tally.lanes,
        String.format(
            Locale.ROOT,
            "pacer demo --hosts %d: each host at"
                + " its own ceiling, %d of %d hosts within ceiling + 1, %d x 429",
            hosts,
            tally.kept,
            hosts,
            tally.refused),
        png);
    out.println("Pacing: per host (one cursor in PostgreSQL per host, for every process)");
    int shown = Math.min(tally.lines.size(), 20);
    tally.lines.subList(0, shown).forEach(out::println);
    if (shown < tally.lines.size()) {
      out.println("  ... and " + (tally.lines.size() - shown) + " more host(s): see the PNG");
    }
    out.printf(
        Locale.ROOT,
        "Hosts within their ceiling + 1 in every 1-s window: %d of %d%n",
        tally.kept,
        hosts);
    if (tally.slowest != null) {
      out.printf(
          Locale.ROOT,
          "Slowest host against its ceiling: %s at %.2f x its ceiling%n",
          tally.slowest,
          tally.slowestShare);
    }
    out.println("429 answers from the hosts: " + tally.refused);
    out.println("Items done: " + done + " of " + items);
    out.println("Timeline (PNG): " + png);
    String name = png.getFileName().toString();
    Path csv = png.resolveSibling(name.substring(0, name.length() - ".png".length()) + ".csv");
    DemoServer.writeCsv(servers, csv);
    out.println("Arrivals (CSV): " + csv);
    return code;
  }

  /** What the hosts saw, host by host: a lane and a line for each, and the totals. */
  private static final class Tally {
    final List<HostLanesPlot.Lane> lanes = new ArrayList<>();
    final List<String> lines = new ArrayList<>();
    int kept = 0;
    long refused = 0;
    long requests = 0;
    String slowest = null;
    double slowestShare = Double.MAX_VALUE;

    void add(String host, double ceiling, List<DemoServer.Arrival> arrivals) {
      lanes.add(new HostLanesPlot.Lane(host, ceiling, arrivals));
      int busiest = DemoServer.busiestOneSecond(arrivals);
      boolean within = busiest <= Math.floor(ceiling) + 1;
      kept += within ? 1 : 0;
      refused += arrivals.stream().filter(a -> a.status() == 429).count();
      requests += arrivals.size();
      String rateText = "";
      if (arrivals.size() >= 4) {
        double achieved =
            (arrivals.size() - 1)
                / ((arrivals.get(arrivals.size() - 1).nanos() - arrivals.get(0).nanos()) / 1e9);
        rateText =
            String.format(Locale.ROOT, ", %.2f/s from its first request to its last", achieved);
        if (achieved / ceiling < slowestShare) {
          slowestShare = achieved / ceiling;
          slowest = host;
        }
      }
      lines.add(
          String.format(
              Locale.ROOT,
              "  %-12s ceiling %5s/s  %3d request(s)  busiest 1-s" + " window %d of %d allowed%s",
              host,
              HostReport.number(ceiling),
              arrivals.size(),
              busiest,
              (long) Math.floor(ceiling) + 1,
              rateText));
    }
  }
}
