package dev.pacer.jdkhttp.internal;

import dev.pacer.Answer;
import dev.pacer.DestinationLimiter;
import dev.pacer.Slot;
import dev.pacer.TimeSource;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;

/**
 * One hop of an exchange, the steps {@link Exchanges#exchange} and {@link AsyncExchange} both take:
 * the limiter the lookup names for its URI, the send ({@link #send}), and the answer ({@link
 * #answered}) or failure ({@link #failed}), each reported to the listener. As the delegate's body
 * handler, it classifies the answer as soon as its headers arrive, decides whether it is a redirect
 * to follow (then its body is dropped), and otherwise hands the body to the caller's handler;
 * either way the slot is closed when the body ends.
 */
final class Hop<T> implements HttpResponse.BodyHandler<T> {

  /** What a hop's answer leads to: the next hop's request, or the final answer. */
  sealed interface Step<T> {
    record Follow<T>(HttpRequest request) implements Step<T> {}

    record Done<T>(Exchanged<T> exchanged) implements Step<T> {}
  }

  private final Exchanges exchanges;
  private final HttpRequest requested;
  private final HttpRequest request;
  final int followed;
  final Optional<DestinationLimiter> limiter;
  private final Function<URI, HttpResponse.BodyHandler<T>> handlers;
  private final HttpResponse.PushPromiseHandler<T> pushes;

  /** The whole answer's deadline: the request's own timeout, or the client's. */
  private final Optional<Duration> deadline;

  private volatile Optional<Slot> slot = Optional.empty();
  private long sentNanos;
  private long sentMicros;
  private volatile int status = SentListener.NO_STATUS;
  private volatile Answer answer = Answer.CLEAN;
  private volatile Redirects.Next next;

  /** The exchange's redirects, from when its first hop leaves; none if none are followed. */
  private volatile Optional<Redirects.Chain> chain;

  Hop(
      Exchanges exchanges,
      HttpRequest requested,
      HttpRequest request,
      int followed,
      Function<URI, HttpResponse.BodyHandler<T>> handlers,
      HttpResponse.PushPromiseHandler<T> pushes,
      Optional<Redirects.Chain> chain) {
    this(
        exchanges,
        requested,
        request,
        followed,
        handlers,
        pushes,
        chain,
        exchanges.limiters.limiterFor(request.uri()));
  }

  /** A hop paced by {@code limiter}, or by none. */
  Hop(
      Exchanges exchanges,
      HttpRequest requested,
      HttpRequest request,
      int followed,
      Function<URI, HttpResponse.BodyHandler<T>> handlers,
      HttpResponse.PushPromiseHandler<T> pushes,
      Optional<Redirects.Chain> chain,
      Optional<DestinationLimiter> limiter) {
    this.exchanges = exchanges;
    this.requested = requested;
    this.request = request;
    this.followed = followed;
    this.limiter = limiter;
    this.handlers = handlers;
    this.pushes = pushes;
    this.deadline = request.timeout().or(() -> exchanges.answerTimeout);
    this.chain = chain;
  }

  /** The hop to {@code target}, asking the lookup again. */
  Hop<T> next(HttpRequest target) {
    return new Hop<>(exchanges, requested, target, followed + 1, handlers, pushes, chain);
  }

  /**
   * Sends this hop, holding {@code turn} if it is paced. The answer comes within the hop's deadline
   * if there is one, or the future fails with {@link TimeoutException}; a future that fails so, or
   * is cancelled, cancels the exchange, which closes its connection (Java 16+), and with it a
   * trickling body.
   */
  CompletableFuture<HttpResponse<T>> send(Optional<Slot> turn) {
    leaving(turn);
    CompletableFuture<HttpResponse<T>> sent;
    try {
      sent = exchanges.delegate.sendAsync(request, this, pushes);
    } catch (RuntimeException e) {
      sent = CompletableFuture.failedFuture(e);
    }
    CompletableFuture<HttpResponse<T>> answered = new CompletableFuture<>();
    sent.whenComplete(
        (response, failure) -> {
          if (failure == null) {
            answered.complete(response);
          } else {
            answered.completeExceptionally(Exchanges.unwrapped(failure));
          }
        });
    deadline.ifPresent(d -> answered.orTimeout(d.toNanos(), TimeUnit.NANOSECONDS));
    CompletableFuture<HttpResponse<T>> exchange = sent;
    answered.whenComplete(
        (response, failure) -> {
          if (failure != null) {
            exchange.cancel(true);
          }
        });
    return answered;
  }

  /**
   * Sends this hop as {@link #send} does, on this thread, which waits for the answer: through the
   * delegate's {@code send}. The JDK's client builds the exchange on this thread and hands the
   * write to its selector thread, which hands it to the client's executor, whose thread writes: the
   * time from the turn to the socket includes those two threads' wake-ups, which the check for a
   * late turn, made before, cannot see. A sender starved of CPU or paused by a collection there
   * delivers its request late unseen, and at a turn of 10 ms a request more than a turn late puts
   * one more than the ceiling + 1 into a window at the destination. Awaiting the delegate's {@code
   * sendAsync} (which {@link #send} must use, since it may not wait) also hands its completion to
   * the common pool, one more thread hand-over per request.
   *
   * <p>The hop's deadline, if it has one, interrupts this thread: the delegate's {@code send} then
   * cancels the exchange, which closes its connection (Java 16+), and this throws {@link
   * TimeoutException}. An interrupt from anyone else is thrown as {@link InterruptedException}, the
   * exchange likewise cancelled.
   */
  HttpResponse<T> sendWaiting(Optional<Slot> turn)
      throws IOException, InterruptedException, TimeoutException {
    leaving(turn);
    if (deadline.isEmpty()) {
      return exchanges.delegate.send(request, this);
    }
    AnswerDeadline interrupting = new AnswerDeadline(deadline.get());
    try {
      return exchanges.delegate.send(request, this);
    } catch (InterruptedException e) {
      if (interrupting.end()) {
        throw new TimeoutException();
      }
      throw e;
    } finally {
      interrupting.end();
    }
  }

  /**
   * Holds {@code turn}, if this hop is paced, and notes when the hop leaves. The first hop
   * classifies the requested host here, just before it is sent, for every hop to be judged by.
   */
  private void leaving(Optional<Slot> turn) {
    slot = turn;
    if (followed == 0 && exchanges.redirects.followsAny()) {
      chain = Optional.of(exchanges.redirects.chain(requested.uri()));
    }
    TimeSource time = limiter.map(DestinationLimiter::time).orElse(TimeSource.SYSTEM);
    sentNanos = time.nanoTime();
    sentMicros = time.epochMicros();
  }

  /** The answer came: reports it, and says where it leads. */
  Step<T> answered(HttpResponse<T> response) {
    reportSent();
    if (next instanceof Redirects.Next.Follow follow) {
      return new Step.Follow<>(Redirects.nextRequest(request, response.statusCode(), follow.uri()));
    }
    Optional<String> refused =
        next instanceof Redirects.Next.Refuse refuse
            ? Optional.of(refuse.reason())
            : Optional.empty();
    return new Step.Done<>(new Exchanged<>(response, answer, refused));
  }

  /**
   * No answer came: the slot goes back at once, the request is reported, and the failure is
   * returned as the caller sees it (a deadline passed as {@link HttpTimeoutException}).
   */
  Throwable failed(Throwable failure) {
    slot.ifPresent(Slot::close);
    reportSent();
    Throwable cause = Exchanges.unwrapped(failure);
    if (cause instanceof TimeoutException) {
      HttpTimeoutException late =
          new HttpTimeoutException(
              "no complete response from "
                  + request.uri()
                  + " within "
                  + Exchanges.describe(deadline.orElseThrow()));
      late.initCause(cause);
      return late;
    }
    return cause;
  }

  private void reportSent() {
    if (slot.isPresent()) {
      exchanges.report(
          request.uri(), followed, slot.get().turnNanos(), sentNanos, sentMicros, status);
    }
  }

  @Override
  public HttpResponse.BodySubscriber<T> apply(HttpResponse.ResponseInfo info) {
    URI uri = request.uri();
    status = info.statusCode();
    if (limiter.isPresent()) {
      answer =
          limiter
              .get()
              .noteAnswer(
                  info.statusCode(), info.headers().firstValue("Retry-After").orElse(null), uri);
    }
    if (answer == Answer.CLEAN
        && exchanges.redirects.followsAny()
        && Redirects.isRedirect(info.statusCode())) {
      next =
          chain
              .orElseThrow()
              .next(request, info.statusCode(), info.headers().firstValue("Location"), followed);
    }
    HttpResponse.BodySubscriber<T> body =
        next instanceof Redirects.Next.Follow
            ? new DiscardedBody<>(null, info)
            : handlers.apply(uri).apply(info);
    Optional<Slot> held = slot;
    return held.isPresent() ? new SlotReleasingBody<>(body, held.get()) : body;
  }
}
