package dev.pacer.examples;

import dev.pacer.Destination;
import dev.pacer.DestinationLimiter;
import dev.pacer.LimiterRegistry;
import dev.pacer.Slot;
import dev.pacer.postgres.PostgresCursor;
import dev.pacer.postgres.PostgresCursorConfig;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpResponse.BodyHandlers;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;

/** The limiter used by hand around any client: README's "Library quick start". */
final class LimiterExample {

  /** What became of a list of requests. */
  record Outcome(List<HttpResponse<byte[]>> fetched, List<HttpRequest> deferred, boolean stopped) {}

  private LimiterExample() {}

  static Outcome fetchAll(
      String jdbcUrl, Properties props, HttpClient client, List<HttpRequest> requests)
      throws Exception {
    List<HttpResponse<byte[]>> fetched = new ArrayList<>();
    List<HttpRequest> deferred = new ArrayList<>();
    // tag::setup[]
    // One cursor (one dedicated autocommit connection) and one registry per process.
    PostgresCursor cursor = new PostgresCursor(PostgresCursorConfig.forUrl(jdbcUrl, props).build());
    LimiterRegistry limiters = new LimiterRegistry(cursor);

    Destination images =
        Destination.builder("images.example.com")
            .ratePerSecond(7) // for the whole fleet, not per process
            .maxConcurrency(6) // requests in flight per process
            .maxFetchingProcesses(
                3) // degrade divisor: pace at 7/3 per process if PostgreSQL is down
            .build();
    DestinationLimiter limiter = limiters.limiter(images);
    // end::setup[]
    try (cursor) {
      for (HttpRequest request : requests) {
        // tag::acquire[]
        try (Slot slot = limiter.acquire()) { // blocks until this caller's turn
          HttpResponse<byte[]> r = client.send(request, BodyHandlers.ofByteArray());
          switch (limiter.noteAnswer(
              r.statusCode(), r.headers().firstValue("Retry-After").orElse(null), request.uri())) {
            case CLEAN -> fetched.add(r); // 100 clean answers in a row halve a backoff
            case THROTTLED -> deferred.add(request); // 429/503: the interval doubled, and the
            // whole fleet pauses for a Retry-After
            case LOCKED_OUT -> { // 403: every acquire in the fleet now throws
              return new Outcome(fetched, deferred, true);
            }
          }
        }
        // end::acquire[]
      }
    }
    return new Outcome(fetched, deferred, false);
  }
}
