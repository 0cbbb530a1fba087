package dev.pacer.http;

import dev.pacer.Destination;
import dev.pacer.LimiterLookup;
import dev.pacer.LimiterRegistry;
import dev.pacer.LocalCursor;
import dev.pacer.postgres.PostgresCursor;
import dev.pacer.postgres.PostgresCursorConfig;
import dev.pacer.postgres.TestDatabase;
import dev.pacer.spi.Cursor;
import dev.pacer.testing.DoorServer;
import java.net.URI;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What pacing adds to one request, per integration: each client bare, paced on a {@link
 * LocalCursor}, and paced on a {@link PostgresCursor} (embedded PostgreSQL), against one local
 * destination, from one thread, at a ceiling (1,000,000/s) that never makes a request wait. The
 * variants run in interleaved rounds, so that a change in the machine's load hits all of them
 * alike; the figure is the median over rounds of the mean per request. Not a test: run it by hand
 * (the command is in docs/benchmarks.md, "The HTTP clients") and read the figures with the
 * machine's load beside them.
 */
public final class OverheadProbe {

  private static final int WARM_UP = 1_000;
  private static final int ROUNDS = 11;
  private static final int PER_ROUND = 200;

  public static void main(String[] args) throws Exception {
    Destination destination =
        Destination.builder("overhead-" + System.nanoTime())
            .ratePerSecond(Destination.MAX_RATE_PER_SECOND)
            .maxConcurrency(64)
            .build();
    try (DoorServer server = new DoorServer(HopPaths::answer);
        PostgresCursor postgres =
            new PostgresCursor(PostgresCursorConfig.forUrl(TestDatabase.jdbcUrl()).build())) {
      URI uri = HopPaths.uri(server, "/ok/probe");
      Map<String, Client.Getter> variants = new LinkedHashMap<>();
      for (Client kind : Client.values()) {
        variants.put(kind + " bare", kind.bare());
        variants.put(kind + " LocalCursor", kind.open(lookup(new LocalCursor(), destination)));
        variants.put(kind + " PostgresCursor", kind.open(lookup(postgres, destination)));
      }
      for (Client.Getter client : variants.values()) {
        for (int i = 0; i < WARM_UP; i++) {
          client.get(uri);
        }
      }
      Map<String, List<Double>> micros = new LinkedHashMap<>();
      for (int round = 0; round < ROUNDS; round++) {
        for (Map.Entry<String, Client.Getter> v : variants.entrySet()) {
          long start = System.nanoTime();
          for (int i = 0; i < PER_ROUND; i++) {
            v.getValue().get(uri);
          }
          micros
              .computeIfAbsent(v.getKey(), k -> new ArrayList<>())
              .add((System.nanoTime() - start) / 1e3 / PER_ROUND);
        }
      }
      Map<String, Double> median = new LinkedHashMap<>();
      micros.forEach((name, values) -> median.put(name, median(values)));
      for (Client kind : Client.values()) {
        double bare = median.get(kind + " bare");
        System.out.printf(
            "%-7s bare %7.1f us | LocalCursor %7.1f us (+%.1f) | PostgresCursor %7.1f"
                + " us (+%.1f)%n",
            kind,
            bare,
            median.get(kind + " LocalCursor"),
            median.get(kind + " LocalCursor") - bare,
            median.get(kind + " PostgresCursor"),
            median.get(kind + " PostgresCursor") - bare);
      }
      for (Client.Getter client : variants.values()) {
        client.close();
      }
    }
  }

  private static LimiterLookup lookup(Cursor cursor, Destination destination) {
    LimiterRegistry registry = new LimiterRegistry(cursor);
    return LimiterLookup.only(registry.limiter(destination));
  }

  private static double median(List<Double> values) {
    double[] sorted = values.stream().mapToDouble(Double::doubleValue).toArray();
    Arrays.sort(sorted);
    return sorted[sorted.length / 2];
  }
}
