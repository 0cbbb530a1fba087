package dev.pacer.cli.run;

import dev.pacer.Printable;
import dev.pacer.cli.db.RequestLog;
import dev.pacer.cli.model.HaltReason;
import dev.pacer.cli.model.LimiterFigures;
import java.util.Locale;
import java.util.Optional;

/**
 * The one-line JSON summary that ends the output of {@code pacer fetch}: the job's counts, what the
 * destination saw during the run ({@code door}), judged against {@code ceilingPerSecond}, and what
 * the run's limiters did ({@code limiter}: the figures Pacer's Micrometer meters show, summed over
 * the run's workers as each last reported). {@code achievedRatePerSecond} is the door's rate, from
 * the first request to the last, not the run's wall time with its start-up. {@code skipped}: items
 * robots.txt kept the run from ({@code --robots}), never fetched and not failures.
 */
public record Summary(
    String job,
    long done,
    long failed,
    long deferred,
    long skipped,
    long pending,
    Optional<HaltReason> halted,
    double elapsedSeconds,
    double ceilingPerSecond,
    RequestLog.DoorFigures door,
    LimiterFigures limiter) {

  /** Whether the destination locked the run out (a 403): the bar most runs need told apart. */
  public boolean lockedOut() {
    return halted.equals(Optional.of(HaltReason.DESTINATION_LOCKOUT));
  }

  public String toJson() {
    return "{\"job\":"
        + Printable.json(job)
        + ",\"done\":"
        + done
        + ",\"failed\":"
        + failed
        + ",\"deferred\":"
        + deferred
        + ",\"skipped\":"
        + skipped
        + ",\"pending\":"
        + pending
        + ",\"lockedOut\":"
        + lockedOut()
        + ",\"haltedBar\":"
        + halted.map(h -> Printable.json(h.name())).orElse("null")
        + ",\"elapsedSeconds\":"
        + number(elapsedSeconds)
        + ",\"ceilingPerSecond\":"
        + number(ceilingPerSecond)
        + ",\"requestsAtDestination\":"
        + door.requests()
        + ",\"achievedRatePerSecond\":"
        + number(door.achievedRatePerSecond())
        + ",\"busiestOneSecondWindow\":"
        + door.busiestOneSecondWindow()
        + ",\"latenessP50Millis\":"
        + number(door.latenessP50Millis())
        + ",\"latenessP99Millis\":"
        + number(door.latenessP99Millis())
        + ",\"latenessMaxMillis\":"
        + number(door.latenessMaxMillis())
        + ",\"turnsShared\":"
        + limiter.shared()
        + ",\"turnsDegraded\":"
        + limiter.degraded()
        + ",\"turnsRefused\":"
        + limiter.refused()
        + ",\"acquireWaitMeanMillis\":"
        + number(limiter.waitMeanMillis())
        + ",\"acquireWaitMaxMillis\":"
        + number(limiter.waitMaxMillis())
        + ",\"throttled\":"
        + limiter.throttled()
        + ",\"lockouts\":"
        + limiter.lockouts()
        + ",\"backoffMultiplier\":"
        + limiter.backoff()
        + ",\"pacingLocally\":"
        + limiter.pacingLocally()
        + ",\"cursorLatched\":"
        + limiter.cursorLatched()
        + "}";
  }

  /** The door figures in one line for people, with the verdict on the ceiling. */
  public static String describe(RequestLog.DoorFigures door, double ceilingPerSecond) {
    if (door.requests() == 0) {
      return "no request sent";
    }
    boolean kept = door.busiestOneSecondWindow() <= Math.floor(ceilingPerSecond) + 1;
    return String.format(
        Locale.ROOT,
        "%d request(s) at %.2f/s over %.1f s; busiest 1-s window %d"
            + " (ceiling %s/s: %s); lateness after the turn p50 %.1f ms, p99 %.1f ms, max %.1f ms",
        door.requests(),
        door.achievedRatePerSecond(),
        door.spanSeconds(),
        door.busiestOneSecondWindow(),
        number(ceilingPerSecond),
        kept ? "kept" : "EXCEEDED",
        door.latenessP50Millis(),
        door.latenessP99Millis(),
        door.latenessMaxMillis());
  }

  private static String number(double value) {
    if (!Double.isFinite(value)) {
      return "0";
    }
    return String.format(Locale.ROOT, "%.3f", value);
  }
}
