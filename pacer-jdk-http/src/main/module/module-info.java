/**
 * Pacing for the JDK's HTTP client: {@code PacedHttpClient}, the decorator that gives every request
 * and redirect hop a turn, and {@code DestinationFetcher}, one destination's fetcher with a
 * deadline and a body cap.
 */
module dev.pacer.jdkhttp {
  requires transitive dev.pacer.core;
  requires transitive java.net.http;
  requires org.slf4j;

  exports dev.pacer.jdkhttp;
}
