package dev.pacer.cli.run;

import dev.pacer.cli.db.FrontierStore.Claim;
import java.util.Locale;
import java.util.concurrent.atomic.LongAdder;

/**
 * What a per-host worker's claims came back with, told at the worker's end. The figure it exists
 * for is the claims that came back empty while some host of the job was due: an idle answer that
 * says a host is due but held ({@link Claim.Idle#held()}), a refused turn, or an item lost to
 * another claim. Each is a round trip that fetched nothing although the frontier had a turn to
 * give; the frontier is meant to make them rare (the bench's target: under 0.1% of claims).
 *
 * <p>The held answer is an upper bound of "eligible": it reads the soonest host's row, which may
 * be due but have every item in flight (a dead worker's leases until they lapse), or be locked by
 * a concurrent claim that is about to move it.
 */
final class ClaimTally {

  /** The start of the line {@link #describe()} writes, which the frontier bench reads. */
  static final String PREFIX = "Claims:";

  private final LongAdder leased = new LongAdder();
  private final LongAdder idle = new LongAdder();
  private final LongAdder held = new LongAdder();
  private final LongAdder refused = new LongAdder();
  private final LongAdder lost = new LongAdder();
  private final LongAdder lockedOut = new LongAdder();

  void count(Claim claim) {
    if (claim instanceof Claim.Claimed) {
      leased.increment();
    } else if (claim instanceof Claim.Idle i) {
      (i.held() ? held : idle).increment();
    } else if (claim instanceof Claim.Refused) {
      refused.increment();
    } else if (claim instanceof Claim.Lost) {
      lost.increment();
    } else {
      lockedOut.increment();
    }
  }

  long made() {
    return leased.sum() + idle.sum() + held.sum() + refused.sum() + lost.sum() + lockedOut.sum();
  }

  /** Claims that came back empty while some host was due (held, refused or lost). */
  long emptyWhileDue() {
    return held.sum() + refused.sum() + lost.sum();
  }

  String describe() {
    return String.format(Locale.ROOT, "%s %d made, %d leased an item, %d found no host due, %d"
            + " came back empty while a host was due (%d held, %d refused, %d lost), %d met a"
            + " lockout", PREFIX, made(), leased.sum(), idle.sum(), emptyWhileDue(), held.sum(),
        refused.sum(), lost.sum(), lockedOut.sum());
  }
}
