package dev.pacer;

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
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLEngine;

/**
 * The parts of {@link DestinationFetcher#warmUp} that do not need the fetcher: a throwaway
 * loopback server that answers one request, the TLS stack, and name resolution.
 */
final class WarmUp {

  private WarmUp() {}

  /** Answers exactly one HTTP request on 127.0.0.1 with a fixed {@code 200 ok}, then closes. */
  static final class LoopbackServer implements AutoCloseable {
    private static final byte[] ANSWER = ("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n"
        + "Connection: close\r\n\r\nok").getBytes(StandardCharsets.US_ASCII);

    private final ServerSocket socket;

    LoopbackServer() throws IOException {
      socket = new ServerSocket();
      socket.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 1);
      Thread t = new Thread(this::answerOnce, "pacer-warm-up");
      t.setDaemon(true);
      t.start();
    }

    URI uri() {
      return URI.create("http://127.0.0.1:" + socket.getLocalPort() + "/pacer-warm-up");
    }

    private void answerOnce() {
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
        // Closed before a request came (the client failed first); the warm-up reports that.
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

  /**
   * The parts of a warm-up that concern the destination itself: for an https {@code url}, the TLS
   * stack, then the resolution of its host name. Failures are logged at DEBUG and ignored: a cold
   * first request is slower, not wrong.
   */
  static void destination(URI url, org.slf4j.Logger log) {
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
      resolve(host);
    } catch (IOException e) {
      log.debug("Could not resolve {} ahead of the first turn: {}", host, e.toString());
    }
  }

  /** Resolves {@code host}, filling the JVM's name cache. */
  static void resolve(String host) throws IOException {
    InetAddress.getAllByName(host);
  }
}
