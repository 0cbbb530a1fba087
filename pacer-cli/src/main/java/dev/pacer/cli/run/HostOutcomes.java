package dev.pacer.cli.run;

import dev.pacer.cli.db.FrontierStore;
import java.util.HashMap;
import java.util.Map;

/**
 * Per-host mode's failure bar, this process's share of it: the items of each host counted since the
 * last heartbeat (each once, at its first attempt, as {@link Envelope} counts a run's) and how many
 * of them failed. The heartbeat hands them to {@link FrontierStore#countItems}, which adds them to
 * the host's frontier row, where the bar is kept for the whole fleet.
 */
final class HostOutcomes {

  private final Map<String, FrontierStore.HostItems> counted = new HashMap<>();

  /** Counts one item of {@code host}: failed (with the failure's message) or answered. */
  synchronized void count(String host, boolean failed, String failure) {
    counted.merge(
        host,
        new FrontierStore.HostItems(1, failed ? 1 : 0, failed ? failure : null),
        HostOutcomes::plus);
  }

  /** The failures of {@code host} counted and not yet added to its bar. */
  synchronized int failures(String host) {
    FrontierStore.HostItems items = counted.get(host);
    return items == null ? 0 : items.failures();
  }

  /** The items counted since the last call, by host. */
  synchronized Map<String, FrontierStore.HostItems> drain() {
    Map<String, FrontierStore.HostItems> out = Map.copyOf(counted);
    counted.clear();
    return out;
  }

  /** Takes back what {@link #drain} handed out and could not be added: it goes with the next. */
  synchronized void putBack(Map<String, FrontierStore.HostItems> notAdded) {
    notAdded.forEach(
        (host, items) -> counted.merge(host, items, (since, earlier) -> plus(earlier, since)));
  }

  /** Two counts of one host together; the later failure's message is kept. */
  private static FrontierStore.HostItems plus(
      FrontierStore.HostItems earlier, FrontierStore.HostItems later) {
    return new FrontierStore.HostItems(
        earlier.items() + later.items(),
        earlier.failures() + later.failures(),
        later.lastFailure() != null ? later.lastFailure() : earlier.lastFailure());
  }
}
