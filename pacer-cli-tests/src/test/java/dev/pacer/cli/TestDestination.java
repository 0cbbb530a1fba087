package dev.pacer.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.pacer.testing.Answer;
import dev.pacer.testing.DoorServer;
import dev.pacer.testing.FleetBounds;
import dev.pacer.testing.Request;
import dev.pacer.testing.Timeline;
import dev.pacer.testing.WallClockSteps;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.LongSummaryStatistics;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiFunction;

/**
 * A local HTTP destination for end-to-end tests, on the door that every module's fleet tests share
 * ({@link DoorServer}, stamping each request at the socket): records every arrival (when, which
 * path, which worker, what it answered) and answers what the test's rule says for (path, attempt
 * number of that path, starting at 1): 200 by default, or 429, 503, 403, 500 on demand. It can take
 * its time over each answer ({@link #answeringAfter}), and counts the requests it has open at once,
 * from the moment its handler starts to the moment before it answers: a request counted open here
 * was certainly in flight at the client too.
 */
final class TestDestination implements AutoCloseable {

  record Arrival(long nanos, String path, String worker, int status) {}

  /**
   * The aggregate rate's tolerance in {@link #assertHeldCeiling}. Runs whose busiest window held
   * were within 0.25 % of the ceiling (pooled 20.03/s, two invocations 20.05/s, conveyor 19.96/s at
   * 20/s); 2 % leaves room for a 50-ms span shortfall on a 4-s run.
   */
  static final double RATE_TOLERANCE = 0.02;

  /**
   * The span's tolerance in {@link #assertHeldCeiling}. After the first second, the offsets of the
   * arrivals from the ideal grid {@code first + k / rate} (printed by every fleet test) spread over
   * at most 28 ms in the conveyor, pooled and two-invocation runs measured at 10/s and 20/s, on two
   * cores shared with other builds; 50 ms is nearly twice that.
   */
  static final double SPAN_TOLERANCE_SECONDS = 0.05;

  private static final long SECOND = 1_000_000_000L;

  private final DoorServer server;
  private final Map<String, AtomicInteger> attempts = new ConcurrentHashMap<>();
  private volatile BiFunction<String, Integer, Integer> rule = (path, attempt) -> 200;
  private volatile String retryAfter;
  private volatile long delayMillis;
  private volatile int redirects;
  private final AtomicInteger open = new AtomicInteger();
  private final AtomicInteger mostOpen = new AtomicInteger();

  /** A destination on 127.0.0.1, stamping each request at the socket ({@link DoorServer}). */
  TestDestination() throws IOException {
    WallClockSteps.get();
    server = new DoorServer(this::answer);
  }

  private Answer answer(Request request) {
    mostOpen.accumulateAndGet(open.incrementAndGet(), Math::max);
    try {
      if (delayMillis > 0) {
        Thread.sleep(delayMillis);
      }
      String path = request.path();
      int attempt = attempts.computeIfAbsent(path, p -> new AtomicInteger()).incrementAndGet();
      boolean redirect = attempt <= redirects;
      Answer answer = Answer.text(redirect ? 302 : rule.apply(path, attempt), "body of " + path);
      if (redirect) {
        answer = answer.with("Location", url(path + "?hop=" + attempt));
      }
      if (retryAfter != null && (answer.status() == 429 || answer.status() == 503)) {
        answer = answer.with("Retry-After", retryAfter);
      }
      return answer;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return Answer.status(503);
    } finally {
      // No longer open once the answer may reach the client, which may then start another.
      open.decrementAndGet();
    }
  }

  /** Answers {@code rule(path, attempt)} from now on. */
  TestDestination answering(BiFunction<String, Integer, Integer> rule) {
    this.rule = rule;
    return this;
  }

  /** Sends {@code Retry-After: value} with every 429 and 503 from now on. */
  TestDestination withRetryAfter(String value) {
    this.retryAfter = value;
    return this;
  }

  /**
   * From now on, answers a path's first {@code hops} requests with a redirect to the same path (its
   * query counting the hop), each a request of its own that takes a turn of its own: an item
   * claimed then keeps asking for turns until its hops run out, with no new claim. 0 ends it.
   */
  TestDestination redirectingUpTo(int hops) {
    this.redirects = hops;
    return this;
  }

  /** Answers each request {@code millis} after it arrived, from now on. */
  TestDestination answeringAfter(long millis) {
    this.delayMillis = millis;
    return this;
  }

  /** The most requests this destination has had open at once. */
  int mostOpenAtOnce() {
    return mostOpen.get();
  }

  String url(String path) {
    return "http://127.0.0.1:" + server.port() + path;
  }

  /** {@code count} URLs: /item/1 .. /item/count. */
  List<String> items(int count) {
    return items("/item/", count);
  }

  /** {@code count} URLs: {@code prefix}1 .. {@code prefix}count. */
  List<String> items(String prefix, int count) {
    List<String> urls = new ArrayList<>();
    for (int i = 1; i <= count; i++) {
      urls.add(url(prefix + i));
    }
    return urls;
  }

  List<Arrival> arrivals() {
    return server.arrivals().stream()
        .map(a -> new Arrival(a.nanos(), a.path(), a.worker(), a.status()))
        .toList();
  }

  /** The arrivals as a timeline: the figures the fleet bounds are stated in. */
  static Timeline timeline(List<Arrival> arrivals) {
    return new Timeline(arrivals.stream().map(Arrival::nanos).toList());
  }

  /**
   * The timeline's figures, where its busiest 1-s window starts (seconds after the first arrival)
   * and the arrivals per whole second from the first, each worker's first and last arrival, and the
   * arrivals of the busiest window with their workers: enough to tell a burst of turns that left
   * together from a cold JVM (in the fleet's first second, or when a worker that started later
   * sends its first requests) from an excess later in the run.
   */
  static String describe(List<Arrival> arrivals) {
    List<Long> instants = arrivals.stream().map(Arrival::nanos).sorted().toList();
    if (instants.isEmpty()) {
      return "no arrivals";
    }
    long first = instants.get(0);
    long peakStart = timeline(arrivals).busiestWindowStart();
    List<Integer> perSecond = new ArrayList<>();
    for (long t : instants) {
      int second = (int) ((t - first) / SECOND);
      while (perSecond.size() <= second) {
        perSecond.add(0);
      }
      perSecond.set(second, perSecond.get(second) + 1);
    }
    long windowStart = peakStart;
    Map<String, LongSummaryStatistics> workers = new TreeMap<>();
    Map<String, Integer> inWindow = new TreeMap<>();
    for (Arrival a : arrivals) {
      workers.computeIfAbsent(a.worker(), w -> new LongSummaryStatistics()).accept(a.nanos());
      if (a.nanos() >= windowStart && a.nanos() - windowStart < SECOND) {
        inWindow.merge(a.worker(), 1, Integer::sum);
      }
    }
    StringBuilder window = new StringBuilder();
    arrivals.stream()
        .filter(a -> a.nanos() >= windowStart && a.nanos() - windowStart < SECOND)
        .sorted(Comparator.comparingLong(Arrival::nanos))
        .forEach(
            a ->
                window.append(
                    String.format(
                        Locale.ROOT,
                        " %.3f:%s%s",
                        (a.nanos() - first) / 1e9,
                        a.worker(),
                        a.path())));
    StringBuilder perWorker = new StringBuilder();
    workers.forEach(
        (w, t) ->
            perWorker.append(
                String.format(
                    Locale.ROOT,
                    " pid %s: %d in [%.3f, %.3f] s, %d in the busiest window;",
                    w,
                    t.getCount(),
                    (t.getMin() - first) / 1e9,
                    (t.getMax() - first) / 1e9,
                    inWindow.getOrDefault(w, 0))));
    return String.format(
        Locale.ROOT,
        "%s; busiest window starts %.3f s after the first arrival;"
            + " per second from the first: %s; per worker:%s busiest window (s:pid/path):%s",
        timeline(arrivals),
        (peakStart - first) / 1e9,
        perSecond,
        perWorker,
        window);
  }

  /**
   * No sliding 1-s window of {@code arrivals} holds more than {@code most}, from the very first
   * arrival. A run over which this host's wall clock stepped forward ({@link WallClockSteps}), and
   * whose busiest window then held more, is reported as skipped with the step measured: the fleet
   * is known not to hold the ceiling across a forward step of the database's clock while turns are
   * queued (docs/reliability.md), and the test cannot tell that from a fault of its own.
   */
  static void assertBusiestWindowAtMost(List<Arrival> arrivals, int most) {
    Timeline fleet = timeline(arrivals);
    if (fleet.peakOneSecondWindow() > most && !arrivals.isEmpty()) {
      long first = arrivals.stream().mapToLong(Arrival::nanos).min().getAsLong();
      long last = arrivals.stream().mapToLong(Arrival::nanos).max().getAsLong();
      long step = WallClockSteps.get().largestStepBetween(first - 10 * SECOND, last);
      assumeTrue(
          step == 0,
          String.format(
              Locale.ROOT,
              "this host's wall clock stepped %.0f ms forward during the run, and the busiest 1-s"
                  + " window held %d against at most %d: %s",
              step / 1e6,
              fleet.peakOneSecondWindow(),
              most,
              describe(arrivals)));
    }
    assertThat(fleet.peakOneSecondWindow())
        .as("busiest 1-s window: " + describe(arrivals))
        .isLessThanOrEqualTo(most);
  }

  /**
   * The fleet bounds, judged where requests arrive and from the very first one, for {@code rate}
   * per second: no sliding 1-s window holds more than {@code rate + 1} arrivals (the turns are
   * {@code 1/rate} apart, so a window holds {@code rate} of them, plus one when send jitter moves a
   * turn's arrival across the window's edge); the aggregate rate is at most {@code rate} times
   * {@code 1 + RATE_TOLERANCE}; and the span is at least {@code (n - 1) / rate} less {@code
   * SPAN_TOLERANCE_SECONDS}.
   */
  static void assertHeldCeiling(List<Arrival> arrivals, double rate) {
    Timeline fleet = timeline(arrivals);
    String figures = describe(arrivals) + gridOffsets(arrivals, rate);
    System.out.println("fleet bounds at " + rate + "/s: " + figures);
    assertBusiestWindowAtMost(arrivals, (int) Math.floor(rate) + 1);
    assertThat(fleet.aggregateRatePerSecond())
        .as("aggregate rate: " + figures)
        .isLessThanOrEqualTo(rate * (1 + RATE_TOLERANCE));
    assertThat(fleet.spanSeconds())
        .as("span: " + figures)
        .isGreaterThanOrEqualTo((fleet.size() - 1) / rate - SPAN_TOLERANCE_SECONDS);
  }

  /**
   * {@link #assertHeldCeiling(List, double)} for a run whose requests are traced from turn to door
   * ({@link RequestLogTrace}). The turns themselves, the limiter's work, are held with no excuse:
   * no 1-s window holds more than {@code rate + 1}, no two are closer than half a turn. At the
   * door, a busiest window over the bound is reported as skipped, naming the figures, when one of
   * its requests reached the door at least half a turn after its worker handed it to the HTTP
   * client: a delay after the check for a late turn, which no check made before the send can see
   * (docs/reliability.md, "The ceiling at the destination's door", item 8), as {@link
   * dev.pacer.testing.FleetBounds} reports it for the library's fleets. Without such a request the
   * bounds are as strict as {@link #assertHeldCeiling(List, double)}'s.
   */
  static void assertHeldCeiling(List<Arrival> arrivals, double rate, RequestLogTrace traced) {
    FleetBounds bounds = FleetBounds.at(rate, "fleet bounds at " + rate + "/s");
    bounds.assertTracedTurns(traced.trace(), traced.arrivals());
    if (timeline(arrivals).peakOneSecondWindow() > bounds.mostInAWindow()) {
      bounds.skipIfDelayedAfterHandOver(
          traced.trace(), traced.arrivals(), bounds.mostInAWindow(), describe(arrivals));
    }
    System.out.println("traced: " + traced.trace().busiestWindow(traced.arrivals()));
    assertHeldCeiling(arrivals, rate);
  }

  /**
   * How far the k-th arrival is from the ideal grid {@code first + k / rate}, as the range of those
   * offsets over the first second of the run and over the rest: the send jitter that the span and
   * aggregate tolerances must absorb.
   */
  private static String gridOffsets(List<Arrival> arrivals, double rate) {
    List<Long> instants = arrivals.stream().map(Arrival::nanos).sorted().toList();
    LongSummaryStatistics early = new LongSummaryStatistics();
    LongSummaryStatistics later = new LongSummaryStatistics();
    for (int k = 0; k < instants.size(); k++) {
      long offset = instants.get(k) - instants.get(0) - Math.round(k * 1e9 / rate);
      (instants.get(k) - instants.get(0) < SECOND ? early : later).accept(offset);
    }
    return String.format(
        Locale.ROOT,
        "; offsets from the ideal grid: first second [%.1f, %.1f] ms," + " later [%.1f, %.1f] ms",
        early.getMin() / 1e6,
        early.getMax() / 1e6,
        later.getMin() / 1e6,
        later.getMax() / 1e6);
  }

  /**
   * What the same run paced per process (each process alone at {@code rate}) does to the bounds of
   * {@link #assertHeldCeiling}: its busiest window holds more than {@code rate + 1} arrivals and
   * its aggregate rate is above the tolerance. A twin test asserts this to show that the fleet test
   * can fail.
   */
  static void assertBrokeCeiling(List<Arrival> arrivals, double rate) {
    Timeline fleet = timeline(arrivals);
    String figures = describe(arrivals);
    System.out.println("per-process pacing at " + rate + "/s: " + figures);
    assertThat(fleet.peakOneSecondWindow())
        .as("busiest 1-s window: " + figures)
        .isGreaterThan((int) Math.floor(rate) + 1);
    assertThat(fleet.aggregateRatePerSecond())
        .as("aggregate rate: " + figures)
        .isGreaterThan(rate * (1 + RATE_TOLERANCE));
  }

  long count(int status) {
    return arrivals().stream().filter(a -> a.status() == status).count();
  }

  /** Waits until {@code n} requests have arrived; fails after 90 s. */
  void awaitArrivals(int n) throws InterruptedException {
    long deadline = System.nanoTime() + 90 * SECOND;
    while (arrivals().size() < n) {
      assertThat(System.nanoTime()).as("%d arrivals within 90 s", n).isLessThan(deadline);
      Thread.sleep(20);
    }
  }

  /** The arrivals in {@code [from, to)}, {@link System#nanoTime} instants. */
  static int count(List<Arrival> arrivals, long from, long to) {
    return (int) arrivals.stream().filter(a -> a.nanos() >= from && a.nanos() < to).count();
  }

  /** The arrivals per whole second from {@code from} on. */
  static List<Integer> perSecond(List<Arrival> arrivals, long from) {
    List<Integer> counts = new ArrayList<>();
    for (Arrival a : arrivals) {
      if (a.nanos() < from) {
        continue;
      }
      int second = (int) ((a.nanos() - from) / SECOND);
      while (counts.size() <= second) {
        counts.add(0);
      }
      counts.set(second, counts.get(second) + 1);
    }
    return counts;
  }

  /** The longest time without an arrival from {@code from} to the last arrival, in nanoseconds. */
  static long longestGap(List<Arrival> arrivals, long from) {
    long previous = from;
    long longest = 0;
    for (Arrival a :
        arrivals.stream()
            .filter(a -> a.nanos() >= from)
            .sorted(Comparator.comparingLong(Arrival::nanos))
            .toList()) {
      longest = Math.max(longest, a.nanos() - previous);
      previous = a.nanos();
    }
    return longest;
  }

  @Override
  public void close() {
    try {
      server.close();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
