/**
 * Pacer's core: destinations, the limiter and the cursor contract. Only {@code dev.pacer} is API;
 * {@code dev.pacer.internal} (the pacing arithmetic, backoff, the rate meter) may change in any
 * release.
 */
module dev.pacer.core {
  requires org.slf4j;

  exports dev.pacer;
}
