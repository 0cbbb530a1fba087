package dev.pacer.bench;

import java.util.List;

/**
 * How long and how wide one benchmark run is. {@link #full()} is what {@code docs/benchmarks.md}
 * reports; {@link #tiny()} runs every measurement briefly, for the smoke test.
 *
 * @param processCounts worker JVMs for the throughput measurements (each one thread, one
 *     connection)
 * @param warmupMillis each throughput point: time every worker spends warming up before counting
 * @param measureMillis each throughput point: the counted window, the same for every worker
 * @param repeats throughput and pgbench: rounds over all contenders at each process count; the
 *     median of the rounds is reported
 * @param spreadKeys the number of keys for the "spread" throughput (processes rotate over them)
 * @param latencySamples latency: samples of each kind (SELECT 1, reservation, bare upsert), taken
 *     call by call in turn
 * @param pgbenchClients pgbench client counts
 * @param pgbenchSeconds pgbench duration of each point ({@code -T})
 * @param accuracyProcesses accuracy: worker JVMs, each with its own limiter
 * @param accuracyThreads accuracy: threads per worker, each calling {@code acquire()} in a loop
 * @param accuracyRate accuracy: the ceiling, per second
 * @param accuracyMillis accuracy: how long the threads keep asking
 * @param overheadRuns overhead at 7/s: repetitions of 8 acquisitions
 * @param fetchUrls fetch throughput: URLs fetched by {@code pacer fetch} and by the bare loop
 * @param fetchThreads fetch throughput: threads of each
 * @param fetchRounds fetch throughput: turns of each; the median is reported
 * @param enqueueUrls enqueue: URLs in the list
 * @param enqueueHosts enqueue: hosts the URLs spread over
 * @param frontier per-host mode: the hosts, their ceiling and backlog, the workers' threads
 * @param claimCost per-host claim cost: the frontier sizes, items per host, claims timed
 * @param hostHeap per-host state: the checkpoints of hosts claimed, and new hosts a second
 */
public record BenchSettings(
    List<Integer> processCounts,
    long warmupMillis,
    long measureMillis,
    int repeats,
    int spreadKeys,
    int latencySamples,
    List<Integer> pgbenchClients,
    int pgbenchSeconds,
    int accuracyProcesses,
    int accuracyThreads,
    double accuracyRate,
    long accuracyMillis,
    int overheadRuns,
    int fetchUrls,
    int fetchThreads,
    int fetchRounds,
    int enqueueUrls,
    int enqueueHosts,
    FrontierBench.Load frontier,
    ClaimCost.Load claimCost,
    HostHeap.Load hostHeap) {

  public BenchSettings {
    processCounts = List.copyOf(processCounts);
    pgbenchClients = List.copyOf(pgbenchClients);
    if (processCounts.isEmpty() || pgbenchClients.isEmpty()) {
      throw new IllegalArgumentException("process and client counts must not be empty");
    }
    if (repeats < 1) {
      throw new IllegalArgumentException("repeats must be at least 1, got " + repeats);
    }
  }

  /** The documented run: about twenty minutes on two cores. */
  public static BenchSettings full() {
    return new BenchSettings(
        List.of(1, 2, 4, 8),
        500,
        2_000,
        3,
        16,
        10_000,
        List.of(1, 2, 4, 8),
        2,
        4,
        16,
        200,
        5_000,
        5,
        5_000,
        32,
        3,
        1_000_000,
        10_000,
        // 500 hosts at 0.5/s, Zipf s = 1, the heaviest with 60 items: about 2 minutes a run.
        new FrontierBench.Load(500, 0.5, 1.0, 60, 3, 8, 10),
        new ClaimCost.Load(List.of(1_000, 10_000), 10, 200, 2_000),
        new HostHeap.Load(List.of(0, 1_000, 10_000, 100_000), 10));
  }

  /**
   * Every measurement, briefly: for the smoke test and a quick look. Throughput at 2 processes
   * only, the least count at which processes contend.
   */
  public static BenchSettings tiny() {
    return new BenchSettings(
        List.of(2),
        200,
        300,
        1,
        4,
        200,
        List.of(2),
        1,
        2,
        4,
        200,
        1_000,
        1,
        300,
        8,
        1,
        20_000,
        200,
        new FrontierBench.Load(8, 10, 1.0, 10, 2, 2, 2),
        new ClaimCost.Load(List.of(10, 50), 4, 5, 20),
        new HostHeap.Load(List.of(0, 1_000, 2_000, 5_000), 10));
  }

  /** The most worker JVMs any measurement needs at once. */
  public int maxProcesses() {
    int most = accuracyProcesses;
    for (int n : processCounts) {
      most = Math.max(most, n);
    }
    return most;
  }
}
