package dev.pacer.bench;

import dev.pacer.Destination;
import dev.pacer.DestinationLimiter;
import dev.pacer.LimiterRegistry;
import dev.pacer.postgres.PostgresCursor;
import dev.pacer.postgres.PostgresCursorConfig;
import java.util.Arrays;

/**
 * Pacer's overhead at a low rate: 8 acquisitions through a {@link DestinationLimiter} at 7/s take 7
 * intervals, 1.000 s, by construction; whatever is measured beyond that is the reservations' round
 * trips and the sleeps' lateness. The cursor is connected before the clock starts, as in a running
 * process.
 */
final class Overhead {

  static final double RATE = 7;
  static final int ACQUISITIONS = 8;

  /** Each run's elapsed time divided by 1.000 s, in run order. */
  record Result(double[] ratios) {

    double median() {
      double[] sorted = ratios.clone();
      Arrays.sort(sorted);
      int n = sorted.length;
      return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
    }

    double max() {
      return Arrays.stream(ratios).max().orElseThrow();
    }
  }

  private Overhead() {}

  static Result measure(Database.Target db, int runs) throws InterruptedException {
    double[] ratios = new double[runs];
    try (PostgresCursor cursor =
        new PostgresCursor(PostgresCursorConfig.forUrl(db.jdbcUrl(), db.properties()).build())) {
      PacerOperation.awaitConnected(cursor);
      LimiterRegistry registry = new LimiterRegistry(cursor);
      long expectedNanos = Math.round((ACQUISITIONS - 1) / RATE * 1e9);
      for (int run = 0; run < runs; run++) {
        DestinationLimiter limiter =
            registry.limiter(
                Destination.builder("bench-overhead-" + System.nanoTime())
                    .ratePerSecond(RATE)
                    .build());
        long t0 = System.nanoTime();
        for (int i = 0; i < ACQUISITIONS; i++) {
          limiter.acquire().close();
        }
        ratios[run] = (System.nanoTime() - t0) / (double) expectedNanos;
      }
    }
    return new Result(ratios);
  }
}
