package dev.pacer.jdkhttp.fetch;

import dev.pacer.Destination;
import dev.pacer.DestinationLimiter;
import dev.pacer.LimiterRegistry;
import dev.pacer.LocalCursor;
import dev.pacer.jdkhttp.SentRequest;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * Measures the first request of a fresh JVM, with or without {@link DestinationFetcher#warmUp}: run
 * it in a new JVM each time, on the test classpath, as {@code java -cp ...
 * dev.pacer.jdkhttp.WarmUpProbe cold|warm}. Prints the lateness of the first two requests (turn
 * start to hand-over to the client), when the destination received each (turn start to the
 * request's arrival), and how many classes the JVM loaded in the warm-up and in the first fetch;
 * with {@code -Xlog:class+load} the "-- first fetch" lines delimit the classes that fetch loaded.
 * Not a test: the figures in {@link DestinationFetcher#warmUp(URI)} come from it.
 */
public final class WarmUpProbe {

  public static void main(String[] args) throws Exception {
    boolean warm = args.length > 0 && args[0].equals("warm");
    List<Long> arrivals = new CopyOnWriteArrayList<>();
    ServerSocket server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    Thread t = new Thread(() -> serve(server, arrivals), "destination");
    t.setDaemon(true);
    t.start();
    URI uri = URI.create("http://127.0.0.1:" + server.getLocalPort() + "/item");

    List<SentRequest> sent = new CopyOnWriteArrayList<>();
    DestinationLimiter limiter =
        new LimiterRegistry(new LocalCursor())
            .limiter(Destination.builder("probe").ratePerSecond(5).build());
    DestinationFetcher fetcher = DestinationFetcher.builder(limiter).onRequest(sent::add).build();
    var classes = ManagementFactory.getClassLoadingMXBean();
    long warmUpNanos = 0;
    int warmUpClasses = 0;
    if (warm) {
      int before = classes.getLoadedClassCount();
      long start = System.nanoTime();
      fetcher.warmUp(uri);
      warmUpNanos = System.nanoTime() - start;
      warmUpClasses = classes.getLoadedClassCount() - before;
    }
    int before = classes.getLoadedClassCount();
    System.out.println("-- first fetch begins");
    fetcher.fetch(uri);
    System.out.println("-- first fetch ends");
    int firstClasses = classes.getLoadedClassCount() - before;
    fetcher.fetch(uri);
    System.out.printf(
        "%s warmUp=%.1fms/%d classes | first: late=%.2fms arrived=%.2fms "
            + "classes=%d | second: late=%.2fms arrived=%.2fms%n",
        warm ? "warm" : "cold",
        warmUpNanos / 1e6,
        warmUpClasses,
        sent.get(0).lateness().toNanos() / 1e6,
        (arrivals.get(0) - sent.get(0).turnNanos()) / 1e6,
        firstClasses,
        sent.get(1).lateness().toNanos() / 1e6,
        (arrivals.get(1) - sent.get(1).turnNanos()) / 1e6);
  }

  /** Answers each request with a fixed 200, noting when its request line arrived. */
  private static void serve(ServerSocket server, List<Long> arrivals) {
    byte[] answer =
        "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".getBytes(StandardCharsets.US_ASCII);
    while (true) {
      try {
        Socket s = server.accept();
        InputStream in = s.getInputStream();
        OutputStream out = s.getOutputStream();
        while (true) {
          int matched = 0;
          int c = in.read();
          if (c == -1) {
            break;
          }
          arrivals.add(System.nanoTime());
          while (matched < 4 && (c = in.read()) != -1) {
            matched = c == "\r\n\r\n".charAt(matched) ? matched + 1 : (c == '\r' ? 1 : 0);
          }
          out.write(answer);
          out.flush();
        }
      } catch (Exception e) {
        return;
      }
    }
  }
}
