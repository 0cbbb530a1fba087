package dev.pacer;

import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;

/**
 * The body of an answer nobody reads (a redirect hop followed, an answer the fetcher only
 * classifies): the answer is complete at its headers, and the body is read and dropped in the
 * background so that its connection can be reused, as the JDK's client does with the redirects it
 * follows itself. Its request's slot is not held while it drains. A body still arriving after
 * {@code limit} is cut off (its connection closed): a trickling error page must not hold a
 * connection for as long as the server likes.
 */
final class DiscardedBody<T> implements HttpResponse.BodySubscriber<T> {

  private final CompletableFuture<T> done;
  private final Duration limit;

  DiscardedBody(T value, Duration limit) {
    this.done = CompletableFuture.completedFuture(value);
    this.limit = limit;
  }

  @Override
  public void onSubscribe(Flow.Subscription subscription) {
    subscription.request(Long.MAX_VALUE);
    CompletableFuture.delayedExecutor(limit.toNanos(), TimeUnit.NANOSECONDS)
        .execute(subscription::cancel);
  }

  @Override
  public void onNext(List<ByteBuffer> item) {}

  @Override
  public void onError(Throwable throwable) {}

  @Override
  public void onComplete() {}

  @Override
  public CompletionStage<T> getBody() {
    return done;
  }
}
