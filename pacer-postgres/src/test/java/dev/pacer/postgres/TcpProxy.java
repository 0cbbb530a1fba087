package dev.pacer.postgres;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A TCP forwarder to a database that a test can turn into a black hole: while blackholed it keeps
 * every socket open and accepts new ones, but forwards nothing in either direction, which is what a
 * hung server or a silently dropped network looks like to a client. It also counts the round trips
 * its clients begin, read from the protocol (see {@link FrontendRoundTrips}), and can lose the
 * answer to one statement after the statement has committed ({@link #loseTheAnswerTo}), and can
 * keep every notification from its clients ({@link #dropNotifications}); these need a client that
 * does not encrypt ({@code sslmode=disable&gssEncMode=disable}).
 */
public final class TcpProxy implements AutoCloseable {

  private final ServerSocket server;
  private final int upstreamPort;
  private final List<Socket> sockets = new CopyOnWriteArrayList<>();

  /** The client side of every accepted connection, in the order accepted. */
  private final List<Socket> clients = new CopyOnWriteArrayList<>();

  private final java.util.Set<Socket> silenced = java.util.concurrent.ConcurrentHashMap.newKeySet();
  private volatile boolean blackholed;
  private volatile boolean droppingNotifications;
  private volatile boolean closed;
  private final AtomicLong accepted = new AtomicLong();
  private final AtomicLong roundTrips = new AtomicLong();

  /** What the statement whose answer is to be lost contains, until a client sends it. */
  private final AtomicReference<byte[]> loseAnswerTo = new AtomicReference<>();

  private final AtomicLong answersLost = new AtomicLong();

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
   * Round trips begun by all clients so far, counted as the client sends the message that ends one,
   * before it is forwarded: so a round trip is counted by the time its answer arrives. Messages are
   * counted whether or not the proxy is blackholed.
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

  /**
   * Lets the next statement a client sends whose text holds {@code marker} run, and loses the
   * answer that ends its transaction: the connection that sent it is cut (both sockets closed) when
   * the server's first ReadyForQuery after it that says the session is idle arrives (in autocommit,
   * the statement's own; in a transaction, its commit's), and nothing of the answer in that read
   * reaches the client. The server says so only once the transaction has committed: what the client
   * sees is a connection lost while it waited, although its work was done. One statement only;
   * later ones are forwarded as usual. The marker is looked for in the bytes the client sends (a
   * Parse or a simple Query carries the statement's text; a statement the driver has prepared on
   * the server carries none).
   */
  public void loseTheAnswerTo(String marker) {
    loseAnswerTo.set(marker.getBytes(StandardCharsets.UTF_8));
  }

  /** Answers lost so far ({@link #loseTheAnswerTo}). */
  public long answersLost() {
    return answersLost.get();
  }

  /**
   * Forwards everything but the server's NotificationResponse messages, on connections accepted
   * from now on: what a proxy or pooler that does not pass on {@code NOTIFY} looks like to a client
   * that {@code LISTEN}s, with its own server process behind it all along.
   */
  public void dropNotifications() {
    droppingNotifications = true;
  }

  /** Stop forwarding; sockets stay open and silent. */
  public void blackhole() {
    blackholed = true;
  }

  /**
   * Stops forwarding on every connection open now, for good, and keeps them open: what a connection
   * whose path a NAT or a firewall forgot looks like to its client (half-open). New connections are
   * forwarded.
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
        AnswerCutter cutter = new AnswerCutter();
        pump(
            client,
            upstream,
            (bytes, length) -> {
              fromClient.read(bytes, length);
              cutter.clientSent(bytes, length);
              return true;
            },
            Filter.NONE);
        pump(
            upstream,
            client,
            cutter::serverSent,
            droppingNotifications ? new NotificationDropper() : Filter.NONE);
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
    /** Whether to forward them; false cuts the connection instead. */
    boolean read(byte[] bytes, int length);
  }

  /** What a pump forwards of the bytes it read. */
  private interface Filter {
    Filter NONE = Arrays::copyOf;

    byte[] forwarded(byte[] bytes, int length);
  }

  /**
   * Cuts the server's NotificationResponse messages ({@code A}) out of its stream, whole: reads
   * every message from the connection's first byte (a type byte and a length that counts itself),
   * holding a message's header back until it is complete.
   */
  private static final class NotificationDropper implements Filter {
    private final byte[] header = new byte[5];
    private int headerFilled;
    private long bodyLeft;
    private boolean dropping;

    @Override
    public byte[] forwarded(byte[] bytes, int length) {
      java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream(length + header.length);
      int i = 0;
      while (i < length) {
        if (bodyLeft > 0) {
          int body = (int) Math.min(bodyLeft, length - i);
          if (!dropping) {
            out.write(bytes, i, body);
          }
          bodyLeft -= body;
          i += body;
          continue;
        }
        header[headerFilled++] = bytes[i++];
        if (headerFilled == header.length) {
          headerFilled = 0;
          bodyLeft =
              ((header[1] & 0xffL) << 24
                      | (header[2] & 0xff) << 16
                      | (header[3] & 0xff) << 8
                      | header[4] & 0xff)
                  - 4;
          dropping = header[0] == 'A';
          if (!dropping) {
            out.write(header, 0, header.length);
          }
        }
      }
      return out.toByteArray();
    }
  }

  /**
   * One connection's part in {@link #loseTheAnswerTo}: finds the marker in what the client sends,
   * then reads the server's messages that follow (a type byte and a length that counts itself)
   * until a ReadyForQuery whose status is idle ({@code I}). The client waits for the previous
   * statement's ReadyForQuery before it sends the next, so the server's stream is at a message's
   * start when the marker is seen.
   */
  private final class AnswerCutter {
    /** The client's last bytes of its previous read: a marker may span two reads. */
    private byte[] tail = new byte[0];

    private volatile boolean armed;
    private final byte[] header = new byte[5];
    private int headerFilled;
    private long bodyLeft;

    /** The next byte is a ReadyForQuery's transaction status. */
    private boolean statusNext;

    void clientSent(byte[] bytes, int length) {
      byte[] marker = loseAnswerTo.get();
      if (marker == null || armed) {
        return;
      }
      byte[] seen = new byte[tail.length + length];
      System.arraycopy(tail, 0, seen, 0, tail.length);
      System.arraycopy(bytes, 0, seen, tail.length, length);
      if (contains(seen, marker) && loseAnswerTo.compareAndSet(marker, null)) {
        armed = true;
        return;
      }
      int keep = Math.min(seen.length, marker.length - 1);
      tail = Arrays.copyOfRange(seen, seen.length - keep, seen.length);
    }

    boolean serverSent(byte[] bytes, int length) {
      if (!armed) {
        return true;
      }
      int i = 0;
      while (i < length) {
        if (statusNext) {
          statusNext = false;
          bodyLeft--;
          if (bytes[i++] == 'I') {
            armed = false;
            answersLost.incrementAndGet();
            return false;
          }
          continue;
        }
        if (bodyLeft > 0) {
          int skipped = (int) Math.min(bodyLeft, length - i);
          bodyLeft -= skipped;
          i += skipped;
          continue;
        }
        header[headerFilled++] = bytes[i++];
        if (headerFilled == header.length) {
          headerFilled = 0;
          bodyLeft =
              ((header[1] & 0xffL) << 24
                      | (header[2] & 0xff) << 16
                      | (header[3] & 0xff) << 8
                      | header[4] & 0xff)
                  - 4;
          statusNext = header[0] == 'Z' && bodyLeft == 1;
        }
      }
      return true;
    }

    private static boolean contains(byte[] bytes, byte[] marker) {
      outer:
      for (int i = 0; i + marker.length <= bytes.length; i++) {
        for (int j = 0; j < marker.length; j++) {
          if (bytes[i + j] != marker[j]) {
            continue outer;
          }
        }
        return true;
      }
      return false;
    }
  }

  /** Copies one direction; when either side ends, closes both, as a real connection would. */
  private void pump(Socket fromSocket, Socket toSocket, Reader reader, Filter filter) {
    Thread t =
        new Thread(
            () -> {
              byte[] buffer = new byte[16384];
              try {
                InputStream from = fromSocket.getInputStream();
                OutputStream to = toSocket.getOutputStream();
                int n;
                while ((n = from.read(buffer)) >= 0) {
                  if (!reader.read(buffer, n)) {
                    return; // cut: both sides are closed below, the bytes read never forwarded
                  }
                  if (!blackholed && !silenced.contains(fromSocket)) {
                    to.write(filter.forwarded(buffer, n));
                    to.flush();
                  }
                }
              } catch (IOException ignored) {
                // One side failed; both are closed below.
              } finally {
                closeQuietly(fromSocket);
                closeQuietly(toSocket);
              }
            },
            "tcp-proxy-pump");
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
