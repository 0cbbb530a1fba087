package dev.pacer.postgres;

import dev.pacer.DestinationLimiter;
import dev.pacer.PacedHttpClient;
import dev.pacer.testing.Arrival;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;

/**
 * A fleet member's client to the door, as a user sends: a {@link PacedHttpClient} over the JDK's
 * client, so that each request takes its turn from the member's limiter and is stamped where it
 * arrives. Before the run it is warmed up ({@link PacedHttpClient#warmUp}) and sends one paced
 * request on {@link #OPENING_PATH}, as an application's first request: a warm-up sends nothing to
 * a destination, so without it the run's first request would open the connection inside its turn,
 * and would be the first to run the paced client's own path after a turn (its hop, the address
 * check, the answer's classification). The tests count only the run's path. Each request names
 * its member in {@value Arrival#WORKER_HEADER}.
 */
final class DoorClient {

  /** The path of the request that opens the connection before the run. */
  static final String OPENING_PATH = "/open";

  private final PacedHttpClient client;
  private final HttpRequest request;

  private DoorClient(PacedHttpClient client, HttpRequest request) {
    this.client = client;
    this.request = request;
  }

  /**
   * A client sending each turn's request to {@code target} (a URL of the door), paced by {@code
   * limiter}, warmed up and with its connection open.
   */
  static DoorClient opened(DestinationLimiter limiter, URI target, String member)
      throws IOException, InterruptedException {
    HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
        .connectTimeout(Duration.ofSeconds(5)).build();
    PacedHttpClient paced = PacedHttpClient.of(http, limiter);
    paced.warmUp(target);
    DoorClient opening = new DoorClient(paced, request(target.resolve(OPENING_PATH), member));
    opening.send();
    return new DoorClient(paced, request(target, member));
  }

  /** Takes a turn and sends its request; throws unless the door answered 200. */
  void send() throws IOException, InterruptedException {
    expectOk(client.send(request, HttpResponse.BodyHandlers.discarding()));
  }

  private static HttpRequest request(URI uri, String member) {
    return HttpRequest.newBuilder(uri).header(Arrival.WORKER_HEADER, member)
        .timeout(Duration.ofSeconds(5)).build();
  }

  private static void expectOk(HttpResponse<?> response) throws IOException {
    if (response.statusCode() != 200) {
      throw new IOException("the door answered " + response.statusCode() + " to "
          + response.request().uri());
    }
  }
}
