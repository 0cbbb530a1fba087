package dev.pacer.jdkhttp;

import dev.pacer.http.AddressPolicy;

/** The address policy's seam for tests outside this package. */
public final class TestPacedClient {

  private TestPacedClient() {}

  /** {@code builder}, its redirects judged by {@code addresses}. */
  public static PacedHttpClient.Builder judgedBy(
      PacedHttpClient.Builder builder, AddressPolicy addresses) {
    return builder.addressPolicy(addresses);
  }
}
