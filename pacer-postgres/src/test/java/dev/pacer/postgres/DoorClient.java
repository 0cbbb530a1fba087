package dev.pacer.postgres;

import dev.pacer.DestinationLimiter;
import dev.pacer.LimiterLookup;
import dev.pacer.jdkhttp.PacedHttpClient;
import dev.pacer.jdkhttp.SentRequest;
import dev.pacer.testing.Arrival;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.function.Consumer;

/**
 * A fleet member's client to the door, as a user sends: a {@link PacedHttpClient} over the JDK's
 * client, so that each request takes its turn from the member's limiter and is stamped where it
 * arrives. Before the run it is warmed up ({@link PacedHttpClient#warmUp}) and sends one paced
 * request on {@link #OPENING_PATH}, as an application's first request: a warm-up sends nothing to a
 * destination, so without it the run's first request would open the connection inside its turn, and
 * would be the first to run the paced client's own path after a turn (its hop, the address check,
 * the answer's classification). The tests count only the run's path. Each request names its member
 * in {@value Arrival#WORKER_HEADER}. A member whose requests are told apart at the door sends each
 * with a query of its own ({@link #send(String)}), under the same path.
 */
final class DoorClient {

  /** The path of the request that opens the connection before the run. */
  static final String OPENING_PATH = "/open";

  private final PacedHttpClient client;
  private final HttpRequest request;
  private final String member;

  private DoorClient(PacedHttpClient client, HttpRequest request, String member) {
    this.client = client;
    this.request = request;
    this.member = member;
  }

  /**
   * A client sending each turn's request to {@code target} (a URL of the door), paced by {@code
   * limiter}, warmed up and with its connection open.
   */
  static DoorClient opened(DestinationLimiter limiter, URI target, String member)
      throws IOException, InterruptedException {
    return opened(PacedHttpClient.builder(http(), LimiterLookup.only(limiter)), target, member);
  }

  /**
   * As {@link #opened(DestinationLimiter, URI, String)}, telling {@code onRequest} of every paced
   * request sent ({@link PacedHttpClient.Builder#onRequest}), the opening request's included.
   */
  static DoorClient opened(
      DestinationLimiter limiter, URI target, String member, Consumer<SentRequest> onRequest)
      throws IOException, InterruptedException {
    return opened(
        PacedHttpClient.builder(http(), LimiterLookup.only(limiter)).onRequest(onRequest),
        target,
        member);
  }

  private static DoorClient opened(PacedHttpClient.Builder builder, URI target, String member)
      throws IOException, InterruptedException {
    PacedHttpClient paced = builder.build();
    paced.warmUp(target);
    DoorClient opening =
        new DoorClient(paced, request(target.resolve(OPENING_PATH), member), member);
    opening.send();
    return new DoorClient(paced, request(target, member), member);
  }

  private static HttpClient http() {
    return HttpClient.newBuilder()
        .version(HttpClient.Version.HTTP_1_1)
        .connectTimeout(Duration.ofSeconds(5))
        .build();
  }

  /** Takes a turn and sends its request; throws unless the door answered 200. */
  void send() throws IOException, InterruptedException {
    expectOk(client.send(request, HttpResponse.BodyHandlers.discarding()));
  }

  /**
   * Takes a turn and sends its request with {@code query} (escaped already) as its query; throws
   * unless the door answered 200.
   */
  void send(String query) throws IOException, InterruptedException {
    URI uri = URI.create(request.uri() + "?" + query);
    expectOk(client.send(request(uri, member), HttpResponse.BodyHandlers.discarding()));
  }

  private static HttpRequest request(URI uri, String member) {
    return HttpRequest.newBuilder(uri)
        .header(Arrival.WORKER_HEADER, member)
        .timeout(Duration.ofSeconds(5))
        .build();
  }

  private static void expectOk(HttpResponse<?> response) throws IOException {
    if (response.statusCode() != 200) {
      throw new IOException(
          "the door answered " + response.statusCode() + " to " + response.request().uri());
    }
  }
}
