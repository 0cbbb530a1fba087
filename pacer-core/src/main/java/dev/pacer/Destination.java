package dev.pacer;

import dev.pacer.internal.Backoff;
import dev.pacer.spi.Cursor;
import dev.pacer.spi.FleetSlots;
import java.time.Duration;
import java.util.Collections;
import java.util.Objects;
import java.util.OptionalInt;
import java.util.Set;
import java.util.TreeSet;

/**
 * One outbound destination and its ceiling: "at most {@code ratePerSecond} requests per second to
 * {@code name}, across every thread, process and host that fetches from it".
 *
 * <p>Immutable; built with {@link #builder(String)}, which validates every field and names the bad
 * value in its {@link IllegalArgumentException}.
 *
 * <ul>
 *   <li>{@code ratePerSecond}: the fleet-wide ceiling (finite, &gt; 0, &le; 1,000,000).
 *   <li>{@code maxConcurrency}: requests in flight at once <em>per process</em>. It shares the
 *       budget out; it never enlarges it.
 *   <li>{@code maxConcurrencyFleetWide} (optional, none by default): requests in flight at once
 *       <em>across the fleet</em>, held as {@link FleetSlots} leases. Opt-in per destination: it
 *       costs a capped request two round trips to the slots' store (take, give back), and an
 *       uncapped one nothing.
 *   <li>{@code maxFetchingProcesses}: the most processes that can fetch this destination at once.
 *       While the shared cursor is unreachable each process paces alone at {@code ratePerSecond ÷
 *       maxFetchingProcesses}, so that even then the fleet stays under the ceiling. Where the
 *       cursor counts the processes it saw taking turns ({@link Cursor#fetchingProcesses}), each
 *       divides by the larger of this and the count it saw last, at most {@link
 *       #MOST_PROCESSES_COUNTED}: a fleet larger than configured still holds the ceiling. While the
 *       fleet slots are unreachable each process keeps {@code maxConcurrencyFleetWide ÷
 *       maxFetchingProcesses} (at least 1) in flight.
 *   <li>{@code lockoutStatusCodes}: HTTP statuses that mean "stop entirely" (default 403).
 *   <li>{@code backoffStatusCodes}: HTTP statuses that mean "slow down" (default 429, 503).
 *   <li>{@code backoffScope}: whether a 429 or 503 slows the process that heard it ({@link
 *       BackoffScope#PROCESS}, the default) or the whole fleet ({@link BackoffScope#FLEET}).
 *   <li>{@code maxRetryAfter}: the longest pause a {@code Retry-After} may impose on the fleet
 *       (default 10 minutes, at most a day): a destination that answers "come back in a week"
 *       pauses the fleet for this long, then is asked again.
 * </ul>
 */
public final class Destination {

  /** The highest rate a destination may have, per second. */
  public static final double MAX_RATE_PER_SECOND = 1_000_000d;

  /**
   * The longest destination name, in characters: the longest DNS name, since a destination is most
   * often named by its host.
   */
  public static final int MAX_NAME_LENGTH = 253;

  /**
   * The longest {@code maxRetryAfter} a destination may have: no destination can ask a shared
   * cursor for a longer pause, so a cursor honours a recorded pause up to this far ahead of now and
   * no further.
   */
  public static final Duration LONGEST_RETRY_AFTER = Duration.ofDays(1);

  /**
   * The most processes a cursor's count of the fleet ({@link Cursor#fetchingProcesses}) may make a
   * degraded process divide by: a count comes from rows other roles may write, and a larger one
   * would slow each process to a standstill for as long as the outage lasts. A configured {@code
   * maxFetchingProcesses} above it still counts in full.
   */
  public static final int MOST_PROCESSES_COUNTED = 64;

  /** The largest lease a destination may allow ({@link Builder#maxLeasedTurns}). */
  public static final int MOST_LEASED_TURNS = 1024;

  /** The longest span of demand a lease may cover ({@link Builder#leaseHorizon}). */
  public static final Duration LONGEST_LEASE_HORIZON = Duration.ofSeconds(1);

  private final String name;
  private final double ratePerSecond;
  private final int maxConcurrency;

  /** 0 when the destination has no fleet-wide cap. */
  private final int maxConcurrencyFleetWide;

  private final int maxFetchingProcesses;
  private final Set<Integer> lockoutStatusCodes;
  private final Set<Integer> backoffStatusCodes;
  private final Duration interval;
  private final Duration maxRetryAfter;
  private final BackoffScope backoffScope;
  private final int maxLeasedTurns;
  private final Duration leaseHorizon;

  private Destination(Builder b) {
    this.name = b.name;
    this.ratePerSecond = b.ratePerSecond;
    this.maxConcurrency = b.maxConcurrency;
    this.maxConcurrencyFleetWide = b.maxConcurrencyFleetWide;
    this.maxFetchingProcesses = b.maxFetchingProcesses;
    this.lockoutStatusCodes = Collections.unmodifiableSet(new TreeSet<>(b.lockoutStatusCodes));
    this.backoffStatusCodes = Collections.unmodifiableSet(new TreeSet<>(b.backoffStatusCodes));
    this.interval = Duration.ofNanos(Math.round(1e9 / ratePerSecond));
    this.maxRetryAfter = b.maxRetryAfter;
    this.backoffScope = b.backoffScope;
    this.maxLeasedTurns = b.maxLeasedTurns;
    this.leaseHorizon = b.leaseHorizon;
  }

  /**
   * Starts a builder; {@code ratePerSecond} must be set before {@link Builder#build()}.
   *
   * @param name the destination's name (see {@link #validateName})
   * @return a builder for a destination of that name
   */
  public static Builder builder(String name) {
    return new Builder(name);
  }

  /**
   * The name: the key of the destination's cursor, shared by every process of the fleet.
   *
   * @return the name
   */
  public String name() {
    return name;
  }

  /**
   * The ceiling, for the whole fleet.
   *
   * @return requests per second
   */
  public double ratePerSecond() {
    return ratePerSecond;
  }

  /**
   * The spacing the ceiling implies: 1 s ÷ {@code ratePerSecond}.
   *
   * @return the interval between turns
   */
  public Duration interval() {
    return interval;
  }

  /**
   * Requests in flight at once in one process.
   *
   * @return the per-process cap (default 4)
   */
  public int maxConcurrency() {
    return maxConcurrency;
  }

  /**
   * Requests in flight at once across the fleet, if the destination caps them; empty if not.
   *
   * @return the fleet-wide cap, or empty
   */
  public OptionalInt maxConcurrencyFleetWide() {
    return maxConcurrencyFleetWide == 0
        ? OptionalInt.empty()
        : OptionalInt.of(maxConcurrencyFleetWide);
  }

  /**
   * The most processes that can fetch from this destination at once: while the cursor is
   * unavailable each paces at the rate divided by this, or by the processes the cursor saw taking
   * turns if more ({@link Cursor#fetchingProcesses}).
   *
   * @return the least degrade divisor (default 1)
   */
  public int maxFetchingProcesses() {
    return maxFetchingProcesses;
  }

  /**
   * The most turns the fleet can hold at once: every process that may fetch, each with every
   * request in flight and a full lease in hand, {@code maxFetchingProcesses × (maxConcurrency +
   * maxLeasedTurns - 1)}. A caller takes its turn only while it holds one of its process's {@code
   * maxConcurrency} permits, and a process leases turns only up to {@code maxLeasedTurns} in hand,
   * its own caller's among them, so no process ever has more turns queued than that. Without leases
   * it is {@code maxFetchingProcesses × maxConcurrency}.
   *
   * @return {@code maxFetchingProcesses × (maxConcurrency + maxLeasedTurns - 1)}
   */
  public long maxQueuedTurns() {
    return (long) maxFetchingProcesses * maxTurnsPerProcess();
  }

  /**
   * The most turns one process can hold at once: one for each request in flight, and the rest of a
   * full lease in hand, {@code maxConcurrency + maxLeasedTurns - 1}.
   *
   * @return the turns one process can hold; {@code maxConcurrency} without leases
   */
  public int maxTurnsPerProcess() {
    return maxConcurrency + maxLeasedTurns - 1;
  }

  /**
   * The most turns one reservation may lease for this process ({@code TurnLease}): 1, the default,
   * takes one turn a reservation, as a process without leases does.
   *
   * @return the largest lease, 1 when leases are off
   */
  public int maxLeasedTurns() {
    return maxLeasedTurns;
  }

  /**
   * How much of a process's recent demand a lease covers: a lease takes the turns this process
   * asked for over the longer of this and the cursor's last round trip. Zero, the default, covers
   * one round trip.
   *
   * @return the span of demand a lease covers, at least the round trip
   */
  public Duration leaseHorizon() {
    return leaseHorizon;
  }

  /**
   * The furthest ahead of now this destination's fleet can honestly push a shared cursor: {@link
   * #maxQueuedTurns()} turns, each at the widest backoff ({@code interval ×} {@value
   * dev.pacer.internal.Backoff#MAX_MULTIPLIER}). For 7/s, 3 processes × 6 requests in flight: 18
   * turns × 143 ms × 16 = 41 s. A cursor further ahead than this came from something else (a clock
   * step, a hand-edited row), and waiting for it would stall the fleet.
   *
   * @return the longest honest queue, or about 292 years if it would overflow
   */
  public Duration longestHonestQueue() {
    try {
      return Duration.ofNanos(
          Math.multiplyExact(
              Math.multiplyExact(maxQueuedTurns(), (long) Backoff.MAX_MULTIPLIER),
              interval.toNanos()));
    } catch (ArithmeticException beyondAnyClock) {
      return Duration.ofNanos(Long.MAX_VALUE);
    }
  }

  /**
   * Statuses that lock the destination out (default 403).
   *
   * @return the lockout statuses
   */
  public Set<Integer> lockoutStatusCodes() {
    return lockoutStatusCodes;
  }

  /**
   * Statuses that back off (default 429 and 503).
   *
   * @return the backoff statuses
   */
  public Set<Integer> backoffStatusCodes() {
    return backoffStatusCodes;
  }

  /**
   * The longest pause a {@code Retry-After} may ask for; a longer one is cut to it.
   *
   * @return the cap on a pause (default 10 minutes)
   */
  public Duration maxRetryAfter() {
    return maxRetryAfter;
  }

  /**
   * Where the backoff multiplier lives.
   *
   * @return the backoff scope (default {@link BackoffScope#PROCESS})
   */
  public BackoffScope backoffScope() {
    return backoffScope;
  }

  /**
   * A builder with this destination's values, to derive a variant.
   *
   * @return a builder holding this destination's values
   */
  public Builder toBuilder() {
    Builder b =
        new Builder(name)
            .ratePerSecond(ratePerSecond)
            .maxConcurrency(maxConcurrency)
            .maxFetchingProcesses(maxFetchingProcesses)
            .lockoutStatusCodes(lockoutStatusCodes)
            .backoffStatusCodes(backoffStatusCodes)
            .maxRetryAfter(maxRetryAfter)
            .backoffScope(backoffScope)
            .maxLeasedTurns(maxLeasedTurns)
            .leaseHorizon(leaseHorizon);
    b.maxConcurrencyFleetWide = maxConcurrencyFleetWide;
    return b;
  }

  /**
   * Checks a destination name without building anything; throws naming the bad value.
   *
   * @param name the name to check
   * @return {@code name}, unchanged
   * @throws IllegalArgumentException if the name is null, empty, longer than {@link
   *     #MAX_NAME_LENGTH} characters, or holds whitespace, control or format characters
   */
  public static String validateName(String name) {
    if (name == null) {
      throw new IllegalArgumentException("name must not be null");
    }
    if (name.isEmpty() || name.length() > MAX_NAME_LENGTH) {
      throw new IllegalArgumentException(
          "name must be 1-"
              + MAX_NAME_LENGTH
              + " characters, got "
              + name.length()
              + " characters: "
              + Printable.quote(name));
    }
    for (int i = 0; i < name.length(); i++) {
      char c = name.charAt(i);
      if (c <= 0x20
          || c == 0x7f
          || Character.isWhitespace(c)
          || Character.isISOControl(c)
          || Character.isSpaceChar(c)
          || Character.getType(c) == Character.FORMAT) {
        throw new IllegalArgumentException(
            "name must be printable with no whitespace, got "
                + Printable.quote(name)
                + " (character "
                + (i + 1)
                + " is U+"
                + String.format("%04X", (int) c)
                + ")");
      }
    }
    return name;
  }

  @Override
  public boolean equals(Object o) {
    if (!(o instanceof Destination d)) {
      return false;
    }
    return name.equals(d.name)
        && Double.compare(ratePerSecond, d.ratePerSecond) == 0
        && maxConcurrency == d.maxConcurrency
        && maxConcurrencyFleetWide == d.maxConcurrencyFleetWide
        && maxFetchingProcesses == d.maxFetchingProcesses
        && lockoutStatusCodes.equals(d.lockoutStatusCodes)
        && backoffStatusCodes.equals(d.backoffStatusCodes)
        && maxRetryAfter.equals(d.maxRetryAfter)
        && backoffScope == d.backoffScope
        && maxLeasedTurns == d.maxLeasedTurns
        && leaseHorizon.equals(d.leaseHorizon);
  }

  @Override
  public int hashCode() {
    return Objects.hash(
        name,
        ratePerSecond,
        maxConcurrency,
        maxConcurrencyFleetWide,
        maxFetchingProcesses,
        lockoutStatusCodes,
        backoffStatusCodes,
        maxRetryAfter,
        backoffScope,
        maxLeasedTurns,
        leaseHorizon);
  }

  @Override
  public String toString() {
    return "Destination{name="
        + name
        + ", ratePerSecond="
        + ratePerSecond
        + ", maxConcurrency="
        + maxConcurrency
        + (maxConcurrencyFleetWide == 0
            ? ""
            : ", maxConcurrencyFleetWide=" + maxConcurrencyFleetWide)
        + ", maxFetchingProcesses="
        + maxFetchingProcesses
        + ", lockoutStatusCodes="
        + lockoutStatusCodes
        + ", backoffStatusCodes="
        + backoffStatusCodes
        + ", maxRetryAfter="
        + maxRetryAfter
        + ", backoffScope="
        + backoffScope
        + (maxLeasedTurns == 1
            ? ""
            : ", maxLeasedTurns=" + maxLeasedTurns + ", leaseHorizon=" + leaseHorizon)
        + "}";
  }

  /** Validating builder for {@link Destination}. Each setter checks its value at once. */
  public static final class Builder {
    private final String name;
    private double ratePerSecond = Double.NaN;
    private int maxConcurrency = 4;
    private int maxConcurrencyFleetWide;
    private int maxFetchingProcesses = 1;
    private Set<Integer> lockoutStatusCodes = Set.of(403);
    private Set<Integer> backoffStatusCodes = Set.of(429, 503);
    private Duration maxRetryAfter = Duration.ofMinutes(10);
    private BackoffScope backoffScope = BackoffScope.PROCESS;
    private int maxLeasedTurns = 1;
    private Duration leaseHorizon = Duration.ZERO;

    private Builder(String name) {
      this.name = validateName(name);
    }

    /**
     * Sets the ceiling for the whole fleet. Required.
     *
     * @param rate requests per second, above 0 and at most {@link #MAX_RATE_PER_SECOND}
     * @return this builder
     * @throws IllegalArgumentException naming the rate if it is out of range
     */
    public Builder ratePerSecond(double rate) {
      if (!Double.isFinite(rate) || rate <= 0 || rate > MAX_RATE_PER_SECOND) {
        throw new IllegalArgumentException(
            "ratePerSecond must be finite, > 0 and <= 1000000, got " + rate);
      }
      this.ratePerSecond = rate;
      return this;
    }

    /**
     * Caps the requests in flight at once in one process. Default 4.
     *
     * @param maxConcurrency at least 1
     * @return this builder
     * @throws IllegalArgumentException naming the value if it is below 1
     */
    public Builder maxConcurrency(int maxConcurrency) {
      if (maxConcurrency < 1) {
        throw new IllegalArgumentException("maxConcurrency must be >= 1, got " + maxConcurrency);
      }
      this.maxConcurrency = maxConcurrency;
      return this;
    }

    /**
     * Caps the requests in flight at once across the whole fleet at {@code n}; see {@link
     * FleetSlots}. The registry the destination's limiter comes from must then have fleet slots.
     *
     * @param n at least 1
     * @return this builder
     * @throws IllegalArgumentException naming the value if it is below 1
     */
    public Builder maxConcurrencyFleetWide(int n) {
      if (n < 1) {
        throw new IllegalArgumentException("maxConcurrencyFleetWide must be >= 1, got " + n);
      }
      this.maxConcurrencyFleetWide = n;
      return this;
    }

    /**
     * The most processes that can fetch from this destination at once: the divisor of the rate
     * while the cursor is unavailable, unless the cursor saw more taking turns. Default 1.
     *
     * @param maxFetchingProcesses at least 1
     * @return this builder
     * @throws IllegalArgumentException naming the value if it is below 1
     */
    public Builder maxFetchingProcesses(int maxFetchingProcesses) {
      if (maxFetchingProcesses < 1) {
        throw new IllegalArgumentException(
            "maxFetchingProcesses must be >= 1, got " + maxFetchingProcesses);
      }
      this.maxFetchingProcesses = maxFetchingProcesses;
      return this;
    }

    /**
     * The statuses that lock the destination out. Default 403.
     *
     * @param codes HTTP statuses, 100 to 599
     * @return this builder
     * @throws IllegalArgumentException naming the bad code
     */
    public Builder lockoutStatusCodes(Set<Integer> codes) {
      this.lockoutStatusCodes = validStatusCodes("lockoutStatusCodes", codes);
      return this;
    }

    /**
     * The statuses that back off. Default 429 and 503.
     *
     * @param codes HTTP statuses, 100 to 599
     * @return this builder
     * @throws IllegalArgumentException naming the bad code
     */
    public Builder backoffStatusCodes(Set<Integer> codes) {
      this.backoffStatusCodes = validStatusCodes("backoffStatusCodes", codes);
      return this;
    }

    /**
     * The longest pause a {@code Retry-After} may ask for. Default 10 minutes.
     *
     * @param maxRetryAfter above zero, at most a day
     * @return this builder
     * @throws IllegalArgumentException naming the value if it is out of range
     */
    public Builder maxRetryAfter(Duration maxRetryAfter) {
      if (maxRetryAfter == null
          || maxRetryAfter.isNegative()
          || maxRetryAfter.isZero()
          || maxRetryAfter.compareTo(LONGEST_RETRY_AFTER) > 0) {
        throw new IllegalArgumentException(
            "maxRetryAfter must be > 0 and at most a day, got " + maxRetryAfter);
      }
      this.maxRetryAfter = maxRetryAfter;
      return this;
    }

    /**
     * Where the backoff multiplier lives. Default {@link BackoffScope#PROCESS}.
     *
     * @param backoffScope not null
     * @return this builder
     * @throws IllegalArgumentException if it is null
     */
    public Builder backoffScope(BackoffScope backoffScope) {
      if (backoffScope == null) {
        throw new IllegalArgumentException("backoffScope must not be null");
      }
      this.backoffScope = backoffScope;
      return this;
    }

    /**
     * Lets a process that asks faster than it can round-trip to the cursor reserve up to {@code
     * maxLeasedTurns} consecutive turns in one reservation and hand them out itself, exactly spaced
     * (see {@code TurnLease}). Default 1: leases off, one turn a reservation.
     *
     * @param maxLeasedTurns 1 to {@value #MOST_LEASED_TURNS}
     * @return this builder
     * @throws IllegalArgumentException naming the value if it is out of range
     */
    public Builder maxLeasedTurns(int maxLeasedTurns) {
      if (maxLeasedTurns < 1 || maxLeasedTurns > MOST_LEASED_TURNS) {
        throw new IllegalArgumentException(
            "maxLeasedTurns must be 1-" + MOST_LEASED_TURNS + ", got " + maxLeasedTurns);
      }
      this.maxLeasedTurns = maxLeasedTurns;
      return this;
    }

    /**
     * How much of a process's recent demand a lease covers, when it is longer than the cursor's
     * round trip. Default zero: one round trip's worth.
     *
     * @param leaseHorizon zero to {@link #LONGEST_LEASE_HORIZON}
     * @return this builder
     * @throws IllegalArgumentException naming the value if it is out of range
     */
    public Builder leaseHorizon(Duration leaseHorizon) {
      if (leaseHorizon == null
          || leaseHorizon.isNegative()
          || leaseHorizon.compareTo(LONGEST_LEASE_HORIZON) > 0) {
        throw new IllegalArgumentException(
            "leaseHorizon must be >= 0 and at most 1 s, got " + leaseHorizon);
      }
      this.leaseHorizon = leaseHorizon;
      return this;
    }

    /**
     * Builds the destination.
     *
     * @return the destination
     * @throws IllegalArgumentException if the rate was never set, or a status code is both a
     *     lockout and a backoff code
     */
    public Destination build() {
      if (Double.isNaN(ratePerSecond)) {
        throw new IllegalArgumentException("ratePerSecond must be set for destination " + name);
      }
      for (Integer code : lockoutStatusCodes) {
        if (backoffStatusCodes.contains(code)) {
          throw new IllegalArgumentException(
              "status code " + code + " is in both lockoutStatusCodes and backoffStatusCodes");
        }
      }
      return new Destination(this);
    }

    private static Set<Integer> validStatusCodes(String field, Set<Integer> codes) {
      if (codes == null) {
        throw new IllegalArgumentException(field + " must not be null");
      }
      for (Integer code : codes) {
        if (code == null || code < 100 || code > 599) {
          throw new IllegalArgumentException(
              field + " must hold HTTP status codes 100-599, got " + code);
        }
      }
      return Set.copyOf(codes);
    }
  }
}
