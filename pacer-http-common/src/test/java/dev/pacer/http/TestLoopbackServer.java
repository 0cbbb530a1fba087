package dev.pacer.http;

import java.io.IOException;
import java.net.URI;

/** The warm-up's throwaway server on 127.0.0.1, for tests in other packages. */
public final class TestLoopbackServer implements AutoCloseable {

  private final WarmUp.LoopbackServer server;

  /** Starts answering every request with {@code 200 ok} at once. */
  public TestLoopbackServer() throws IOException {
    server = new WarmUp.LoopbackServer();
  }

  /** A URI on the server. */
  public URI uri() {
    return server.uri();
  }

  @Override
  public void close() throws IOException {
    server.close();
  }
}
