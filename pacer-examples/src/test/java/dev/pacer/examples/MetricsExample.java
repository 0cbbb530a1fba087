package dev.pacer.examples;

import dev.pacer.Destination;
import dev.pacer.DestinationLimiter;
import dev.pacer.LimiterRegistry;
import dev.pacer.Slot;
import dev.pacer.micrometer.PacerMetrics;
import dev.pacer.postgres.PostgresCursor;
import dev.pacer.postgres.PostgresCursorConfig;
import io.micrometer.core.instrument.MeterRegistry;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpResponse.BodyHandlers;
import java.util.List;
import java.util.Properties;

/** Pacer's Micrometer meters, bound once per registry: docs/integrations.md's "Metrics". */
final class MetricsExample {

  private MetricsExample() {}

  static void fetchAll(
      String jdbcUrl,
      Properties props,
      HttpClient client,
      List<HttpRequest> requests,
      MeterRegistry meterRegistry)
      throws Exception {
    try (PostgresCursor cursor =
        new PostgresCursor(PostgresCursorConfig.forUrl(jdbcUrl, props).build())) {
      // tag::bind[]
      LimiterRegistry limiters = new LimiterRegistry(cursor);
      new PacerMetrics(limiters).bindTo(meterRegistry); // every limiter, now and created later

      DestinationLimiter limiter =
          limiters.limiter(Destination.builder("thumbnails.example.com").ratePerSecond(7).build());
      // end::bind[]
      for (HttpRequest request : requests) {
        try (Slot slot = limiter.acquire()) {
          HttpResponse<byte[]> r = client.send(request, BodyHandlers.ofByteArray());
          limiter.noteAnswer(
              r.statusCode(), r.headers().firstValue("Retry-After").orElse(null), request.uri());
        }
      }
    }
  }
}
