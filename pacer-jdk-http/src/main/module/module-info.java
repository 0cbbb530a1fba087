/**
 * Pacing for the JDK's HTTP client: {@code dev.pacer.jdkhttp} ({@code PacedHttpClient}, the
 * decorator that gives every request and redirect hop a turn) and {@code dev.pacer.jdkhttp.fetch}
 * ({@code DestinationFetcher}, one destination's fetcher with a deadline and a body cap). {@code
 * dev.pacer.jdkhttp.internal} (the hops both send with) may change in any release.
 */
module dev.pacer.jdkhttp {
  requires transitive dev.pacer.core;
  requires dev.pacer.http;
  requires transitive java.net.http;
  requires org.slf4j;

  exports dev.pacer.jdkhttp;
  exports dev.pacer.jdkhttp.fetch;
}
