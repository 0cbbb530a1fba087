package dev.pacer.cli;

import com.sun.net.httpserver.HttpServer;
import dev.pacer.ArrivalClock;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiFunction;
import java.util.stream.Collectors;

/**
 * Many destinations on one machine for per-host tests and the frontier bench (pacer-bench uses it
 * from this module's test jar): one HTTP server on each of the loopback addresses 127.0.0.2,
 * 127.0.0.3, … 127.0.0.251, then 127.0.1.2 and on ({@value #PER_BLOCK} to a block of 256, Linux
 * routing all of 127/8 to the loopback interface), each a host of its own to a URL list, all
 * recording their arrivals in one list with the host that received them. Answers 200 unless the
 * test's rule says otherwise for (host, attempt at that host, from 1), with a {@code Retry-After}
 * on 429 if set; {@code /robots.txt} answers as {@link #servingRobots} says for its host, if it
 * says.
 */
public final class LoopbackHosts implements AutoCloseable {

  /** Hosts on each 127.0.x block: .2 to .251, clear of .0, .1 (localhost) and .255. */
  static final int PER_BLOCK = 250;
  /** The most hosts: four blocks. */
  static final int MOST = 4 * PER_BLOCK;

  /**
   * An arrival: {@code nanos} on this JVM's monotonic clock, {@code epochMicros} on the wall clock;
   * {@code worker}: the pid the request names in {@code X-Pacer-Worker}.
   */
  public record Arrival(long nanos, long epochMicros, String host, String path, int status,
      String worker) {}

  private final List<HttpServer> servers = new ArrayList<>();
  private final List<String> hosts = new ArrayList<>();
  private final ExecutorService executor;
  private final List<Arrival> arrivals = new ArrayList<>();
  private final Map<String, AtomicInteger> attempts = new ConcurrentHashMap<>();
  private volatile BiFunction<String, Integer, Integer> rule = (host, attempt) -> 200;
  /** When set, answers for (host, path) instead of {@link #rule}. */
  private volatile BiFunction<String, String, Integer> pathRule;
  private volatile String retryAfter;
  private volatile Map<String, Robots> robots = Map.of();

  /** A host's answer to {@code GET /robots.txt}. */
  record Robots(int status, String body) {}

  public LoopbackHosts(int count) throws IOException {
    if (count < 1 || count > MOST) {
      throw new IllegalArgumentException("1-" + MOST + " loopback hosts, got " + count);
    }
    executor = Executors.newFixedThreadPool(32, r -> {
      Thread t = new Thread(r, "loopback-hosts");
      t.setDaemon(true);
      return t;
    });
    ArrivalClock clock = new ArrivalClock(executor);
    for (int i = 0; i < count; i++) {
      String host = "127.0." + (i / PER_BLOCK) + "." + (i % PER_BLOCK + 2);
      HttpServer server = HttpServer.create(new InetSocketAddress(host, 0), 128);
      server.setExecutor(clock);
      server.createContext("/", exchange -> {
        java.time.Instant wall = java.time.Instant.now();
        long now = clock.arrivedAt();
        long epochMicros = wall.getEpochSecond() * 1_000_000L + wall.getNano() / 1000
            - (System.nanoTime() - now) / 1000;
        String path = exchange.getRequestURI().getPath();
        Robots robotsTxt = path.equals("/robots.txt") ? robots.get(host) : null;
        int attempt = robotsTxt != null ? 0
            : attempts.computeIfAbsent(host, h -> new AtomicInteger()).incrementAndGet();
        BiFunction<String, String, Integer> byPath = pathRule;
        int status = robotsTxt != null ? robotsTxt.status()
            : byPath != null ? byPath.apply(host, path) : rule.apply(host, attempt);
        synchronized (arrivals) {
          arrivals.add(new Arrival(now, epochMicros, host, path, status,
              exchange.getRequestHeaders().getFirst("X-Pacer-Worker")));
        }
        if (retryAfter != null && status == 429) {
          exchange.getResponseHeaders().add("Retry-After", retryAfter);
        }
        byte[] body = (robotsTxt != null ? robotsTxt.body() : "body of " + host + path)
            .getBytes(StandardCharsets.UTF_8);
        exchange.sendResponseHeaders(status, body.length);
        try (OutputStream out = exchange.getResponseBody()) {
          out.write(body);
        }
      });
      server.start();
      servers.add(server);
      hosts.add(host);
    }
  }

  public List<String> hosts() {
    return hosts;
  }

  /** {@code n} URLs of the {@code index}-th host. */
  public List<String> urls(int index, int n) {
    HttpServer server = servers.get(index);
    List<String> out = new ArrayList<>();
    for (int i = 1; i <= n; i++) {
      out.add("http://" + hosts.get(index) + ":" + server.getAddress().getPort() + "/item/" + i);
    }
    return out;
  }

  /** The {@code index}-th host stops listening: a connection to it is refused from now on. */
  void refusing(int index) {
    servers.get(index).stop(0);
  }

  /** {@code /robots.txt} of the hosts named answers as given, from now on. */
  void servingRobots(Map<String, Robots> robots) {
    this.robots = Map.copyOf(robots);
  }

  /** Answers {@code rule(host, path)} from now on. */
  void answeringByPath(BiFunction<String, String, Integer> rule) {
    this.pathRule = rule;
  }

  public void answering(BiFunction<String, Integer, Integer> rule, String retryAfter) {
    this.rule = rule;
    this.retryAfter = retryAfter;
  }

  public List<Arrival> arrivals() {
    synchronized (arrivals) {
      return arrivals.stream().sorted(Comparator.comparingLong(Arrival::nanos)).toList();
    }
  }

  /** The arrivals of each host, in time order. */
  public Map<String, List<Arrival>> byHost() {
    return arrivals().stream().collect(Collectors.groupingBy(Arrival::host));
  }

  /** The most arrivals in any window [t, t + 1 s) starting at an arrival. */
  public static int busiestSecond(List<Arrival> sorted) {
    int most = 0;
    int from = 0;
    for (int to = 0; to < sorted.size(); to++) {
      while (sorted.get(to).nanos() - sorted.get(from).nanos() >= 1_000_000_000L) {
        from++;
      }
      most = Math.max(most, to - from + 1);
    }
    return most;
  }

  /** Offsets in ms from the first arrival, for a failing assertion's message. */
  public static String offsets(List<Arrival> sorted) {
    long first = sorted.isEmpty() ? 0 : sorted.get(0).nanos();
    return sorted.stream().map(a -> Long.toString((a.nanos() - first) / 1_000_000))
        .collect(Collectors.joining(" "));
  }

  @Override
  public void close() {
    servers.forEach(s -> s.stop(0));
    executor.shutdownNow();
  }
}
