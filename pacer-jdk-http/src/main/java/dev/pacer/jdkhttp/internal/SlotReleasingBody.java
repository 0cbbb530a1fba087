package dev.pacer.jdkhttp.internal;

import dev.pacer.Slot;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Flow;

/**
 * A response body that closes its request's {@link Slot} when it ends: received in full, failed, or
 * cancelled by its reader (closing the stream of {@code BodyHandlers.ofInputStream()} cancels it).
 * For a body read into memory or a file that is before {@code send} returns; a streamed one is
 * received about as fast as the caller reads it, so the concurrency permit covers the transfer. A
 * cancelled body closes its connection before the slot goes back.
 */
final class SlotReleasingBody<T> implements HttpResponse.BodySubscriber<T> {

  private final HttpResponse.BodySubscriber<T> body;
  private final Slot slot;

  SlotReleasingBody(HttpResponse.BodySubscriber<T> body, Slot slot) {
    this.body = body;
    this.slot = slot;
  }

  @Override
  public void onSubscribe(Flow.Subscription subscription) {
    body.onSubscribe(
        new Flow.Subscription() {
          @Override
          public void request(long n) {
            subscription.request(n);
          }

          @Override
          public void cancel() {
            try {
              subscription.cancel();
            } finally {
              slot.close();
            }
          }
        });
  }

  @Override
  public void onNext(List<ByteBuffer> item) {
    body.onNext(item);
  }

  @Override
  public void onError(Throwable throwable) {
    slot.close();
    body.onError(throwable);
  }

  @Override
  public void onComplete() {
    slot.close();
    body.onComplete();
  }

  @Override
  public CompletionStage<T> getBody() {
    return body.getBody();
  }
}
