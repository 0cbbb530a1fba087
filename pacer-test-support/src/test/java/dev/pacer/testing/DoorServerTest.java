package dev.pacer.testing;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.SocketException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The door answers what it is told, stamps every request, and bounds what it reads. */
class DoorServerTest {

  @Test
  void stampsEachRequestBeforeAnsweringAndAnswersByPath() throws Exception {
    try (DoorServer door = new DoorServer(Answer::byPath)) {
      HttpClient client = HttpClient.newHttpClient();
      long before = System.nanoTime();
      HttpResponse<String> ok =
          client.send(
              HttpRequest.newBuilder(URI.create(door.url("/a?x=1")))
                  .header(Arrival.WORKER_HEADER, "w1")
                  .build(),
              HttpResponse.BodyHandlers.ofString());
      HttpResponse<String> busy =
          client.send(
              HttpRequest.newBuilder(URI.create(door.url("/status/429/7")))
                  .POST(HttpRequest.BodyPublishers.ofString("hi"))
                  .build(),
              HttpResponse.BodyHandlers.ofString());
      long after = System.nanoTime();

      assertThat(ok.statusCode()).isEqualTo(200);
      assertThat(busy.statusCode()).isEqualTo(429);
      assertThat(busy.headers().firstValue("Retry-After")).hasValue("7");
      List<Arrival> arrivals = door.arrivals();
      assertThat(arrivals).hasSize(2);
      assertThat(arrivals.get(0).target()).isEqualTo("/a?x=1");
      assertThat(arrivals.get(0).path()).isEqualTo("/a");
      assertThat(arrivals.get(0).worker()).isEqualTo("w1");
      assertThat(arrivals.get(0).opened()).isTrue();
      assertThat(arrivals.get(1).opened()).as("the second on the kept connection").isFalse();
      assertThat(arrivals.get(1).status()).isEqualTo(429);
      assertThat(new String(arrivals.get(1).request().body(), StandardCharsets.UTF_8))
          .isEqualTo("hi");
      assertThat(arrivals).allSatisfy(a -> assertThat(a.nanos()).isBetween(before, after));
    }
  }

  @Test
  void refusesAChunkedBodyAndClosesTheConnection() throws Exception {
    try (DoorServer door = new DoorServer(r -> Answer.OK);
        Socket socket = new Socket("127.0.0.1", door.port())) {
      OutputStream out = socket.getOutputStream();
      out.write(
          ("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                  + "2\r\nhi\r\n0\r\n\r\n")
              .getBytes(StandardCharsets.US_ASCII));
      out.flush();
      InputStream in = socket.getInputStream();
      String answer = new String(in.readAllBytes(), StandardCharsets.US_ASCII);
      assertThat(answer).startsWith("HTTP/1.1 411 ");
      assertThat(door.arrivals()).singleElement().extracting(Arrival::status).isEqualTo(411);
    }
  }

  @Test
  void aHeadAboveTheLimitEndsTheConnection() throws IOException {
    try (DoorServer door = new DoorServer(r -> Answer.OK);
        Socket socket = new Socket("127.0.0.1", door.port())) {
      OutputStream out = socket.getOutputStream();
      out.write(
          ("GET / HTTP/1.1\r\nX: " + "a".repeat(DoorServer.MAX_HEAD_BYTES) + "\r\n\r\n")
              .getBytes(StandardCharsets.US_ASCII));
      out.flush();
      byte[] answer;
      try {
        answer = socket.getInputStream().readAllBytes();
      } catch (SocketException reset) {
        // The door closed with the rest of the head unread: the kernel resets the connection.
        answer = new byte[0];
      }
      assertThat(answer).as("no answer to a head above the limit").isEmpty();
      assertThat(door.arrivals()).isEmpty();
    }
  }
}
