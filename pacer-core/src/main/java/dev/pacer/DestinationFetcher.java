package dev.pacer;

import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Fetches URLs of one destination through its {@link DestinationLimiter}, with one reused {@link
 * HttpClient}, and feeds every response back into the limiter:
 *
 * <ul>
 *   <li>a {@linkplain Destination#lockoutStatusCodes() lockout status} (403): the limiter locks out
 *       and {@link LockedOutException} is thrown, a hard stop;
 *   <li>a {@linkplain Destination#backoffStatusCodes() backoff status} (429, 503): the limiter
 *       backs off and {@link ThrottledException} is thrown: defer the item, the run goes on slower;
 *   <li>anything else counts as a clean response ({@link DestinationLimiter#noteCleanResponse()});
 *       a 2xx is returned, any other status is a {@link FetchFailedException}.
 * </ul>
 *
 * <p>Network errors, timeouts and bodies over {@code maxBodyBytes} (default 32 MiB) are ordinary
 * failures ({@link FetchFailedException}), never throttles. Every 50 requests the achieved rate is
 * logged at INFO. Safe for concurrent use; the limiter bounds how many requests are in flight.
 */
public final class DestinationFetcher {

  private static final Logger log = LoggerFactory.getLogger(DestinationFetcher.class);

  public static final long DEFAULT_MAX_BODY_BYTES = 32L * 1024 * 1024;
  public static final int RATE_LOG_EVERY = 50;

  private final DestinationLimiter limiter;
  private final Destination destination;
  private final HttpClient client;
  private final long maxBodyBytes;
  private final Duration requestTimeout;
  private final Map<String, String> headers;
  private final AtomicLong requests = new AtomicLong();
  private final AtomicLong throttled = new AtomicLong();

  private DestinationFetcher(Builder b) {
    this.limiter = b.limiter;
    this.destination = b.limiter.destination();
    this.client = b.client != null ? b.client
        : HttpClient.newBuilder()
            .connectTimeout(b.connectTimeout)
            .followRedirects(HttpClient.Redirect.NORMAL)
            .version(HttpClient.Version.HTTP_1_1)
            .build();
    this.maxBodyBytes = b.maxBodyBytes;
    this.requestTimeout = b.requestTimeout;
    this.headers = Map.copyOf(b.headers);
  }

  /** A fetcher pacing through {@code limiter}. */
  public static Builder builder(DestinationLimiter limiter) {
    return new Builder(limiter);
  }

  public DestinationLimiter limiter() {
    return limiter;
  }

  /** Requests sent so far (each one took a turn from the limiter). */
  public long requestCount() {
    return requests.get();
  }

  /** Requests answered with a backoff status so far. */
  public long throttledCount() {
    return throttled.get();
  }

  /**
   * Takes a turn, sends a GET for {@code uri}, and classifies the answer.
   *
   * @return the 2xx response with its whole body
   * @throws LockedOutException on a lockout status, or if the destination was already locked out
   * @throws ThrottledException on a backoff status; the limiter has backed off
   * @throws FetchFailedException on any other failure
   * @throws InterruptedException if interrupted while waiting for the turn or the response
   */
  public FetchResponse fetch(URI uri)
      throws InterruptedException, ThrottledException, FetchFailedException {
    HttpRequest.Builder request = HttpRequest.newBuilder(uri).GET().timeout(requestTimeout);
    headers.forEach(request::header);
    int status;
    byte[] body;
    try (Slot slot = limiter.acquire()) {
      long n = requests.incrementAndGet();
      if (n % RATE_LOG_EVERY == 0) {
        logRate(n);
      }
      HttpResponse<InputStream> response;
      try {
        response = client.send(request.build(), HttpResponse.BodyHandlers.ofInputStream());
      } catch (IOException e) {
        throw new FetchFailedException("network error for " + uri + ": " + describe(e), e);
      }
      status = response.statusCode();
      if (destination.lockoutStatusCodes().contains(status)) {
        discard(response.body());
        String reason = "HTTP " + status + " from " + uri;
        limiter.lockOut(reason);
        throw new LockedOutException(destination.name(), reason);
      }
      if (destination.backoffStatusCodes().contains(status)) {
        discard(response.body());
        limiter.backoff();
        throttled.incrementAndGet();
        throw new ThrottledException(destination.name(), status, uri.toString());
      }
      limiter.noteCleanResponse();
      if (status < 200 || status > 299) {
        discard(response.body());
        throw new FetchFailedException("HTTP " + status + " from " + uri, status);
      }
      body = readCapped(uri, response);
    }
    return new FetchResponse(uri, status, body);
  }

  private byte[] readCapped(URI uri, HttpResponse<InputStream> response)
      throws FetchFailedException {
    long declared = response.headers().firstValueAsLong("Content-Length").orElse(-1L);
    try (InputStream in = response.body()) {
      if (declared > maxBodyBytes) {
        throw new FetchFailedException("body of " + uri + " is " + declared
            + " bytes, over the cap of " + maxBodyBytes + " bytes", response.statusCode());
      }
      byte[] body = in.readNBytes((int) Math.min(Integer.MAX_VALUE - 8, maxBodyBytes + 1));
      if (body.length > maxBodyBytes) {
        throw new FetchFailedException("body of " + uri + " exceeds the cap of " + maxBodyBytes
            + " bytes", response.statusCode());
      }
      return body;
    } catch (IOException e) {
      throw new FetchFailedException("network error reading " + uri + ": " + describe(e), e);
    }
  }

  private void logRate(long n) {
    log.info("Destination {}: {} requests from this process, which achieved {}/s over the last"
            + " 10 s (fleet-wide ceiling {}/s, backoff x{}{})",
        destination.name(), n, String.format("%.2f", limiter.currentRate()),
        destination.ratePerSecond(), limiter.backoffMultiplier(),
        limiter.isDegraded() ? ", DEGRADED: pacing locally" : "");
  }

  private static void discard(InputStream body) {
    try (InputStream in = body) {
      in.skip(Long.MAX_VALUE);
    } catch (IOException ignored) {
      // The body of an error answer is not needed; a broken stream only costs the connection.
    }
  }

  private static String describe(IOException e) {
    String message = e.getMessage();
    return e.getClass().getSimpleName() + (message == null ? "" : " (" + message + ")");
  }

  /** Builder for {@link DestinationFetcher}. */
  public static final class Builder {
    private final DestinationLimiter limiter;
    private HttpClient client;
    private long maxBodyBytes = DEFAULT_MAX_BODY_BYTES;
    private Duration connectTimeout = Duration.ofSeconds(10);
    private Duration requestTimeout = Duration.ofSeconds(60);
    private final Map<String, String> headers = new LinkedHashMap<>();

    private Builder(DestinationLimiter limiter) {
      this.limiter = Objects.requireNonNull(limiter, "limiter");
    }

    /** Use this client instead of building one (it should not be shared across destinations). */
    public Builder httpClient(HttpClient client) {
      this.client = Objects.requireNonNull(client, "client");
      return this;
    }

    public Builder maxBodyBytes(long maxBodyBytes) {
      if (maxBodyBytes < 0) {
        throw new IllegalArgumentException("maxBodyBytes must be >= 0, got " + maxBodyBytes);
      }
      this.maxBodyBytes = maxBodyBytes;
      return this;
    }

    public Builder connectTimeout(Duration timeout) {
      this.connectTimeout = positive("connectTimeout", timeout);
      return this;
    }

    public Builder requestTimeout(Duration timeout) {
      this.requestTimeout = positive("requestTimeout", timeout);
      return this;
    }

    /** A header sent with every request (for example a User-Agent). */
    public Builder header(String name, String value) {
      headers.put(Objects.requireNonNull(name, "name"), Objects.requireNonNull(value, "value"));
      return this;
    }

    public DestinationFetcher build() {
      return new DestinationFetcher(this);
    }

    private static Duration positive(String field, Duration value) {
      if (value == null || value.isZero() || value.isNegative()) {
        throw new IllegalArgumentException(field + " must be > 0, got " + value);
      }
      return value;
    }
  }
}
