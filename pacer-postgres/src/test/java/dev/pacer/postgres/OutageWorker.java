package dev.pacer.postgres;

import dev.pacer.Destination;
import dev.pacer.DestinationLimiter;
import dev.pacer.LimiterRegistry;
import dev.pacer.Slot;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;

/**
 * A fleet member for {@link OutageTest} and {@link LargerFleetOutageTest}: {@code threads} threads
 * acquiring turns as fast as the limiter allows for {@code seconds}, printing {@code ACQ <epoch
 * nanos>} per turn; given a {@code door} URI, each turn also sends a GET there while it holds its
 * slot. At the end it prints {@code ATTEMPTS <connection attempts>}; a thread that died of anything
 * but an interrupt makes it exit {@link WorkerThreads#DIED}.
 *
 * <p>Arguments: {@code jdbcUrl destination ratePerSecond threads maxFetchingProcesses seconds
 * [door [djangoCacheTable]]}: with a table named, the cursor keeps the destination in that
 * Django-style cache table (which must exist) rather than in Pacer's own.
 */
public final class OutageWorker {

  public static void main(String[] args) throws Exception {
    String jdbcUrl = args[0];
    int threads = Integer.parseInt(args[3]);
    Destination destination = Destination.builder(args[1])
        .ratePerSecond(Double.parseDouble(args[2]))
        .maxConcurrency(threads)
        .maxFetchingProcesses(Integer.parseInt(args[4]))
        .build();
    long runNanos = Duration.ofSeconds(Long.parseLong(args[5])).toNanos();
    URI door = args.length > 6 ? URI.create(args[6]) : null;
    HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    TableLayout layout =
        args.length > 7 ? TableLayout.djangoCache(args[7]) : TableLayout.pacerTable();
    PostgresCursor cursor = new PostgresCursor(
        PostgresCursorConfig.forUrl(jdbcUrl).layout(layout).build());
    DestinationLimiter limiter = new LimiterRegistry(cursor).limiter(destination);
    if (!cursor.connect(Duration.ofSeconds(30))) {
      throw new IllegalStateException("could not connect to " + jdbcUrl);
    }
    if (door != null) {
      // A cold client's first requests leave late and bunch at the door; warm it on a path of its
      // own, which the tests do not count.
      URI warm = door.resolve("/warm");
      for (int i = 0; i < 3; i++) {
        http.send(HttpRequest.newBuilder(warm).build(), HttpResponse.BodyHandlers.discarding());
      }
    }
    System.out.println("READY");
    System.out.flush();
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    if (!"GO".equals(in.readLine())) {
      throw new IllegalStateException("expected GO");
    }
    long end = System.nanoTime() + runNanos;
    WorkerThreads workers = new WorkerThreads();
    for (int t = 0; t < threads; t++) {
      workers.start(() -> {
        while (System.nanoTime() < end) {
          try (Slot slot = limiter.acquire()) {
            if (door != null) {
              http.send(HttpRequest.newBuilder(door).timeout(Duration.ofSeconds(5)).build(),
                  HttpResponse.BodyHandlers.discarding());
            }
          }
          Instant now = Instant.now();
          System.out.println("ACQ " + (now.getEpochSecond() * 1_000_000_000L + now.getNano()));
        }
      });
    }
    workers.joinAll();
    System.out.println("ATTEMPTS " + cursor.connectionAttempts());
    System.out.flush();
    cursor.close();
    workers.exitIfAnyDied();
  }
}
