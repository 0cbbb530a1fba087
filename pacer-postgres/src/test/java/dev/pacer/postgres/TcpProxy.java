package dev.pacer.postgres;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A TCP forwarder to a database that a test can turn into a black hole: while blackholed it keeps
 * every socket open and accepts new ones, but forwards nothing in either direction, which is what
 * a hung server or a silently dropped network looks like to a client.
 */
public final class TcpProxy implements AutoCloseable {

  private final ServerSocket server;
  private final int upstreamPort;
  private final List<Socket> sockets = new CopyOnWriteArrayList<>();
  private volatile boolean blackholed;
  private volatile boolean closed;
  private final java.util.concurrent.atomic.AtomicLong accepted = new java.util.concurrent.atomic.AtomicLong();

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

  /** Stop forwarding; sockets stay open and silent. */
  public void blackhole() {
    blackholed = true;
  }

  /** Forward again (connections that lost bytes meanwhile are out of sync; new ones work). */
  public void restore() {
    blackholed = false;
  }

  private void acceptLoop() {
    while (!closed) {
      try {
        Socket client = server.accept();
        accepted.incrementAndGet();
        sockets.add(client);
        Socket upstream;
        try {
          upstream = new Socket(InetAddress.getLoopbackAddress(), upstreamPort);
        } catch (IOException refused) {
          client.close(); // the database is down: the client sees its connection fail
          continue;
        }
        sockets.add(upstream);
        pump(client, upstream);
        pump(upstream, client);
      } catch (IOException e) {
        if (!closed) {
          continue;
        }
        return;
      }
    }
  }

  /** Copies one direction; when either side ends, closes both, as a real connection would. */
  private void pump(Socket fromSocket, Socket toSocket) {
    Thread t = new Thread(() -> {
      byte[] buffer = new byte[16384];
      try {
        InputStream from = fromSocket.getInputStream();
        OutputStream to = toSocket.getOutputStream();
        int n;
        while ((n = from.read(buffer)) >= 0) {
          if (!blackholed) {
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
