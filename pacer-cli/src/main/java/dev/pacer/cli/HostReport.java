package dev.pacer.cli;

import dev.pacer.cli.db.FrontierStore;
import dev.pacer.cli.db.HostStatus;
import dev.pacer.cli.db.RequestLog;
import dev.pacer.cli.db.WorkState;
import java.io.PrintWriter;
import java.sql.SQLException;
import java.util.Locale;
import java.util.OptionalDouble;

/**
 * The hosts of a per-host job in {@code pacer status}: the busiest hosts of the last seconds
 * against their ceilings (from the request log), the hosts held back (paused by a {@code
 * Retry-After} or backed off) and locked out (from the cursors' table), those passed over by their
 * failure bar, and the backlog by host. Each list shows its first {@code top} hosts and counts the
 * rest, so that a job of 10,000 hosts reads in a screen.
 */
final class HostReport {

  private final WorkState store;
  private final RequestLog requestLog;
  private final int top;
  private final double seconds;

  HostReport(WorkState store, RequestLog requestLog, int top, double seconds) {
    this.store = store;
    this.requestLog = requestLog;
    this.top = top;
    this.seconds = seconds;
  }

  void print(PrintWriter out, String job) throws SQLException {
    printBusiestHosts(out, job);
    printHeldBack(out, job);
    printLockedOut(out, job);
    printPassedOver(out, job);
    printBacklog(out, job);
  }

  private void printBusiestHosts(PrintWriter out, String job) throws SQLException {
    RequestLog.BusiestHosts busiest = requestLog.busiestHosts(job, seconds, top);
    out.printf(
        Locale.ROOT,
        "    busiest hosts in the last %s s: %s%n",
        number(seconds),
        busiest.hosts() == 0
            ? "none sent to"
            : busiest.requests()
                + " request(s) to "
                + busiest.hosts()
                + " host(s), "
                + busiest.aboveCeiling()
                + " above ceiling + 1 in a 1-s window");
    for (RequestLog.HostTraffic h : busiest.top()) {
      out.printf(
          Locale.ROOT,
          "      %-28s %6d request(s)  busiest 1-s window %3d  %s%n",
          h.host(),
          h.requests(),
          h.busiestOneSecondWindow(),
          h.ceiling().isPresent()
              ? "ceiling "
                  + number(h.ceiling().getAsDouble())
                  + "/s: "
                  + (h.busiestOneSecondWindow() <= Math.floor(h.ceiling().getAsDouble()) + 1
                      ? "kept"
                      : "EXCEEDED")
              : "not a host of this job");
    }
    more(out, busiest.hosts() - busiest.top().size(), "");
  }

  private void printHeldBack(PrintWriter out, String job) throws SQLException {
    HostStatus.HeldBack held = store.hosts().heldBack(job, top);
    out.printf(
        Locale.ROOT,
        "    held back: %s%n",
        held.hosts() == 0
            ? "none"
            : held.hosts()
                + " host(s), "
                + held.paused()
                + " paused by their Retry-After, the rest"
                + " backed off after 429/503");
    for (HostStatus.HeldHost h : held.top()) {
      out.printf(
          Locale.ROOT,
          "      %-28s %s%s%n",
          h.host(),
          h.pauseSeconds() > 0
              ? String.format(Locale.ROOT, "PAUSED for %.1f s more", h.pauseSeconds())
              : "",
          h.backoff() > 1
              ? (h.pauseSeconds() > 0 ? "  " : "")
                  + "backoff x"
                  + h.backoff()
                  + " (turns spaced "
                  + h.backoff()
                  + " times wider)"
              : "");
    }
    more(out, held.hosts() - held.top().size(), "");
  }

  private void printLockedOut(PrintWriter out, String job) throws SQLException {
    HostStatus.LockedOut locked = store.hosts().lockedOut(job, top);
    out.printf(
        Locale.ROOT,
        "    locked out: %s%n",
        locked.hosts() == 0
            ? "none"
            : locked.hosts()
                + " host(s), their "
                + locked.open()
                + " open item(s) passed over;"
                + " clear one with: pacer trips ack --destination HOST --note TEXT");
    for (HostStatus.LockedHost h : locked.top()) {
      out.printf(
          Locale.ROOT,
          "      %-28s LOCKED OUT since %s: %s; %d open item(s)%n",
          h.host(),
          h.since(),
          h.reason(),
          h.open());
    }
    more(out, locked.hosts() - locked.top().size(), "");
  }

  private void printPassedOver(PrintWriter out, String job) throws SQLException {
    HostStatus.PassedOver passed = store.hosts().passedOver(job, top);
    out.printf(
        Locale.ROOT,
        "    passed over: %s%n",
        passed.hosts() == 0
            ? "none"
            : passed.hosts()
                + " host(s) whose items failed, their open items deferred to the next"
                + " run");
    for (FrontierStore.PassedOver p : passed.top()) {
      out.printf(Locale.ROOT, "      %-28s %s%n", p.host(), p.reason());
    }
    more(out, passed.hosts() - passed.top().size(), "");
  }

  private void printBacklog(PrintWriter out, String job) throws SQLException {
    HostStatus.Backlog backlog = store.hosts().backlog(job, top);
    out.printf(
        Locale.ROOT,
        "    backlog: %s%n",
        backlog.hosts() == 0
            ? "none"
            : backlog.open()
                + " open item(s) over "
                + backlog.hosts()
                + " host(s)"
                + backlog
                    .slowest()
                    .map(s -> "; slowest to drain: " + s.host() + ", " + backlog(s))
                    .orElse(""));
    long shown = 0;
    for (HostStatus.HostBacklog h : backlog.top()) {
      out.printf(Locale.ROOT, "      %-28s %s%n", h.host(), backlog(h));
      shown += h.open();
    }
    more(
        out,
        backlog.hosts() - backlog.top().size(),
        ", " + (backlog.open() - shown) + " open item(s)");
  }

  /** "400 open at 0.5/s: at least 800 s". */
  private static String backlog(HostStatus.HostBacklog h) {
    OptionalDouble drain = h.drainSeconds();
    return h.open()
        + " open"
        + (drain.isPresent()
            ? " at "
                + number(h.rate().getAsDouble())
                + "/s: at least "
                + duration(drain.getAsDouble())
            : " (no ceiling of this job)");
  }

  private static void more(PrintWriter out, long rest, String what) {
    if (rest > 0) {
      out.printf(Locale.ROOT, "      ... and %d more host(s)%s%n", rest, what);
    }
  }

  /** A rate or a count of seconds without trailing zeros: 4, 0.5, 0.333. */
  static String number(double value) {
    String s = String.format(Locale.ROOT, "%.3f", value);
    return s.contains(".") ? s.replaceAll("0+$", "").replaceAll("\\.$", "") : s;
  }

  /** Seconds as a reader takes them in: 42 s, 13.3 min, 2.1 h. */
  static String duration(double seconds) {
    if (seconds < 120) {
      return String.format(Locale.ROOT, "%.0f s", seconds);
    }
    if (seconds < 7200) {
      return String.format(Locale.ROOT, "%.1f min", seconds / 60);
    }
    return String.format(Locale.ROOT, "%.1f h", seconds / 3600);
  }
}
