package dev.pacer.spring;

import dev.pacer.Destination;
import dev.pacer.DestinationLimiter;
import dev.pacer.LimiterRegistry;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;

/**
 * The limiters of the destinations configured under {@code pacer.destinations}, one per name, all
 * from the application's {@link LimiterRegistry}: {@code destinations.limiter("api").acquire()}.
 * A destination made in code rather than in properties goes to the registry itself ({@code
 * registry.limiter(destination)}); the registry refuses a name registered twice with different
 * settings, so properties and code cannot disagree silently.
 */
public final class PacerDestinations {

  private final Map<String, DestinationLimiter> limiters;

  /** The limiters of {@code destinations}, created in {@code registry} now. */
  public PacerDestinations(LimiterRegistry registry, Iterable<Destination> destinations) {
    Map<String, DestinationLimiter> byName = new LinkedHashMap<>();
    for (Destination d : destinations) {
      byName.put(d.name(), registry.limiter(d));
    }
    this.limiters = Collections.unmodifiableMap(byName);
  }

  /**
   * The limiter of the destination configured as {@code name}.
   *
   * @throws IllegalArgumentException if no destination of that name is configured, naming the
   *     ones that are
   */
  public DestinationLimiter limiter(String name) {
    DestinationLimiter limiter = limiters.get(name);
    if (limiter == null) {
      throw new IllegalArgumentException("no destination " + name + " is configured under"
          + " pacer.destinations; configured: " + limiters.keySet());
    }
    return limiter;
  }

  /** The configured destination names, in the order they were bound. */
  public Set<String> names() {
    return limiters.keySet();
  }

  /** Every configured destination's limiter by name. */
  public Map<String, DestinationLimiter> limiters() {
    return limiters;
  }

  @Override
  public String toString() {
    return "PacerDestinations" + limiters.keySet();
  }
}
