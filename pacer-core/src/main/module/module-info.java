/**
 * Pacer's core: destinations, the limiter and the cursor contract. {@code dev.pacer} is the API a
 * user calls; {@code dev.pacer.spi} is what a backend implements (the cursor, its reservations, the
 * fleet-wide slots). {@code dev.pacer.internal} (the pacing arithmetic, backoff, the rate meter)
 * may change in any release. {@code dev.pacer.shared} is what Pacer's own modules share (the guard
 * of a caller's listener, the redaction of a URL's secrets), exported to them alone.
 */
@SuppressWarnings("module") // the modules shared with are compiled after this one
module dev.pacer.core {
  requires org.slf4j;

  exports dev.pacer;
  exports dev.pacer.spi;
  exports dev.pacer.shared to
      dev.pacer.jdkhttp,
      dev.pacer.postgres,
      dev.pacer.cli;
}
