package dev.pacer.bench;

import dev.pacer.cli.LoopbackHosts;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * One run of {@link FrontierBench}, judged where its requests arrived. {@code finished}: the run
 * ended by itself (not stopped); {@code worstHostWindow}: the most arrivals any host had in a 1-s
 * window; {@code hostsOver}: hosts whose busiest window passed their ceiling + 1; {@code windows}:
 * the whole 10-s windows from the first arrival; {@code claims}, {@code emptyWhileEligible}: summed
 * over the workers that told them ({@code workersTelling} of them); {@code doneOnce}: every item
 * done exactly once and every URL arrived; {@code killedAtSeconds}: when a worker was killed, from
 * the run's start (NaN if none was, or none held a lease to kill).
 */
record FrontierRun(
    String label,
    boolean finished,
    double elapsedSeconds,
    double doorSeconds,
    int arrivals,
    int worstHostWindow,
    int hostsOver,
    List<FrontierRun.WindowFigure> windows,
    long claims,
    long emptyWhileEligible,
    int workersTelling,
    boolean doneOnce,
    double killedAtSeconds) {

  /** One 10-s window: its arrivals and the base they are judged against. */
  record WindowFigure(long delivered, double base) {
    double ratio() {
      return delivered / base;
    }
  }

  /** The lowest arrivals ÷ base over the whole 10-s windows (NaN if the run had none). */
  double minWindowRatio() {
    return windows.stream().mapToDouble(WindowFigure::ratio).min().orElse(Double.NaN);
  }

  double emptyFraction() {
    return claims == 0 ? Double.NaN : (double) emptyWhileEligible / claims;
  }

  /**
   * The figures of a run from its arrivals (time order), its hosts' backlogs, every host's ceiling
   * ({@code rate}) and the workers' capacity: a pure function, so that the criteria are the same
   * for every run.
   */
  static FrontierRun judge(
      String label,
      boolean finished,
      double elapsed,
      List<LoopbackHosts.Arrival> arrivals,
      Map<String, Integer> itemsOf,
      double rate,
      double capacity,
      FrontierBench.ClaimTally tally,
      boolean doneOnce,
      double killedAt) {
    Map<String, List<LoopbackHosts.Arrival>> byHost = new HashMap<>();
    for (LoopbackHosts.Arrival a : arrivals) {
      byHost.computeIfAbsent(a.host(), h -> new ArrayList<>()).add(a);
    }
    int worst = 0;
    int over = 0;
    for (List<LoopbackHosts.Arrival> list : byHost.values()) {
      int b = LoopbackHosts.busiestSecond(list);
      worst = Math.max(worst, b);
      over += b > Math.floor(rate) + 1 ? 1 : 0;
    }
    long t0 = arrivals.get(0).nanos();
    long last = arrivals.get(arrivals.size() - 1).nanos();
    return new FrontierRun(
        label,
        finished,
        elapsed,
        (last - t0) / 1e9,
        arrivals.size(),
        worst,
        over,
        windows(arrivals, byHost, itemsOf, rate, capacity),
        tally.claims(),
        tally.empty(),
        tally.telling(),
        doneOnce,
        killedAt);
  }

  /**
   * The whole 10-s windows from the first arrival, each with its base: min(Σ over hosts of ceiling
   * × the time in the window before the host ran out of items, capacity × 10 s).
   */
  private static List<WindowFigure> windows(
      List<LoopbackHosts.Arrival> arrivals,
      Map<String, List<LoopbackHosts.Arrival>> byHost,
      Map<String, Integer> itemsOf,
      double rate,
      double capacity) {
    long t0 = arrivals.get(0).nanos();
    long last = arrivals.get(arrivals.size() - 1).nanos();
    // When each host ran out of items: its last arrival if it got them all, else the run's end.
    Map<String, Long> emptied = new HashMap<>();
    for (Map.Entry<String, Integer> e : itemsOf.entrySet()) {
      List<LoopbackHosts.Arrival> list = byHost.getOrDefault(e.getKey(), List.of());
      long distinct = list.stream().map(LoopbackHosts.Arrival::path).distinct().count();
      emptied.put(e.getKey(), distinct >= e.getValue() ? list.get(list.size() - 1).nanos() : last);
    }
    long window = (long) (FrontierBench.WINDOW_SECONDS * 1e9);
    List<WindowFigure> windows = new ArrayList<>();
    for (long from = t0; from + window <= last; from += window) {
      long to = from + window;
      double ceilings = 0;
      for (long until : emptied.values()) {
        ceilings += rate * Math.max(0, Math.min(to, until) - from) / 1e9;
      }
      double base = Math.min(ceilings, capacity * FrontierBench.WINDOW_SECONDS);
      long f = from;
      long delivered = arrivals.stream().filter(a -> a.nanos() >= f && a.nanos() < to).count();
      windows.add(new WindowFigure(delivered, base));
    }
    return windows;
  }
}
