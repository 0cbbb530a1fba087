package dev.pacer;

/**
 * The child JVM of {@link FirstGrantTest}: one {@code acquire} in a fresh JVM, on a clock that
 * prints {@link #CLOCK} at every read, then {@link #ACQUIRED} once the slot is in hand. Run with
 * {@code -verbose:class}, its output shows which classes loaded after the limiter last read its
 * clock.
 */
final class FirstGrant {

  static final String CLOCK = "first-grant: clock read";
  static final String ACQUIRED = "first-grant: acquired";

  private FirstGrant() {}

  public static void main(String[] args) throws Exception {
    TimeSource marking =
        new TimeSource() {
          @Override
          public long nanoTime() {
            System.out.println(CLOCK);
            return System.nanoTime();
          }

          @Override
          public void sleepNanos(long nanos) throws InterruptedException {
            TimeSource.SYSTEM.sleepNanos(nanos);
          }
        };
    LimiterRegistry registry = new LimiterRegistry(new LocalCursor(marking), marking);
    registry.addListener(new LimiterListener() {});
    DestinationLimiter limiter =
        registry.limiter(
            Destination.builder("first-grant").ratePerSecond(10).maxConcurrency(1).build());
    try (Slot slot = limiter.acquire()) {
      System.out.println(ACQUIRED);
    }
  }
}
