/** Micrometer meters for Pacer's limiters ({@code dev.pacer.micrometer.PacerMetrics}). */
@SuppressWarnings("requires-automatic") // Micrometer names its module in its manifest only
module dev.pacer.micrometer {
  requires transitive dev.pacer.core;
  requires transitive micrometer.core;

  exports dev.pacer.micrometer;
}
