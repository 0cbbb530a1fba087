package dev.pacer.http.okhttp;

import dev.pacer.LimiterLookup;
import dev.pacer.http.AddressPolicy;

/** The interceptor's address-policy seam, for tests whose destinations all listen on loopback. */
public final class TestInterceptor {

  private TestInterceptor() {}

  /** An interceptor pacing by {@code limiters}, its hops judged by {@code addresses}. */
  public static PacingInterceptor judgedBy(LimiterLookup limiters, AddressPolicy addresses) {
    return new PacingInterceptor(limiters, addresses);
  }
}
