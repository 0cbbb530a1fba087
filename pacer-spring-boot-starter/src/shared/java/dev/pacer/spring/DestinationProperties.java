package dev.pacer.spring;

import dev.pacer.BackoffScope;
import dev.pacer.Destination;
import dev.pacer.Printable;
import java.time.Duration;
import java.util.Locale;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Consumer;
import java.util.regex.Pattern;

/**
 * One destination's settings, {@code pacer.destinations.<name>.*}: one property for each field of
 * {@link Destination.Builder}, with the builder's defaults for every one left unset. Only {@code
 * rate-per-second} is required.
 *
 * <table>
 *   <caption>Properties</caption>
 *   <tr><th>property</th><th>builder field</th><th>default</th></tr>
 *   <tr><td>{@code rate-per-second}</td><td>{@code ratePerSecond}</td><td>(required)</td></tr>
 *   <tr><td>{@code max-concurrency}</td><td>{@code maxConcurrency}</td><td>4</td></tr>
 *   <tr><td>{@code max-concurrency-fleet-wide}</td><td>{@code maxConcurrencyFleetWide}</td><td>none</td></tr>
 *   <tr><td>{@code max-fetching-processes}</td><td>{@code maxFetchingProcesses}</td><td>1</td></tr>
 *   <tr><td>{@code lockout-status-codes}</td><td>{@code lockoutStatusCodes}</td><td>403</td></tr>
 *   <tr><td>{@code backoff-status-codes}</td><td>{@code backoffStatusCodes}</td><td>429, 503</td></tr>
 *   <tr><td>{@code backoff-scope}</td><td>{@code backoffScope}</td><td>{@code process}</td></tr>
 *   <tr><td>{@code max-retry-after}</td><td>{@code maxRetryAfter}</td><td>10m</td></tr>
 * </table>
 *
 * <p>One more property is the starter's own: {@code hosts}, the hosts whose requests this
 * destination paces when they go through the paced HTTP client (a {@code RestClient} built by
 * Spring Boot included); by default the destination's name, so {@code
 * pacer.destinations[images.example.com]} paces requests to {@code images.example.com}. A host
 * belongs to one destination at most; a request to a host of none is sent unpaced.
 *
 * <p>Durations take Spring's forms ({@code 90s}, {@code 5m}, ISO-8601 {@code PT5M}); status code
 * sets are comma-separated lists ({@code 429,503}); an empty list ({@code lockout-status-codes=})
 * means none. The builder checks each value and names it; {@link #toDestination} puts the
 * property's full name in front, so that a start-up failure reads, for example, {@code
 * pacer.destinations[api].rate-per-second: ratePerSecond must be finite, > 0 and <= 1000000, got
 * -2.0}.
 */
public class DestinationProperties {

  private Double ratePerSecond;
  private Integer maxConcurrency;
  private Integer maxConcurrencyFleetWide;
  private Integer maxFetchingProcesses;
  private Set<Integer> lockoutStatusCodes;
  private Set<Integer> backoffStatusCodes;
  private BackoffScope backoffScope;
  private Duration maxRetryAfter;
  private Set<String> hosts;

  /** Host names: no scheme, port, path or whitespace (an IPv6 literal in brackets). */
  private static final Pattern HOST = Pattern.compile("[^\\s/:\\[\\]@?#]+|\\[[0-9a-fA-F:.]+\\]");

  /**
   * The destination these properties describe.
   *
   * @throws IllegalArgumentException naming the property and its bad value, in the builder's words
   */
  public Destination toDestination(String name) {
    String prefix = "pacer.destinations[" + name + "]";
    Destination.Builder b;
    try {
      b = Destination.builder(name);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(prefix + ": destination " + e.getMessage(), e);
    }
    if (ratePerSecond == null) {
      throw new IllegalArgumentException(
          prefix
              + ".rate-per-second must be set: it is the"
              + " ceiling, the whole fleet's requests per second to "
              + name);
    }
    set(prefix, "rate-per-second", ratePerSecond, b::ratePerSecond);
    set(prefix, "max-concurrency", maxConcurrency, b::maxConcurrency);
    set(prefix, "max-concurrency-fleet-wide", maxConcurrencyFleetWide, b::maxConcurrencyFleetWide);
    set(prefix, "max-fetching-processes", maxFetchingProcesses, b::maxFetchingProcesses);
    set(prefix, "lockout-status-codes", lockoutStatusCodes, b::lockoutStatusCodes);
    set(prefix, "backoff-status-codes", backoffStatusCodes, b::backoffStatusCodes);
    set(prefix, "backoff-scope", backoffScope, b::backoffScope);
    set(prefix, "max-retry-after", maxRetryAfter, b::maxRetryAfter);
    try {
      return b.build();
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(prefix + ": " + e.getMessage(), e);
    }
  }

  /**
   * The hosts this destination paces, lower-case: {@code hosts}, or else the destination's name if
   * it is shaped like a host name (a name such as {@code api/v2} paces no host until {@code hosts}
   * names one).
   *
   * @throws IllegalArgumentException naming the property and the bad host
   */
  public Set<String> hostsOf(String name) {
    if (hosts == null || hosts.isEmpty()) {
      return HOST.matcher(name).matches() ? Set.of(name.toLowerCase(Locale.ROOT)) : Set.of();
    }
    Set<String> given = hosts;
    Set<String> lower = new TreeSet<>();
    for (String host : given) {
      if (host == null || !HOST.matcher(host).matches()) {
        throw new IllegalArgumentException(
            "pacer.destinations["
                + name
                + "].hosts: a host name"
                + " without scheme, port, path or whitespace, got "
                + Printable.quote(host));
      }
      lower.add(host.toLowerCase(Locale.ROOT));
    }
    return lower;
  }

  private static <T> void set(String prefix, String property, T value, Consumer<T> setter) {
    if (value == null) {
      return;
    }
    try {
      setter.accept(value);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(prefix + "." + property + ": " + e.getMessage(), e);
    }
  }

  public Double getRatePerSecond() {
    return ratePerSecond;
  }

  public void setRatePerSecond(Double ratePerSecond) {
    this.ratePerSecond = ratePerSecond;
  }

  public Integer getMaxConcurrency() {
    return maxConcurrency;
  }

  public void setMaxConcurrency(Integer maxConcurrency) {
    this.maxConcurrency = maxConcurrency;
  }

  public Integer getMaxConcurrencyFleetWide() {
    return maxConcurrencyFleetWide;
  }

  public void setMaxConcurrencyFleetWide(Integer maxConcurrencyFleetWide) {
    this.maxConcurrencyFleetWide = maxConcurrencyFleetWide;
  }

  public Integer getMaxFetchingProcesses() {
    return maxFetchingProcesses;
  }

  public void setMaxFetchingProcesses(Integer maxFetchingProcesses) {
    this.maxFetchingProcesses = maxFetchingProcesses;
  }

  public Set<Integer> getLockoutStatusCodes() {
    return lockoutStatusCodes;
  }

  public void setLockoutStatusCodes(Set<Integer> lockoutStatusCodes) {
    this.lockoutStatusCodes = lockoutStatusCodes;
  }

  public Set<Integer> getBackoffStatusCodes() {
    return backoffStatusCodes;
  }

  public void setBackoffStatusCodes(Set<Integer> backoffStatusCodes) {
    this.backoffStatusCodes = backoffStatusCodes;
  }

  public BackoffScope getBackoffScope() {
    return backoffScope;
  }

  public void setBackoffScope(BackoffScope backoffScope) {
    this.backoffScope = backoffScope;
  }

  public Set<String> getHosts() {
    return hosts;
  }

  public void setHosts(Set<String> hosts) {
    this.hosts = hosts;
  }

  public Duration getMaxRetryAfter() {
    return maxRetryAfter;
  }

  public void setMaxRetryAfter(Duration maxRetryAfter) {
    this.maxRetryAfter = maxRetryAfter;
  }
}
