package dev.pacer.http.hc5;

import dev.pacer.LimiterLookup;
import dev.pacer.http.AddressPolicy;

/** The handler's address-policy seam, for tests whose destinations all listen on loopback. */
public final class TestHandler {

  private TestHandler() {}

  /** A handler pacing by {@code limiters}, its hops judged by {@code addresses}. */
  public static PacingExecChainHandler judgedBy(LimiterLookup limiters, AddressPolicy addresses) {
    return new PacingExecChainHandler(limiters, addresses);
  }
}
