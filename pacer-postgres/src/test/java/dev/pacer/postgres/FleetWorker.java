package dev.pacer.postgres;

import dev.pacer.Cursor;
import dev.pacer.Destination;
import dev.pacer.DestinationLimiter;
import dev.pacer.LimiterRegistry;
import dev.pacer.LocalCursor;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Instant;

/**
 * One fleet member, run as its own JVM by {@link FleetTest}: builds its own limiter, prints READY,
 * waits for GO on stdin (so that every process starts together), then acquires {@code count}
 * turns and prints each one's wall-clock instant as {@code ACQ <epoch nanos>}.
 *
 * <p>Arguments: {@code shared|local jdbcUrl destination ratePerSecond count}.
 */
public final class FleetWorker {

  public static void main(String[] args) throws Exception {
    boolean shared = args[0].equals("shared");
    String jdbcUrl = args[1];
    Destination destination = Destination.builder(args[2])
        .ratePerSecond(Double.parseDouble(args[3])).maxConcurrency(1).maxFetchingProcesses(3).build();
    int count = Integer.parseInt(args[4]);

    Cursor cursor = shared
        ? new PostgresCursor(PostgresCursorConfig.forUrl(jdbcUrl).build())
        : new LocalCursor();
    LimiterRegistry registry = new LimiterRegistry(cursor);
    DestinationLimiter limiter = registry.limiter(destination);
    if (shared && !((PostgresCursor) cursor).connect(java.time.Duration.ofSeconds(30))) {
      throw new IllegalStateException("could not connect to " + jdbcUrl);
    }
    System.out.println("READY");
    System.out.flush();
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    if (!"GO".equals(in.readLine())) {
      throw new IllegalStateException("expected GO");
    }
    for (int i = 0; i < count; i++) {
      limiter.acquire().close();
      Instant now = Instant.now();
      System.out.println("ACQ " + (now.getEpochSecond() * 1_000_000_000L + now.getNano()));
    }
    System.out.flush();
    if (cursor instanceof PostgresCursor pg) {
      pg.close();
    }
  }
}
