package dev.pacer.http;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Objects;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLEngine;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Pays a cold JVM's first-request costs before the first turn, for any paced client: one request
 * through the client, which takes no turn, to a throwaway server on 127.0.0.1, then, for each https
 * destination, the TLS stack, and the resolution of each destination's host name. Nothing is sent
 * to any destination. Each integration calls {@link #run} with the way its client sends one unpaced
 * GET: {@code PacedHttpClient#warmUp}, {@code DestinationFetcher#warmUp(URI)}, and {@code
 * PacingInterceptor.warmUp} (pacer-okhttp) and {@code PacingExecChainHandler.warmUp}
 * (pacer-httpclient5).
 *
 * <p>Why: in a cold JVM the first requests load the client's classes and start its threads after
 * their turns have begun. Requests granted turns meanwhile wait for the same work and reach the
 * destination together, more than the ceiling in one second (docs/integrations.md, "A cold JVM",
 * and docs/reliability.md, "A cold HTTP client", have the figures). A warm-up cannot open the first
 * connection to a destination (that would send it something): that one is still paid inside a turn.
 *
 * <p>Failures are logged at DEBUG and ignored: a cold first request is slower, not wrong.
 */
public final class WarmUp {

  private static final Logger log = LoggerFactory.getLogger(WarmUp.class);

  private WarmUp() {}

  /** How a client sends one GET that takes no turn. */
  @FunctionalInterface
  public interface LoopbackGet {
    /**
     * Sends a GET for {@code uri} through the client being warmed up, without taking a turn, and
     * reads or discards its answer.
     *
     * @param uri the throwaway server's URI, on 127.0.0.1
     * @throws Exception whatever the client throws; logged and ignored
     */
    void send(URI uri) throws Exception;
  }

  /**
   * Warms up a client: {@code get} once to a throwaway server on 127.0.0.1 that answers every
   * request with {@code 200 ok} at once, then each of {@code destinations} ({@link #destination}).
   * Call it once, before the first request.
   *
   * @param get how the client sends one GET without a turn
   * @param destinations URLs of the destinations the client will send to, for their scheme and host
   *     (none is needed for the client's own warm-up)
   * @throws InterruptedException if interrupted during the warm-up
   */
  public static void run(LoopbackGet get, URI... destinations) throws InterruptedException {
    Objects.requireNonNull(get, "get");
    try (LoopbackServer server = new LoopbackServer()) {
      get.send(server.uri());
    } catch (InterruptedException e) {
      throw e;
    } catch (Exception e) {
      log.debug("Client warm-up failed: {}", e.toString());
    }
    for (URI destination : destinations) {
      destination(destination);
    }
  }

  /**
   * The parts of a warm-up that concern a destination itself: for an https {@code url}, the TLS
   * stack, then the resolution of its host name. Failures are logged at DEBUG and ignored.
   *
   * @param url a URL of the destination
   */
  public static void destination(URI url) {
    String host = url.getHost();
    if (host == null) {
      return;
    }
    if ("https".equalsIgnoreCase(url.getScheme())) {
      try {
        tls(host, url.getPort() == -1 ? 443 : url.getPort());
      } catch (Exception e) {
        log.debug("TLS warm-up for {} failed: {}", host, e.toString());
      }
    }
    try {
      InetAddress.getAllByName(host);
    } catch (IOException e) {
      log.debug("Could not resolve {} ahead of the first turn: {}", host, e.toString());
    }
  }

  /**
   * Answers each HTTP request on 127.0.0.1 with a fixed {@code 200 ok}, closing the connection
   * after it, until closed.
   */
  static final class LoopbackServer implements AutoCloseable {
    private static final byte[] ANSWER =
        ("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n" + "Connection: close\r\n\r\nok")
            .getBytes(StandardCharsets.US_ASCII);

    private final ServerSocket socket;

    LoopbackServer() throws IOException {
      socket = new ServerSocket();
      socket.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 1);
      Thread t = new Thread(this::answer, "pacer-warm-up");
      t.setDaemon(true);
      t.start();
    }

    URI uri() {
      return URI.create("http://127.0.0.1:" + socket.getLocalPort() + "/pacer-warm-up");
    }

    private void answer() {
      while (!socket.isClosed()) {
        try (Socket s = socket.accept()) {
          s.setSoTimeout(10_000);
          InputStream in = s.getInputStream();
          int matched = 0;
          byte[] end = {'\r', '\n', '\r', '\n'};
          int c;
          while (matched < end.length && (c = in.read()) != -1) {
            matched = c == end[matched] ? matched + 1 : (c == '\r' ? 1 : 0);
          }
          OutputStream out = s.getOutputStream();
          out.write(ANSWER);
          out.flush();
        } catch (IOException e) {
          // Closed (the warm-up is over), or this connection failed; the warm-up reports that.
        }
      }
    }

    @Override
    public void close() throws IOException {
      socket.close();
    }
  }

  /** Loads and initialises the default TLS context and one client handshake's first flight. */
  static void tls(String host, int port) throws Exception {
    SSLContext context = SSLContext.getDefault();
    SSLEngine engine = context.createSSLEngine(host, port);
    engine.setUseClientMode(true);
    engine.beginHandshake();
    ByteBuffer out = ByteBuffer.allocate(engine.getSession().getPacketBufferSize());
    engine.wrap(ByteBuffer.allocate(0), out);
    engine.closeOutbound();
  }
}
