/**
 * Pacer's core: destinations, the limiter and the cursor contract. {@code dev.pacer} is the API a
 * user calls; {@code dev.pacer.spi} is what a backend implements (the cursor, its reservations, the
 * fleet-wide slots). {@code dev.pacer.internal} (the pacing arithmetic, backoff, the rate meter)
 * may change in any release.
 */
module dev.pacer.core {
  requires org.slf4j;

  exports dev.pacer;
  exports dev.pacer.spi;
}
