package dev.pacer.spring;

import dev.pacer.Destination;
import dev.pacer.DestinationLimiter;
import dev.pacer.LimiterRegistry;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * The limiters of the destinations configured under {@code pacer.destinations}, one per name, all
 * from the application's {@link LimiterRegistry}: {@code destinations.limiter("api").acquire()};
 * and which destination each host belongs to, for the paced HTTP client. A destination made in code
 * rather than in properties goes to the registry itself ({@code registry.limiter(destination)});
 * the registry refuses a name registered twice with different settings, so properties and code
 * cannot disagree silently.
 */
public final class PacerDestinations {

  private final Map<String, DestinationLimiter> limiters;
  private final Map<String, Destination> byHost;

  /**
   * The limiters of the destinations, created in {@code registry} now, each pacing the hosts it is
   * mapped to (lower-case host names).
   *
   * @throws IllegalArgumentException if a host is mapped to two destinations, naming both
   */
  public PacerDestinations(LimiterRegistry registry, Map<Destination, Set<String>> hosts) {
    Map<String, DestinationLimiter> byName = new LinkedHashMap<>();
    Map<String, Destination> destinationOfHost = new LinkedHashMap<>();
    for (Map.Entry<Destination, Set<String>> e : hosts.entrySet()) {
      Destination d = e.getKey();
      byName.put(d.name(), registry.limiter(d));
      for (String host : e.getValue()) {
        Destination other = destinationOfHost.putIfAbsent(host.toLowerCase(Locale.ROOT), d);
        if (other != null) {
          throw new IllegalArgumentException(
              "host "
                  + host
                  + " is paced by two destinations, "
                  + other.name()
                  + " and "
                  + d.name()
                  + ": a request can take one turn only;"
                  + " give it to one of them in pacer.destinations.<name>.hosts");
        }
      }
    }
    this.limiters = Collections.unmodifiableMap(byName);
    this.byHost = Collections.unmodifiableMap(destinationOfHost);
  }

  /**
   * The limiter of the destination configured as {@code name}.
   *
   * @throws IllegalArgumentException if no destination of that name is configured, naming the ones
   *     that are
   */
  public DestinationLimiter limiter(String name) {
    DestinationLimiter limiter = limiters.get(name);
    if (limiter == null) {
      throw new IllegalArgumentException(
          "no destination "
              + name
              + " is configured under"
              + " pacer.destinations; configured: "
              + limiters.keySet());
    }
    return limiter;
  }

  /** The destination that paces requests to {@code host} (any case), if one does. */
  public Optional<Destination> destinationForHost(String host) {
    return host == null
        ? Optional.empty()
        : Optional.ofNullable(byHost.get(host.toLowerCase(Locale.ROOT)));
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
    return "PacerDestinations" + limiters.keySet() + ", hosts " + byHost.keySet();
  }
}
