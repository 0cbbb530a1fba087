package dev.pacer.cli;

import dev.pacer.testing.Answer;
import dev.pacer.testing.DoorServer;
import dev.pacer.testing.Request;
import dev.pacer.testing.Timeline;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiFunction;
import java.util.stream.Collectors;

/**
 * Many destinations on one machine for per-host tests and the frontier bench (pacer-bench uses it
 * from this module's test jar): one door ({@link DoorServer}, stamping each request at the socket)
 * on each of the loopback addresses 127.0.0.2, 127.0.0.3, … 127.0.0.251, then 127.0.1.2 and on
 * ({@value #PER_BLOCK} to a block of 256, Linux routing all of 127/8 to the loopback interface),
 * each a host of its own to a URL list, all recording their arrivals in one list with the host that
 * received them. Answers 200 unless the test's rule says otherwise for (host, attempt at that host,
 * from 1), with a {@code Retry-After} on 429 if set; {@code /robots.txt} answers as {@link
 * #servingRobots} says for its host, if it says.
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
  public record Arrival(
      long nanos, long epochMicros, String host, String path, int status, String worker) {}

  private final List<DoorServer> servers = new ArrayList<>();
  private final List<String> hosts = new ArrayList<>();
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
    for (int i = 0; i < count; i++) {
      String host = "127.0." + (i / PER_BLOCK) + "." + (i % PER_BLOCK + 2);
      servers.add(new DoorServer(InetAddress.getByName(host), request -> answer(host, request)));
      hosts.add(host);
    }
  }

  private Answer answer(String host, Request request) {
    String path = request.path();
    Robots robotsTxt = path.equals("/robots.txt") ? robots.get(host) : null;
    if (robotsTxt != null) {
      return Answer.text(robotsTxt.status(), robotsTxt.body());
    }
    int attempt = attempts.computeIfAbsent(host, h -> new AtomicInteger()).incrementAndGet();
    BiFunction<String, String, Integer> byPath = pathRule;
    Answer answer =
        Answer.text(
            byPath != null ? byPath.apply(host, path) : rule.apply(host, attempt),
            "body of " + host + path);
    return retryAfter != null && answer.status() == 429
        ? answer.with("Retry-After", retryAfter)
        : answer;
  }

  public List<String> hosts() {
    return hosts;
  }

  /** {@code n} URLs of the {@code index}-th host. */
  public List<String> urls(int index, int n) {
    DoorServer server = servers.get(index);
    List<String> out = new ArrayList<>();
    for (int i = 1; i <= n; i++) {
      out.add("http://" + hosts.get(index) + ":" + server.port() + "/item/" + i);
    }
    return out;
  }

  /** The {@code index}-th host stops listening: a connection to it is refused from now on. */
  void refusing(int index) throws IOException {
    servers.get(index).close();
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

  /**
   * Every arrival at every host, in time order; {@code epochMicros} is each stamp moved onto the
   * wall clock by the offset between the two clocks now.
   */
  public List<Arrival> arrivals() {
    java.time.Instant wall = java.time.Instant.now();
    long offsetMicros =
        wall.getEpochSecond() * 1_000_000L + wall.getNano() / 1000 - System.nanoTime() / 1000;
    List<Arrival> all = new ArrayList<>();
    for (int i = 0; i < servers.size(); i++) {
      for (dev.pacer.testing.Arrival a : servers.get(i).arrivals()) {
        all.add(
            new Arrival(
                a.nanos(),
                a.nanos() / 1000 + offsetMicros,
                hosts.get(i),
                a.path(),
                a.status(),
                a.worker()));
      }
    }
    all.sort(Comparator.comparingLong(Arrival::nanos));
    return all;
  }

  /** The arrivals of each host, in time order. */
  public Map<String, List<Arrival>> byHost() {
    return arrivals().stream().collect(Collectors.groupingBy(Arrival::host));
  }

  /** The most arrivals in any window [t, t + 1 s) starting at an arrival. */
  public static int busiestSecond(List<Arrival> arrivals) {
    return new Timeline(arrivals.stream().map(Arrival::nanos).toList()).peakOneSecondWindow();
  }

  /** Offsets in ms from the first arrival, for a failing assertion's message. */
  public static String offsets(List<Arrival> sorted) {
    long first = sorted.isEmpty() ? 0 : sorted.get(0).nanos();
    return sorted.stream()
        .map(a -> Long.toString((a.nanos() - first) / 1_000_000))
        .collect(Collectors.joining(" "));
  }

  @Override
  public void close() {
    try {
      for (DoorServer server : servers) {
        server.close();
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
