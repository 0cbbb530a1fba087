package dev.pacer.examples;

import dev.pacer.DestinationLimiter;
import dev.pacer.jdkhttp.PacedHttpClient;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/** Requests that wait for their turns without a thread: docs/integrations.md, "Asynchronous". */
final class AsyncExample {

  private AsyncExample() {}

  static List<CompletableFuture<HttpResponse<String>>> fetchAll(
      DestinationLimiter limiter, URI destination, List<HttpRequest> requests) throws Exception {
    List<CompletableFuture<HttpResponse<String>>> responses = new ArrayList<>();
    // tag::async[]
    PacedHttpClient client =
        PacedHttpClient.of(
            HttpClient.newBuilder().followRedirects(HttpClient.Redirect.NEVER).build(), limiter);
    client.warmUp(destination); // a cold JVM's first sends would leave together: pay it now
    for (HttpRequest request : requests) {
      responses.add(
          client.sendAsync(
              request, // returns at once; no thread waits
              HttpResponse.BodyHandlers.ofString())); // completes when the answer is in
    }
    // end::async[]
    return responses;
  }
}
