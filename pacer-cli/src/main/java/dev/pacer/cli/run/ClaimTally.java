package dev.pacer.cli.run;

import dev.pacer.cli.db.FrontierStore.Claim;
import java.util.Locale;
import java.util.concurrent.atomic.LongAdder;

/**
 * What a per-host worker's claims came back with, told at the worker's end. The figure it exists
 * for is the claims that came back empty while some host of the job was eligible (due, with an item
 * to lease, below its cap on items in flight): an idle answer whose snapshot held such a host that
 * another claim had locked ({@link Claim.Idle#contended()}), a refused turn, or an item lost to
 * another claim. Each is a round trip that fetched nothing although the frontier had a turn to
 * give; the frontier is meant to make them rare (the bench's target: under 0.1% of claims).
 *
 * <p>An idle answer that saw a host due but not eligible (every item in flight, a dead worker's
 * leases until they lapse, or waiting for a retry time) is counted apart, as held: no claim could
 * have taken it.
 */
final class ClaimTally {

  /** The start of the line {@link #describe()} writes, which the frontier bench reads. */
  static final String PREFIX = "Claims:";

  private final LongAdder leased = new LongAdder();
  private final LongAdder idle = new LongAdder();
  private final LongAdder held = new LongAdder();
  private final LongAdder contended = new LongAdder();
  private final LongAdder refused = new LongAdder();
  private final LongAdder lost = new LongAdder();
  private final LongAdder lockedOut = new LongAdder();

  void count(Claim claim) {
    if (claim instanceof Claim.Claimed) {
      leased.increment();
    } else if (claim instanceof Claim.Idle i) {
      (i.contended() ? contended : i.held() ? held : idle).increment();
    } else if (claim instanceof Claim.Refused) {
      refused.increment();
    } else if (claim instanceof Claim.Lost) {
      lost.increment();
    } else {
      lockedOut.increment();
    }
  }

  long made() {
    return leased.sum()
        + idle.sum()
        + held.sum()
        + contended.sum()
        + refused.sum()
        + lost.sum()
        + lockedOut.sum();
  }

  /** Claims that came back empty while some host was eligible (contended, refused or lost). */
  long emptyWhileEligible() {
    return contended.sum() + refused.sum() + lost.sum();
  }

  String describe() {
    return String.format(
        Locale.ROOT,
        "%s %d made, %d leased an item, %d found no host due, %d"
            + " came back empty while a host was eligible (%d contended, %d refused, %d lost), %d"
            + " found the due hosts held, %d met a lockout",
        PREFIX,
        made(),
        leased.sum(),
        idle.sum(),
        emptyWhileEligible(),
        contended.sum(),
        refused.sum(),
        lost.sum(),
        held.sum(),
        lockedOut.sum());
  }
}
