package dev.pacer.jdkhttp.internal;

import dev.pacer.AsyncPools;
import dev.pacer.DestinationLimiter;
import dev.pacer.Slot;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.Optional;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Executor;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;

/**
 * One asynchronous exchange ({@code PacedHttpClient#sendAsync}): the future handed to the caller,
 * the driver that takes each hop's turn and sends it with no thread waiting, and what cancelling
 * the future must stop (the acquisition waiting for a turn, then the exchange in flight).
 */
public final class AsyncExchange<T> {

  private final Exchanges exchanges;
  final CompletableFuture<HttpResponse<T>> result = new CompletableFuture<>();
  private final AtomicReference<Future<?>> stage =
      new AtomicReference<>(CompletableFuture.completedFuture(null));

  AsyncExchange(Exchanges exchanges) {
    this.exchanges = exchanges;
    // Completed by the exchange, the stage is done and this does nothing; cancelled by the
    // caller, it gives back a permit not yet granted, or cancels the exchange in flight.
    result.whenComplete((response, failure) -> stage.get().cancel(true));
  }

  /**
   * Sends {@code request} and follows its redirects, each hop with a turn of its own and no thread
   * waiting; server pushes go to {@code pushPromises} with no turn.
   *
   * @return the future handed to the caller: the final answer, or the failure
   */
  public static <T> CompletableFuture<HttpResponse<T>> send(
      Exchanges exchanges,
      HttpRequest request,
      HttpResponse.BodyHandler<T> handler,
      HttpResponse.PushPromiseHandler<T> pushPromises) {
    AsyncExchange<T> pending = new AsyncExchange<>(exchanges);
    CompletableFuture<Exchanged<T>> exchanged;
    try {
      exchanged =
          pending.from(
              new Hop<>(
                  exchanges, request, request, 0, uri -> handler, pushPromises, Optional.empty()));
    } catch (RuntimeException e) {
      exchanged = CompletableFuture.failedFuture(e);
    }
    exchanged.whenComplete(
        (done, failure) -> {
          if (failure == null) {
            pending.result.complete(done.response());
          } else {
            pending.result.completeExceptionally(Exchanges.unwrapped(failure));
          }
        });
    return pending.result;
  }

  private void track(Future<?> next) {
    stage.set(next);
    if (result.isDone()) {
      next.cancel(true);
    }
  }

  /**
   * Sends {@code hop} and the hops after it as {@link Exchanges#exchange} does, with no thread
   * waiting: each turn is {@link DestinationLimiter#acquireAsync(Executor)}'s, granted on {@link
   * #sendingExecutor}, and each hop is sent there right after its turn was judged in time; each
   * answer is the delegate's future.
   */
  CompletableFuture<Exchanged<T>> from(Hop<T> hop) {
    Executor sending = sendingExecutor(hop);
    // The acquisition's tasks wait until the send below is attached to the turn: a turn granted
    // before that would run the send on this thread when it attaches, after the check for a late
    // turn, by as long as this thread took to get there.
    CompletableFuture<Void> attached = new CompletableFuture<>();
    Executor grantOn =
        task -> {
          if (attached.isDone()) {
            sending.execute(task);
          } else {
            attached.thenRun(() -> sending.execute(task));
          }
        };
    CompletableFuture<Slot> turn =
        hop.limiter
            .map(limiter -> limiter.acquireAsync(grantOn))
            .orElse(CompletableFuture.completedFuture(null));
    track(turn);
    // Not handleAsync: the turn is granted on the sending executor, and the hop leaves on the
    // thread that judged it in time.
    CompletableFuture<CompletableFuture<Hop.Step<T>>> sent =
        turn.handle(
            (slot, failure) -> {
              if (failure != null) {
                throw new CompletionException(Exchanges.unwrapped(failure));
              }
              if (result.isDone()) {
                // Cancelled (or completed by the caller) between the turn and its send: nothing
                // goes.
                if (slot != null) {
                  slot.close();
                }
                throw new CancellationException("cancelled before it was sent");
              }
              CompletableFuture<HttpResponse<T>> answer = hop.send(Optional.ofNullable(slot));
              track(answer);
              return answer.handle(
                  (response, failed) -> {
                    if (failed != null) {
                      throw new CompletionException(hop.failed(failed));
                    }
                    return hop.answered(response);
                  });
            });
    attached.complete(null);
    return sent.thenCompose(Function.identity())
        .thenCompose(
            step -> {
              if (step instanceof Hop.Step.Done<T> done) {
                return CompletableFuture.completedFuture(done.exchanged());
              }
              return from(hop.next(((Hop.Step.Follow<T>) step).request()));
            });
  }

  /**
   * Where a hop is sent after its turn: the delegate's executor if it was built with one (the
   * threads its own work runs on), or else Pacer's {@linkplain HopSenders send threads}. Never the
   * scheduler's thread that completes the turn: a send there delays every turn of the JVM queued
   * behind it (see {@link AsyncPools}). Never the round-trip executor either: its queue holds the
   * reservations of later turns, and a hop behind them would leave after its late check, by as long
   * as they take. The JDK client's {@code sendAsync} only builds the exchange and hands it to the
   * client's own threads, so two threads keep up with any rate a destination is paced at. An
   * unpaced hop has no turn to wait for and is sent on the thread that asked (the caller's, or the
   * one that completed the previous hop's answer).
   */
  private Executor sendingExecutor(Hop<?> hop) {
    if (hop.limiter.isEmpty()) {
      return Runnable::run;
    }
    return exchanges.delegate.executor().orElseGet(HopSenders::get);
  }
}
