package dev.pacer;

import java.time.Duration;
import java.time.Instant;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.util.Optional;

/**
 * The {@code Retry-After} header (RFC 9110, section 10.2.3): delta-seconds, or an HTTP-date. A date
 * in the past, or a value that is neither, is no pause at all: a malformed header must not stop a
 * fleet, and the status's own backoff still applies.
 */
final class RetryAfter {

  private RetryAfter() {}

  /** The pause {@code header} asks for as seen at {@code now}, or empty if it asks for none. */
  static Optional<Duration> parse(String header, Instant now) {
    if (header == null) {
      return Optional.empty();
    }
    String value = header.strip();
    if (!value.isEmpty() && value.chars().allMatch(c -> c >= '0' && c <= '9')) {
      // More than 19 digits overflows a long; any such value is "very long", capped later.
      long seconds = value.length() > 18 ? Long.MAX_VALUE / 1_000_000_000L : Long.parseLong(value);
      return seconds == 0
          ? Optional.empty()
          : Optional.of(Duration.ofSeconds(Math.min(seconds, Long.MAX_VALUE / 1_000_000_000L)));
    }
    try {
      Instant at = ZonedDateTime.parse(value, DateTimeFormatter.RFC_1123_DATE_TIME).toInstant();
      Duration left = Duration.between(now, at);
      return left.isNegative() || left.isZero() ? Optional.empty() : Optional.of(left);
    } catch (DateTimeParseException e) {
      return Optional.empty();
    }
  }
}
