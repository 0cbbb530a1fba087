package dev.pacer.jdkhttp.internal;

import dev.pacer.DestinationLimiter;
import dev.pacer.LimiterLookup;
import dev.pacer.Slot;
import dev.pacer.shared.GuardedListener;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;

/**
 * What one {@code PacedHttpClient} or {@code DestinationFetcher} sends with: the delegate, the
 * lookup of each hop's limiter, the redirect policy, the answer deadline and the request listener,
 * and the blocking driver of an exchange (a loop: a turn, a {@link Hop}, its answer, the next hop).
 * The asynchronous driver is {@link AsyncExchange}, the hop's own steps are {@link Hop}'s, and both
 * drivers share them.
 */
public final class Exchanges {

  /** The client's own logger: a failing listener is the client's to report. */
  private static final String LOGGED_BY = "dev.pacer.jdkhttp.PacedHttpClient";

  final HttpClient delegate;
  final LimiterLookup limiters;
  final Redirects redirects;
  final Optional<Duration> answerTimeout;
  private final Optional<GuardedListener<SentListener>> listener;

  /**
   * Exchanges through {@code delegate}, each hop paced by the limiter {@code limiters} names,
   * redirects followed as {@code redirects} says, each hop's answer within {@code answerTimeout}
   * unless the request has a timeout of its own, each paced hop reported to {@code listener}.
   */
  public Exchanges(
      HttpClient delegate,
      LimiterLookup limiters,
      Redirects redirects,
      Optional<Duration> answerTimeout,
      Optional<SentListener> listener) {
    this.delegate = delegate;
    this.limiters = limiters;
    this.redirects = redirects;
    this.answerTimeout = answerTimeout;
    this.listener =
        listener.map(
            l ->
                new GuardedListener<>(
                    l, LOGGED_BY, () -> "The request listener", "requests go on"));
  }

  /**
   * Sends {@code request} once through the blocking driver and once through the asynchronous one,
   * each the way a paced request goes but taking no turn, whatever the lookup says of its host: a
   * client's warm-up.
   */
  public void sendUnpaced(HttpRequest request) throws Exception {
    exchange(unpaced(request), 1);
    new AsyncExchange<Void>(this).from(unpaced(request)).get(10, TimeUnit.SECONDS);
  }

  /** A first hop to {@code request} that takes no turn, whatever the lookup says of its host. */
  private Hop<Void> unpaced(HttpRequest request) {
    return new Hop<>(
        this,
        request,
        request,
        0,
        uri -> HttpResponse.BodyHandlers.discarding(),
        null,
        Optional.empty(),
        Optional.empty());
  }

  /**
   * Sends {@code request} and follows its redirects, each hop with a turn of its own, this thread
   * waiting for each turn and each answer; the first hop takes {@code firstIntervals} turns ({@link
   * DestinationLimiter#acquire(int)}). The final answer's body goes to the handler {@code handlers}
   * gives for its URI.
   */
  public <T> Exchanged<T> exchange(
      HttpRequest request, Function<URI, HttpResponse.BodyHandler<T>> handlers, int firstIntervals)
      throws IOException, InterruptedException {
    return exchange(
        new Hop<>(
            this,
            Objects.requireNonNull(request, "request"),
            request,
            0,
            handlers,
            null,
            Optional.empty()),
        firstIntervals);
  }

  /** {@link #exchange(HttpRequest, Function, int)} from its first hop. */
  <T> Exchanged<T> exchange(Hop<T> first, int firstIntervals)
      throws IOException, InterruptedException {
    Hop<T> hop = first;
    while (true) {
      Optional<Slot> slot = Optional.empty();
      if (hop.limiter.isPresent()) {
        slot = Optional.of(hop.limiter.get().acquire(hop.followed == 0 ? firstIntervals : 1));
      }
      HttpResponse<T> response;
      try {
        response = hop.sendWaiting(slot);
      } catch (InterruptedException e) {
        hop.failed(e);
        throw e;
      } catch (IOException | TimeoutException | RuntimeException | Error e) {
        throw rethrown(hop.failed(e));
      }
      Hop.Step<T> step = hop.answered(response);
      if (step instanceof Hop.Step.Done<T> done) {
        return done.exchanged();
      }
      hop = hop.next(((Hop.Step.Follow<T>) step).request());
    }
  }

  /** The failure inside the wrappers a future's stages put around it. */
  static Throwable unwrapped(Throwable failure) {
    Throwable cause = failure;
    while ((cause instanceof CompletionException || cause instanceof ExecutionException)
        && cause.getCause() != null) {
      cause = cause.getCause();
    }
    return cause;
  }

  /**
   * {@code failure} thrown as {@link HttpClient#send} declares it, or returned wrapped to be
   * thrown.
   */
  private static IOException rethrown(Throwable failure) throws InterruptedException {
    if (failure instanceof IOException io) {
      return io;
    }
    if (failure instanceof InterruptedException interrupted) {
      throw interrupted;
    }
    if (failure instanceof RuntimeException runtime) {
      throw runtime;
    }
    if (failure instanceof Error error) {
      throw error;
    }
    return new IOException(failure);
  }

  /** Hands a paced hop to the listener; a listener that throws is logged once. */
  void report(URI uri, int hop, long turnNanos, long sentNanos, long sentEpochMicros, int status) {
    listener.ifPresent(
        guarded ->
            guarded.tell(l -> l.sent(uri, hop, turnNanos, sentNanos, sentEpochMicros, status)));
  }

  /** {@code d} in whole seconds, or else in milliseconds. */
  static String describe(Duration d) {
    return d.toMillis() % 1000 == 0 ? d.toSeconds() + " s" : d.toMillis() + " ms";
  }
}
