package dev.pacer.postgres;

import dev.pacer.jdkhttp.SentRequest;
import dev.pacer.testing.TurnTrace;

/**
 * How a fleet member reports its traced requests: a child JVM to the test that started it, one line
 * each ({@link #line}), a member in the test's JVM straight into the trace ({@link #record}). A
 * line holds the request's target, its turn and its send, on {@code System.nanoTime()}. That is the
 * machine's monotonic clock on Linux, which the door stamps on too, so the test can take the door's
 * busiest window apart ({@link TurnTrace}). Only requests with a query are reported: each request
 * of a run carries one of its own, the opening request ({@link DoorClient#OPENING_PATH}) none.
 */
final class TraceLines {

  private static final String PREFIX = "TRACE ";

  private TraceLines() {}

  /** The line for {@code r}, or null for a request without a query. */
  static String line(SentRequest r) {
    String target = target(r);
    return target == null ? null : PREFIX + target + " " + r.turnNanos() + " " + r.sentNanos();
  }

  /** Records {@code r} into {@code trace}, in this JVM, unless it has no query. */
  static void record(SentRequest r, TurnTrace trace) {
    String target = target(r);
    if (target != null) {
      trace.sent(target, r.turnNanos(), r.sentNanos());
    }
  }

  private static String target(SentRequest r) {
    String query = r.uri().getRawQuery();
    return query == null ? null : r.uri().getRawPath() + "?" + query;
  }

  /** Records {@code line} into {@code trace} if it is a trace line; says whether it was. */
  static boolean read(String line, TurnTrace trace) {
    if (!line.startsWith(PREFIX)) {
      return false;
    }
    String[] r = line.split(" ");
    trace.sent(r[1], Long.parseLong(r[2]), Long.parseLong(r[3]));
    return true;
  }
}
