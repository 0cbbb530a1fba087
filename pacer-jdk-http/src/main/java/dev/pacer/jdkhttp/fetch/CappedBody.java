package dev.pacer.jdkhttp.fetch;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Flow;

/**
 * Reads a 2xx body into a {@link Sink} as it arrives, one buffer list at a time, and fails it as
 * soon as it passes the cap (at once if its Content-Length says it will). The fetching thread may
 * {@link #abandon()} it at any moment (deadline, interrupt, failure): the sink is then discarded, a
 * file deleted, and later buffers are dropped.
 *
 * <p>The HTTP client calls the subscriber methods on its own threads, one at a time; {@code
 * abandon} comes from the fetching thread, so both hold this object's lock while they touch the
 * sink.
 */
final class CappedBody implements HttpResponse.BodySubscriber<Long> {

  /** Where the body goes. */
  interface Sink {
    void open() throws IOException;

    void write(ByteBuffer buffer) throws IOException;

    /** The body is complete: make it durable. */
    void finish() throws IOException;

    /** Discards what was written. Idempotent, never throws. */
    void abandon();

    FetchResponse.Content content();
  }

  /** A body that is not the network's fault: over the cap, or not storable. */
  static final class BodyFailure extends IOException {
    private static final long serialVersionUID = 1L;

    BodyFailure(String message, Throwable cause) {
      super(message, cause);
    }
  }

  private final URI uri;
  private final long cap;
  private final long declaredLength;
  private final Sink sink;
  private final CompletableFuture<Long> result = new CompletableFuture<>();
  private Flow.Subscription subscription;
  private long received;
  private boolean closed;

  CappedBody(URI uri, long cap, long declaredLength, Sink sink) {
    this.uri = uri;
    this.cap = cap;
    this.declaredLength = declaredLength;
    this.sink = sink;
  }

  Sink sink() {
    return sink;
  }

  @Override
  public void onSubscribe(Flow.Subscription s) {
    synchronized (this) {
      subscription = s;
      if (closed) {
        s.cancel();
        return;
      }
      if (declaredLength > cap) {
        fail(
            new BodyFailure(
                "body of "
                    + uri
                    + " is "
                    + declaredLength
                    + " bytes, over the cap of "
                    + cap
                    + " bytes",
                null));
        return;
      }
      try {
        sink.open();
      } catch (IOException e) {
        fail(new BodyFailure("could not store the body of " + uri + ": " + e, e));
        return;
      }
    }
    s.request(1);
  }

  @Override
  public void onNext(List<ByteBuffer> buffers) {
    synchronized (this) {
      if (closed) {
        return;
      }
      for (ByteBuffer b : buffers) {
        received += b.remaining();
      }
      if (received > cap) {
        fail(new BodyFailure("body of " + uri + " exceeds the cap of " + cap + " bytes", null));
        return;
      }
      try {
        for (ByteBuffer b : buffers) {
          sink.write(b);
        }
      } catch (IOException e) {
        fail(new BodyFailure("could not store the body of " + uri + ": " + e, e));
        return;
      }
    }
    subscription.request(1);
  }

  @Override
  public void onError(Throwable t) {
    synchronized (this) {
      closed = true;
      sink.abandon();
    }
    result.completeExceptionally(t);
  }

  @Override
  public void onComplete() {
    synchronized (this) {
      if (closed) {
        return;
      }
      try {
        sink.finish();
      } catch (IOException e) {
        fail(new BodyFailure("could not store the body of " + uri + ": " + e, e));
        return;
      }
      closed = true;
    }
    result.complete(received);
  }

  @Override
  public CompletionStage<Long> getBody() {
    return result;
  }

  /** Discards the body, whatever state it is in; later buffers are dropped. */
  synchronized void abandon() {
    closed = true;
    sink.abandon();
    if (subscription != null) {
      subscription.cancel();
    }
  }

  private void fail(BodyFailure failure) {
    closed = true;
    sink.abandon();
    subscription.cancel();
    result.completeExceptionally(failure);
  }

  /** Keeps the body in memory. */
  static final class InMemory implements Sink {
    private ByteArrayOutputStream bytes = new ByteArrayOutputStream();

    @Override
    public void open() {}

    @Override
    public void write(ByteBuffer buffer) {
      if (buffer.hasArray()) {
        bytes.write(buffer.array(), buffer.arrayOffset() + buffer.position(), buffer.remaining());
        buffer.position(buffer.limit());
      } else {
        byte[] copy = new byte[buffer.remaining()];
        buffer.get(copy);
        bytes.writeBytes(copy);
      }
    }

    @Override
    public void finish() {}

    @Override
    public void abandon() {
      bytes = new ByteArrayOutputStream();
    }

    @Override
    public FetchResponse.Content content() {
      return new FetchResponse.Content.InMemory(bytes.toByteArray());
    }
  }

  /**
   * Streams the body to a file, created or truncated when the body starts, and, if {@code force},
   * forced to the storage device before the fetch returns: a caller that records the item as
   * fetched right after must not lose the body to a crash. A caller that makes a group of bodies
   * durable at once forces none of them here.
   */
  static final class ToFile implements Sink {
    private final Path file;
    private final boolean force;
    private FileChannel channel;
    private boolean opened;

    ToFile(Path file, boolean force) {
      this.file = file;
      this.force = force;
    }

    @Override
    public void open() throws IOException {
      channel =
          FileChannel.open(
              file,
              StandardOpenOption.CREATE,
              StandardOpenOption.WRITE,
              StandardOpenOption.TRUNCATE_EXISTING);
      opened = true;
    }

    @Override
    public void write(ByteBuffer buffer) throws IOException {
      while (buffer.hasRemaining()) {
        channel.write(buffer);
      }
    }

    @Override
    public void finish() throws IOException {
      try (FileChannel c = channel) {
        if (force) {
          c.force(true);
        }
      }
    }

    @Override
    public void abandon() {
      if (!opened) {
        return;
      }
      try {
        if (channel != null) {
          channel.close();
        }
        Files.deleteIfExists(file);
      } catch (IOException e) {
        // Nothing more can be done here; the fetch already fails, naming its own reason.
      }
    }

    @Override
    public FetchResponse.Content content() {
      return new FetchResponse.Content.InFile(file);
    }
  }
}
