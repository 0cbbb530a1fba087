package dev.pacer.bench;

import static dev.pacer.bench.Report.fmt;

import java.util.List;
import java.util.Locale;

/**
 * The per-host sections of the report: the frontier's runs against many hosts, the cost of one
 * claim as the frontier grows, and a worker's heap over many hosts.
 */
final class PerHostSections {

  private PerHostSections() {}

  static void render(StringBuilder md, Results r) {
    frontier(md, r.frontier);
    claimCost(md, r);
    hostHeap(md, r.hostHeap);
  }

  private static void claimCost(StringBuilder md, Results r) {
    md.append("### Per-host claim cost\n\n");
    md.append(
        "One thread claiming from a job planned per host, one claim after another, each timed from"
            + " the call to its answer (the one statement that picks the soonest due host, advances"
            + " its cursor row and leases one of its items); every host at 1,000/s, so a host is"
            + " always due. After a warm-up of "
            + r.settings.claimCost().warmupClaims()
            + " claims:\n\n");
    md.append(
        "| hosts | items | claims | p50 ms | p99 ms | max ms | without an item |\n"
            + "|---:|---:|---:|---:|---:|---:|---:|\n");
    for (ClaimCost.Point p : r.claimCost) {
      md.append(
          String.format(
              Locale.ROOT,
              "| %,d | %,d | %,d | %.2f | %.2f | %.2f | %d |%n",
              p.hosts(),
              p.items(),
              p.claims(),
              p.p50Millis(),
              p.p99Millis(),
              p.maxMillis(),
              p.withoutItem()));
    }
    md.append("\n");
  }

  private static void hostHeap(StringBuilder md, HostHeap.Result h) {
    md.append("### Per-host state: a worker's heap over many hosts\n\n");
    md.append(
        String.format(
            Locale.ROOT,
            "A per-host worker's own state (its fetchers and limiters on prepaid turns, its"
                + " PostgreSQL cursor and hold listener) driven over new hosts, %d a second on a"
                + " fake clock with a heartbeat every second, in a JVM of its own (`%s`); retained"
                + " heap after `System.gc()` at each checkpoint:%n%n",
            h.load().perSecond(),
            String.join(" ", HostHeap.JVM)));
    md.append("| hosts claimed | fetchers held | retained heap MiB |\n|---:|---:|---:|\n");
    for (HostHeap.Point p : h.points()) {
      md.append(
          String.format(
              Locale.ROOT,
              "| %,d | %,d | %.1f |%n",
              p.hosts(),
              p.fetchersHeld(),
              p.heapBytes() / 1048576.0));
    }
    md.append(
        String.format(
            Locale.ROOT,
            "%nAfter %,d hosts ÷ after %,d: %.3f; %.0f bytes per"
                + " fetcher held at the last checkpoint.%n%n",
            h.load().hosts(),
            h.points().get(1).hosts(),
            h.ratio(),
            h.bytesPerHeldFetcher()));
  }

  private static void frontier(StringBuilder md, FrontierBench.Result f) {
    FrontierBench.Load l = f.load();
    md.append("### Many hosts: the per-host frontier\n\n");
    md.append(
        String.format(
            Locale.ROOT,
            "`pacer fetch --per-host --processes %d --threads %d` against %d HTTP servers on"
                + " loopback addresses (127.0.x.y), every host at %.1f/s; a Zipf backlog (s = %.1f:"
                + " the k-th host has %d/k items, at least one; %,d items, the input grouped by"
                + " host, heaviest first); leases of %d s. Judged at the hosts. What the workers"
                + " carry with no ceiling binding (%d items a host at %.0f/s): %,.0f items/s. A"
                + " 10-s window's base is min(Σ over hosts of ceiling × its time in the window with"
                + " items left, that capacity × 10 s). The finish bound is 1.05 × the heaviest"
                + " backlog × interval + 10 s = %.1f s.%n%n",
            l.processes(),
            l.threads(),
            l.hosts(),
            l.rate(),
            l.zipfS(),
            l.heaviest(),
            f.items(),
            l.leaseSeconds(),
            FrontierBench.CAPACITY_ITEMS_PER_HOST,
            FrontierBench.CAPACITY_RATE,
            f.capacityPerSecond(),
            l.finishBoundSeconds()));
    md.append(
        "| run | first to last arrival, s (from the workers' start)"
            + " | busiest host 1-s window | hosts over ceiling + 1 | lowest 10-s"
            + " window ÷ base | claims empty while a host was eligible | every item done once |\n");
    md.append("|---|---:|---:|---:|---:|---|---|\n");
    for (FrontierRun run : List.of(f.turn(), f.fifo(), f.killed())) {
      frontierRow(md, run);
    }
    md.append("\n");
  }

  private static void frontierRow(StringBuilder md, FrontierRun run) {
    String label =
        switch (run.label()) {
          case "turn" -> "frontier (claim the soonest host's turn)";
          case "fifo" -> "FIFO twin (input order, then wait for the host's turn)";
          default ->
              String.format(
                  Locale.ROOT,
                  "frontier, a worker killed with SIGKILL at %.1f s",
                  run.killedAtSeconds());
        };
    md.append("| ")
        .append(label)
        .append(" | ")
        .append(
            run.finished()
                ? fmt(run.doorSeconds(), 1) + " (" + fmt(run.elapsedSeconds(), 1) + ")"
                : fmt(run.doorSeconds(), 1) + " (stopped at " + fmt(run.elapsedSeconds(), 1) + ")")
        .append(" | ")
        .append(run.worstHostWindow())
        .append(" | ")
        .append(run.hostsOver())
        .append(" | ")
        .append(fmt(run.minWindowRatio(), 3))
        .append(" (")
        .append(run.windows().size())
        .append(" windows) | ")
        .append(
            run.workersTelling() == 0
                ? "– (no frontier claims)"
                : String.format(
                    Locale.ROOT,
                    "%,d of %,d (%.3f%%; %d worker(s) told)",
                    run.emptyWhileEligible(),
                    run.claims(),
                    100 * run.emptyFraction(),
                    run.workersTelling()))
        .append(" | ")
        .append(run.finished() ? (run.doneOnce() ? "yes" : "NO") : "–")
        .append(" |\n");
  }
}
