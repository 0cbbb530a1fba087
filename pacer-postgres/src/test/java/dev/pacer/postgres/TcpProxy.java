package dev.pacer.postgres;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A TCP forwarder to a database that a test can turn into a black hole: while blackholed it keeps
 * every socket open and accepts new ones, but forwards nothing in either direction, which is what
 * a hung server or a silently dropped network looks like to a client. It also counts the round
 * trips its clients begin, read from the protocol (see {@link FrontendRoundTrips}); that needs a
 * client that does not encrypt ({@code sslmode=disable&gssEncMode=disable}).
 */
public final class TcpProxy implements AutoCloseable {

  private final ServerSocket server;
  private final int upstreamPort;
  private final List<Socket> sockets = new CopyOnWriteArrayList<>();
  /** The client side of every accepted connection, in the order accepted. */
  private final List<Socket> clients = new CopyOnWriteArrayList<>();
  private final java.util.Set<Socket> silenced = java.util.concurrent.ConcurrentHashMap.newKeySet();
  private volatile boolean blackholed;
  private volatile boolean closed;
  private final AtomicLong accepted = new AtomicLong();
  private final AtomicLong roundTrips = new AtomicLong();

  public TcpProxy(int upstreamPort) throws IOException {
    this.upstreamPort = upstreamPort;
    this.server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    Thread acceptor = new Thread(this::acceptLoop, "tcp-proxy-accept");
    acceptor.setDaemon(true);
    acceptor.start();
  }

  public int port() {
    return server.getLocalPort();
  }

  /** Client connections accepted so far: every connection attempt, whether or not it succeeded. */
  public long connectionsAccepted() {
    return accepted.get();
  }

  /**
   * Round trips begun by all clients so far, counted as the client sends the message that ends
   * one, before it is forwarded: so a round trip is counted by the time its answer arrives.
   * Messages are counted whether or not the proxy is blackholed.
   */
  public long roundTrips() {
    return roundTrips.get();
  }

  /**
   * Waits until at least {@code count} client connections have been accepted, for at most {@code
   * timeout}; returns whether they were.
   */
  public synchronized boolean awaitConnectionsAccepted(long count, Duration timeout)
      throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (accepted.get() < count) {
      long left = deadline - System.nanoTime();
      if (left <= 0) {
        return false;
      }
      wait(Math.max(1, left / 1_000_000L));
    }
    return true;
  }

  /**
   * Whether the {@code n}-th accepted client connection (from 1) is still open: its client has not
   * closed it or given up on it, whether or not anything was forwarded.
   */
  public boolean isOpen(long n) {
    return !clients.get((int) (n - 1)).isClosed();
  }

  /** Stop forwarding; sockets stay open and silent. */
  public void blackhole() {
    blackholed = true;
  }

  /**
   * Stops forwarding on every connection open now, for good, and keeps them open: what a
   * connection whose path a NAT or a firewall forgot looks like to its client (half-open). New
   * connections are forwarded.
   */
  public void silenceOpen() {
    silenced.addAll(sockets);
  }

  /** Forward again (connections that lost bytes meanwhile are out of sync; new ones work). */
  public void restore() {
    blackholed = false;
  }

  private void acceptLoop() {
    while (!closed) {
      try {
        Socket client = server.accept();
        sockets.add(client);
        clients.add(client);
        synchronized (this) {
          accepted.incrementAndGet();
          notifyAll();
        }
        Socket upstream;
        try {
          upstream = new Socket(InetAddress.getLoopbackAddress(), upstreamPort);
        } catch (IOException refused) {
          client.close(); // the database is down: the client sees its connection fail
          continue;
        }
        sockets.add(upstream);
        FrontendRoundTrips fromClient = new FrontendRoundTrips(roundTrips);
        pump(client, upstream, fromClient::read);
        pump(upstream, client, (bytes, length) -> {});
      } catch (IOException e) {
        if (!closed) {
          continue;
        }
        return;
      }
    }
  }

  /** What a pump is shown of the bytes it copies, before it forwards them. */
  private interface Reader {
    void read(byte[] bytes, int length);
  }

  /** Copies one direction; when either side ends, closes both, as a real connection would. */
  private void pump(Socket fromSocket, Socket toSocket, Reader reader) {
    Thread t = new Thread(() -> {
      byte[] buffer = new byte[16384];
      try {
        InputStream from = fromSocket.getInputStream();
        OutputStream to = toSocket.getOutputStream();
        int n;
        while ((n = from.read(buffer)) >= 0) {
          reader.read(buffer, n);
          if (!blackholed && !silenced.contains(fromSocket)) {
            to.write(buffer, 0, n);
            to.flush();
          }
        }
      } catch (IOException ignored) {
        // One side failed; both are closed below.
      } finally {
        closeQuietly(fromSocket);
        closeQuietly(toSocket);
      }
    }, "tcp-proxy-pump");
    t.setDaemon(true);
    t.start();
  }

  private static void closeQuietly(Socket s) {
    try {
      s.close();
    } catch (IOException ignored) {
      // Already closed.
    }
  }

  @Override
  public void close() throws IOException {
    closed = true;
    server.close();
    for (Socket s : sockets) {
      s.close();
    }
  }
}
