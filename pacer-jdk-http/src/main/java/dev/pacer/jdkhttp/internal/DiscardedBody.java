package dev.pacer.jdkhttp.internal;

import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The body of an answer nobody reads (a redirect hop followed, an answer the fetcher only
 * classifies): the answer is complete at its headers, and the body is read and dropped in the
 * background so that its connection can be reused, as the JDK's client does with the redirects it
 * follows itself.
 *
 * <p>The destination decides how long that body is and how fast it comes, and only a short body
 * that arrives at once is worth its connection. So the drain stops at {@link #MAX_BYTES} (at once
 * if the {@code Content-Length} says it will pass them) and at {@link #MAX_TIME} after it began,
 * whichever comes first: the subscription is cancelled, which closes the connection. Its request's
 * slot is held until then (the hop wraps this in a {@link SlotReleasingBody}, like any body): the
 * drain is a transfer on a connection to the destination, and counts against its concurrency.
 */
public final class DiscardedBody<T> implements HttpResponse.BodySubscriber<T> {

  /** The most of a body nobody reads that is read to keep its connection. */
  public static final long MAX_BYTES = 64 * 1024;

  /** The longest a body nobody reads may drain to keep its connection. */
  public static final Duration MAX_TIME = Duration.ofSeconds(1);

  private final CompletableFuture<T> done;
  private final long declaredLength;
  private final AtomicBoolean ended = new AtomicBoolean();
  private Flow.Subscription subscription;
  private long received;

  /**
   * The body of the answer {@code info} describes, answered as {@code value} at once.
   *
   * @param value what the body stands for
   * @param info the answer's status and headers, for its declared length
   */
  public DiscardedBody(T value, HttpResponse.ResponseInfo info) {
    this.done = CompletableFuture.completedFuture(value);
    this.declaredLength = info.headers().firstValueAsLong("Content-Length").orElse(-1L);
  }

  @Override
  public void onSubscribe(Flow.Subscription s) {
    subscription = s;
    if (declaredLength > MAX_BYTES) {
      cutOff();
      return;
    }
    CompletableFuture.delayedExecutor(MAX_TIME.toNanos(), TimeUnit.NANOSECONDS)
        .execute(this::cutOff);
    s.request(Long.MAX_VALUE);
  }

  @Override
  public void onNext(List<ByteBuffer> item) {
    for (ByteBuffer b : item) {
      received += b.remaining();
    }
    if (received > MAX_BYTES) {
      cutOff();
    }
  }

  @Override
  public void onError(Throwable throwable) {
    ended.set(true);
  }

  @Override
  public void onComplete() {
    ended.set(true);
  }

  @Override
  public CompletionStage<T> getBody() {
    return done;
  }

  /** Cancels the drain, unless it has ended: a connection the body completed may be reused. */
  private void cutOff() {
    if (ended.compareAndSet(false, true)) {
      subscription.cancel();
    }
  }
}
