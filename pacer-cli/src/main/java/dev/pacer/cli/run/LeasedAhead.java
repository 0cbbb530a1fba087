package dev.pacer.cli.run;

import dev.pacer.TimeSource;
import dev.pacer.cli.db.FrontierStore;
import dev.pacer.cli.db.ItemStore;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.Consumer;
import java.util.function.Predicate;
import java.util.function.ToIntFunction;

/**
 * The items a worker keeps leased ahead of its fetch threads, so that they go on fetching while
 * PostgreSQL is away: at most {@code capacity} items, claimed with the records of the items fetched
 * ({@link QueuedClaims}), their leases extended by the heartbeat beside those of the items in
 * flight.
 *
 * <p><b>How long a buffered item may be fetched.</b> Each item's lease runs {@code leaseMillis}
 * from the last statement that set it (its claim, or the heartbeat's extension that answered its
 * token), and this worker knows when it sent that statement: the lease on the server ends no
 * earlier than that instant plus {@code leaseMillis}. An item is handed out only while at least a
 * quarter of that lease is left, time for its turn and its request, so that no other worker can
 * have claimed it meanwhile; once PostgreSQL has been away for three quarters of a lease, the
 * buffer hands out nothing more until the heartbeat extends the leases again. An extension that
 * does not answer a buffered item's token (another worker claimed it after its lease ran out) drops
 * the item here: it is never fetched twice on that account.
 *
 * <p><b>How it fills.</b> A claim asks for the item the thread fetches now and at most {@link
 * #MOST_AHEAD_PER_CLAIM} more, so that the buffer fills over the first items of a run rather than
 * with the first claim, and the workers starting together share the job's first items. Per host the
 * claims are the frontier's, one item each, and the heartbeat fills the buffer instead ({@link
 * #room}, {@link #filled}; {@code FrontierStore.leaseAhead} spreads it over the hosts); a claim
 * that takes a buffered item at its host's turn takes it out ({@link #claimedAgain}).
 */
final class LeasedAhead {

  /** The items beyond its own a claim asks for at most. */
  static final int MOST_AHEAD_PER_CLAIM = 2;

  /** A buffered item, and the local instant its lease was last set from. */
  private static final class Entry {
    final ItemStore.Item item;
    long leasedFromNanos;

    Entry(ItemStore.Item item, long leasedFromNanos) {
      this.item = item;
      this.leasedFromNanos = leasedFromNanos;
    }
  }

  private final int capacity;
  private final long leaseNanos;
  private final TimeSource time;

  /** The buffered items by lease token, in the order they were claimed. */
  private final Map<String, Entry> entries = new LinkedHashMap<>();

  /** Items asked for by claims not yet answered. */
  private int claiming;

  /**
   * The items taken out of the buffer since the last {@link #forgetTaken}, their tokens by key,
   * oldest first, at most {@code capacity}: see {@link #holdings}.
   */
  private final Map<String, String> taken = new LinkedHashMap<>();

  LeasedAhead(int capacity, long leaseMillis, TimeSource time) {
    if (capacity < 0) {
      throw new IllegalArgumentException("capacity must be >= 0, got " + capacity);
    }
    this.capacity = capacity;
    this.leaseNanos = leaseMillis * 1_000_000L;
    this.time = time;
  }

  /**
   * How many items a worker keeps leased ahead for {@code seconds} of fetching at {@code
   * ratePerSecond} divided by {@code divisor} (the divided rate it paces at while PostgreSQL is
   * away), at most {@code most}.
   */
  static int capacityFor(double seconds, double ratePerSecond, int divisor, int most) {
    double items = Math.ceil(seconds * ratePerSecond / divisor);
    return (int) Math.min(most, Math.max(0, items));
  }

  int capacity() {
    return capacity;
  }

  /**
   * How much of a buffered item's lease may be left for the heartbeat to leave it unwritten, with
   * leases of {@code leaseMillis}, an outage buffer of {@code outageBufferMillis} and a beat every
   * {@code beatMillis}: an item is handed out while three quarters of its lease are not spent, and
   * the buffer lasts {@code outageBufferMillis} at the divided rate. A lease left until it has less
   * than this left, if PostgreSQL goes away just before the beat that would write it, still hands
   * its item out for the whole buffer's length (a beat to spare), as one written every beat would:
   * three quarters of a lease, less the buffer and two beats, may go by unwritten. With leases
   * short beside the buffer nothing may: the answer is then the whole lease, and every one is
   * written.
   */
  static long spareAboveMillis(long leaseMillis, long outageBufferMillis, long beatMillis) {
    long unwritten = Math.max(0, leaseMillis * 3 / 4 - outageBufferMillis - 2 * beatMillis);
    return leaseMillis - unwritten;
  }

  /**
   * How many items a thread that needs one now is to claim: its own, and up to {@link
   * #MOST_AHEAD_PER_CLAIM} more while the buffer, with the claims not yet answered, holds fewer
   * than {@code capacity}; those more are counted as being claimed until {@link #claimed} or {@link
   * #abandoned} answers them. Once the buffer is full, a claim replaces the item its thread takes.
   */
  synchronized int toClaim() {
    int room = capacity - entries.size() - claiming;
    int more = Math.max(0, Math.min(MOST_AHEAD_PER_CLAIM, room));
    claiming += more;
    return 1 + more;
  }

  /**
   * A claim of {@code asked} items ({@link #toClaim}), sent at {@code sentNanos}, leased {@code
   * items}; they join the buffer.
   */
  synchronized void claimed(List<ItemStore.Item> items, int asked, long sentNanos) {
    claiming -= asked - 1;
    for (ItemStore.Item item : items) {
      entries.put(item.token(), new Entry(item, sentNanos));
    }
  }

  /** A claim of {@code asked} items ({@link #toClaim}) that will not be made again. */
  synchronized void abandoned(int asked) {
    claiming -= asked - 1;
  }

  /**
   * The first buffered item whose lease has at least a quarter of its length left, taken out of the
   * buffer; empty if there is none. The others stay, in their order.
   */
  Optional<ItemStore.Item> take() {
    return takeLeast(item -> true, item -> 0, item -> {});
  }

  /**
   * As {@link #take()}, but of the items {@code may} allows, the first of those {@code load} ranks
   * lowest; {@code taken} hears of it before another thread may take, so that a load it counts is
   * up to date for the next.
   */
  synchronized Optional<ItemStore.Item> takeLeast(
      Predicate<ItemStore.Item> may,
      ToIntFunction<ItemStore.Item> load,
      Consumer<ItemStore.Item> taken) {
    long now = time.nanoTime();
    Entry least = null;
    int leastLoad = Integer.MAX_VALUE;
    for (Entry e : entries.values()) {
      if (now - e.leasedFromNanos < leaseNanos - leaseNanos / 4 && may.test(e.item)) {
        int l = load.applyAsInt(e.item);
        if (l < leastLoad) {
          least = e;
          leastLoad = l;
        }
        if (l == 0) {
          break;
        }
      }
    }
    if (least == null) {
      return Optional.empty();
    }
    entries.remove(least.item.token());
    this.taken.remove(least.item.key());
    this.taken.put(least.item.key(), least.item.token());
    if (this.taken.size() > capacity) {
      this.taken.remove(this.taken.keySet().iterator().next());
    }
    taken.accept(least.item);
    return Optional.of(least.item);
  }

  /**
   * How many items a fill ({@link #filled}) may lease ahead now: the room left, at most {@code
   * most}.
   */
  synchronized int room(int most) {
    return Math.max(0, Math.min(most, capacity - entries.size() - claiming));
  }

  /** Items leased ahead by a statement sent at {@code sentNanos} join the buffer. */
  synchronized void filled(List<ItemStore.Item> items, long sentNanos) {
    for (ItemStore.Item item : items) {
      entries.put(item.token(), new Entry(item, sentNanos));
    }
  }

  /**
   * A claim leased the buffered item of {@code key} again, under a token of its own: takes it out
   * of the buffer. False if it was no longer there (a thread took it to fetch meanwhile, or it was
   * dropped): the claim's thread must not fetch it.
   */
  synchronized boolean claimedAgain(String key) {
    Iterator<Entry> it = entries.values().iterator();
    while (it.hasNext()) {
      if (it.next().item.key().equals(key)) {
        it.remove();
        return true;
      }
    }
    return false;
  }

  /** Takes out of the buffer every item {@code drop} says, to give them back. */
  synchronized List<ItemStore.Item> drop(Predicate<ItemStore.Item> drop) {
    List<ItemStore.Item> out = new ArrayList<>();
    Iterator<Entry> it = entries.values().iterator();
    while (it.hasNext()) {
      Entry e = it.next();
      if (drop.test(e.item)) {
        it.remove();
        out.add(e.item);
      }
    }
    return out;
  }

  synchronized boolean isEmpty() {
    return entries.isEmpty();
  }

  synchronized int size() {
    return entries.size();
  }

  /** The buffered items, for the heartbeat to extend their leases. */
  synchronized List<ItemStore.Item> items() {
    List<ItemStore.Item> out = new ArrayList<>(entries.size());
    entries.values().forEach(e -> out.add(e.item));
    return out;
  }

  /**
   * The heartbeat's extension, sent at {@code sentNanos} for the tokens {@code asked}, answered
   * {@code extended}: those leases run from then; a buffered item asked for and not extended is no
   * longer this worker's, and is dropped.
   */
  synchronized void extended(Collection<String> asked, Set<String> extended, long sentNanos) {
    for (String token : asked) {
      Entry e = entries.get(token);
      if (e == null) {
        continue;
      }
      if (extended.contains(token)) {
        e.leasedFromNanos = Math.max(e.leasedFromNanos, sentNanos);
      } else {
        entries.remove(token);
      }
    }
  }

  /**
   * The items this worker holds by the buffer's tokens, for a settle of the leases of claims that
   * lost their answers ({@link FrontierStore#settleLostLeases}), put into {@code into} by key:
   * every one taken out of the buffer since {@link #forgetTaken} (to be fetched while PostgreSQL
   * was away), then every buffered one, read in one step, so that an item a thread takes meanwhile
   * is seen as one or the other.
   */
  synchronized void holdings(Map<String, FrontierStore.Holding> into) {
    taken.forEach((key, token) -> into.put(key, new FrontierStore.Holding(token, false)));
    entries
        .values()
        .forEach(e -> into.put(e.item.key(), new FrontierStore.Holding(e.item.token(), true)));
  }

  /** A settle has seen the items taken so far: {@link #holdings} need not name them again. */
  synchronized void forgetTaken() {
    taken.clear();
  }

  /** Takes every buffered item out, to give them back. */
  synchronized List<ItemStore.Item> drain() {
    List<ItemStore.Item> out = new ArrayList<>();
    entries.values().forEach(e -> out.add(e.item));
    entries.clear();
    return out;
  }
}
