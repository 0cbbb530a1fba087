package dev.pacer.cli.db;

import dev.pacer.TimeSource;
import dev.pacer.cli.db.FrontierStore.Claim;
import dev.pacer.cli.db.FrontierStore.HostCeiling;
import dev.pacer.cli.db.RobotsStore.Settlement;
import dev.pacer.cli.db.RobotsStore.Work;
import dev.pacer.postgres.DatabaseClock;
import dev.pacer.spi.Cursor;
import dev.pacer.spi.Reservation;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;

/**
 * Per-host mode's turns answered as a cursor's reservations, for the turn contract: a destination
 * is a host, a reservation is the per-host claim ({@link FrontierStore#claim}) of one of its items,
 * and a pause is robots.txt's {@code Crawl-delay} push of the host's cursor row ({@link
 * RobotsStore#settle}). Both work on the host's row of Pacer's table, where every process of the
 * fleet takes the host's turns.
 *
 * <p>Each thread claims under a job of its own, which holds one item of each host it names: so
 * concurrent callers meet on the host's cursor row, as two jobs' workers or a library client and a
 * worker meet there, and not on one job's frontier row, which a claim locks and the others pass
 * over. The item is leased for no time, so that every claim finds it claimable again. The interval
 * is the caller's, written on the job's frontier row before the claim, as a plan writes a host's
 * ceiling there.
 *
 * <ul>
 *   <li>{@link #reserve}: the claim with a horizon no turn of a test reaches ({@link #UNBOUNDED}),
 *       granted its turn as a fetch thread is, through the database clock;
 *   <li>{@link #tryReserve}: the claim with {@code maxWait} for its horizon; a host it passes over
 *       for its turn being beyond the horizon, or whose turn it refuses, is refused;
 *   <li>{@link #pause}: a robots.txt settled with a {@code Crawl-delay} of the pause.
 * </ul>
 *
 * A lost cursor's restart ({@code notBefore}), clearing and the holds are not the claim's to answer
 * as a cursor does: the claim restarts a lost cursor where its job last saw the turns end.
 */
final class FrontierTurns implements Cursor, AutoCloseable {

  /** The horizon of an unconditional reservation: beyond every turn a test queues. */
  static final Duration UNBOUNDED = Duration.ofDays(1);

  private final WorkState store;
  private final StoreConnection claims;
  private final FrontierStore frontier;
  private final ThreadLocal<Map<String, Job>> jobs = ThreadLocal.withInitial(HashMap::new);

  /** A thread's job of one host, and the interval its frontier row holds. */
  private static final class Job {
    final String name = "turns-" + UUID.randomUUID();
    long intervalMicros = -1;
  }

  /**
   * Per-host turns on the database at {@code url}.
   *
   * @param url the database's JDBC URL
   * @param time the clock the claims are timed on, {@link System#nanoTime()}'s
   * @param callers the most threads that claim at once
   */
  FrontierTurns(String url, TimeSource time, int callers) throws SQLException {
    Database database = new Database(url);
    store = new WorkState(database);
    store.ensureSchema();
    claims = new StoreConnection(database, callers, false);
    frontier = new FrontierStore(claims, database.cursorPlace(), new DatabaseClock(), time);
  }

  @Override
  public Reservation reserve(String name, Duration interval, Duration notBefore) {
    requireNoNotBefore(notBefore);
    Claim claim = claim(name, interval, UNBOUNDED);
    if (claim instanceof Claim.Claimed turn) {
      return granted(turn);
    }
    throw new IllegalStateException("no turn of " + name + " within a day: " + claim);
  }

  @Override
  public Reservation tryReserve(
      String name, Duration interval, Duration notBefore, Duration maxWait) {
    requireNoNotBefore(notBefore);
    Claim claim = claim(name, interval, maxWait);
    if (claim instanceof Claim.Claimed turn) {
      return granted(turn);
    }
    if (claim instanceof Claim.Idle || claim instanceof Claim.Refused) {
      return Reservation.refused();
    }
    throw new IllegalStateException("neither a turn nor a refusal of " + name + ": " + claim);
  }

  /** The host's cursor row pushed to {@code delay} from now, as a {@code Crawl-delay} pushes it. */
  @Override
  public boolean pause(String name, Duration delay) {
    Job job = job(name);
    Work work = new Work(job.name, name, rate(delay), 0, Optional.empty(), Optional.empty());
    try {
      store.robots().settle(work, Optional.empty(), new Settlement("", url -> false, "", delay));
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
    // The settlement widened the frontier row's interval to the delay.
    job.intervalMicros = -1;
    return true;
  }

  @Override
  public void clear(String name) {
    throw new UnsupportedOperationException("the claim restarts a lost cursor at its job's copy");
  }

  private static void requireNoNotBefore(Duration notBefore) {
    if (!notBefore.isZero()) {
      throw new UnsupportedOperationException("the claim restarts a lost cursor at its job's copy");
    }
  }

  /**
   * A claim's turn, counted from the instant its answer came back, which is the last reading of the
   * claims' clock on this thread.
   */
  private static Reservation granted(Claim.Claimed turn) {
    return Reservation.grantedNanos(turn.turnIn().toNanos());
  }

  private Claim claim(String host, Duration interval, Duration horizon) {
    Job job = job(host);
    long micros = interval.toNanos() / 1000;
    try {
      if (job.intervalMicros != micros) {
        claims.call(
            c -> {
              try (PreparedStatement s =
                  c.prepareStatement(
                      "UPDATE pacer_frontier SET interval_us = ?, rate = ?"
                          + " WHERE job = ? AND host = ?")) {
                s.setLong(1, micros);
                s.setDouble(2, rate(interval));
                s.setString(3, job.name);
                s.setString(4, host);
                return s.executeUpdate();
              }
            });
        job.intervalMicros = micros;
      }
      return frontier.claim(job.name, "turns", job.name, java.util.List.of(), true, 0, horizon);
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  /** This thread's job of {@code host}, made with one item of the host at its first use. */
  private Job job(String host) {
    Job job = jobs.get().get(host);
    if (job != null) {
      return job;
    }
    Job made = new Job();
    try {
      store.jobs().enqueue(made.name, made.name, "per-host", 1, List.of("http://" + host + "/"));
      store.frontier().plan(made.name, Map.of(host, new HostCeiling(1, 1)));
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
    jobs.get().put(host, made);
    return made;
  }

  private static double rate(Duration interval) {
    return interval.isZero() ? 1e6 : 1e9 / interval.toNanos();
  }

  @Override
  public void close() {
    claims.close();
    store.close();
  }

  @Override
  public String toString() {
    return "per-host claims and robots.txt's push, as a cursor";
  }
}
