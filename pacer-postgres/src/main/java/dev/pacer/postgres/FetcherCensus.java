package dev.pacer.postgres;

import dev.pacer.TimeSource;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.OptionalInt;
import java.util.Set;
import java.util.UUID;
import org.postgresql.PGStatement;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * How many processes take turns of each destination, for a degraded limiter's divisor ({@link
 * dev.pacer.spi.Cursor#fetchingProcesses}): the cursor's share of a small table beside the cursors,
 * in which each cursor, as one process, stamps the destinations it reserved turns of.
 *
 * <p>At most once a {@link #PERIOD}, before a reservation and on its connection, one statement
 * stamps every destination reserved since the last census and reads back, for each, how many
 * processes stamped it within {@link #WINDOW} (see {@code CursorSql}'s census): one extra round
 * trip per process per period, however many reservations, and nothing added to the reservation's
 * own statement. A census stamps at most {@link #MOST_KEYS_PER_CENSUS} destinations, so that no
 * reservation waits long behind it; a process reserving more per period takes a census more often,
 * and past about {@code WINDOW ÷ (PERIOD ÷ 8)} × that many, some destinations go uncounted. A
 * process that stopped taking turns of a destination a window ago no longer counts there. The count
 * of a destination is kept for a window after its last census, as long as a process taking a turn
 * every few seconds may go without one.
 *
 * <p>A census that fails costs only the census: it is logged once, tried again a period later, and
 * the reservation that follows goes on (and, if the connection is gone, finds out itself). A
 * missing table is made when the cursor opens a connection, and by the census if it goes missing
 * later, never as a condition of the cursor's: a role that may not create it still reserves turns,
 * and only goes uncounted. Its statement is never prepared on the server, so that a transaction
 * pooler in front meets no named statement of it.
 *
 * <p>Not thread-safe but for {@link #processes}: {@link #note} and {@link #takeIfDue} run with the
 * cursor's connection held.
 */
final class FetcherCensus {

  private static final Logger log = LoggerFactory.getLogger(FetcherCensus.class);

  /** How often a process stamps the destinations it took turns of. */
  static final Duration PERIOD = Duration.ofSeconds(2);

  /** How long a stamp counts: several periods, so that one census late or lost drops no one. */
  static final Duration WINDOW = Duration.ofSeconds(10);

  /**
   * The most destinations one census stamps: its statement's time grows with them, and every
   * reservation of the process waits behind it. Those left over go first in a census due an eighth
   * of a period later.
   */
  static final int MOST_KEYS_PER_CENSUS = 64;

  /** A table DDL, run on the connection, when the census finds its table missing. */
  interface TableMaker {
    void create(Connection c) throws SQLException;
  }

  private record Count(int processes, long takenAt) {}

  private final String statementSql;
  private final TimeSource time;
  private final long periodNanos;
  private final long windowNanos;
  private final TableMaker tableMaker;
  private final String process = UUID.randomUUID().toString();
  private final Set<String> noted = new LinkedHashSet<>();
  private volatile Map<String, Count> counts = Map.of();
  private long nextAt;
  private boolean taken;
  private boolean failing;
  private long censuses;

  FetcherCensus(
      String statementSql,
      TimeSource time,
      Duration period,
      Duration window,
      TableMaker tableMaker) {
    this.statementSql = statementSql;
    this.time = time;
    this.periodNanos = period.toNanos();
    this.windowNanos = window.toNanos();
    this.tableMaker = tableMaker;
  }

  /** A reservation of {@code key} is about to be made. */
  void note(String key) {
    noted.add(key);
  }

  /** Takes a census of the keys noted since the last, if a period has passed since it. */
  void takeIfDue(Connection c) {
    long now = time.nanoTime();
    if (noted.isEmpty() || (taken && now - nextAt < 0)) {
      return;
    }
    taken = true;
    censuses++;
    String[] keys = noted.stream().limit(MOST_KEYS_PER_CENSUS).toArray(String[]::new);
    for (String key : keys) {
      noted.remove(key);
    }
    nextAt = now + (noted.isEmpty() ? periodNanos : periodNanos / 8);
    Map<String, Integer> read;
    try {
      read = readCreatingTable(c, keys);
    } catch (SQLException e) {
      failed(e);
      return;
    }
    if (failing) {
      failing = false;
      log.info("Counting the processes taking turns again");
    }
    Map<String, Count> next = new HashMap<>();
    counts.forEach(
        (key, count) -> {
          if (now - count.takenAt() < windowNanos) {
            next.put(key, count);
          }
        });
    read.forEach((key, processes) -> next.put(key, new Count(processes, now)));
    counts = Map.copyOf(next);
  }

  /**
   * Makes the table, if it is missing, on a connection just opened, so that the first census, due
   * before the first reservation, does not hold that reservation behind DDL. A failure is the
   * census's alone: logged once, as a census's, and the connection goes on.
   */
  void makeTable(Connection c) {
    try {
      tableMaker.create(c);
    } catch (SQLException e) {
      failed(e);
    }
  }

  private void failed(SQLException e) {
    if (!failing) {
      failing = true;
      log.warn(
          "Could not count the processes taking turns (a degraded process divides by"
              + " maxFetchingProcesses alone until it can): {} [SQLState {}]",
          e.getMessage(),
          e.getSQLState());
    }
  }

  /** The processes the last census within a window counted for {@code key}; empty if none. */
  OptionalInt processes(String key) {
    Count count = counts.get(key);
    return count == null || time.nanoTime() - count.takenAt() >= windowNanos
        ? OptionalInt.empty()
        : OptionalInt.of(count.processes());
  }

  /** Censuses taken so far, answered or not. */
  long censuses() {
    return censuses;
  }

  private Map<String, Integer> readCreatingTable(Connection c, String[] keys) throws SQLException {
    try {
      return read(c, keys);
    } catch (SQLException e) {
      if (!"42P01".equals(e.getSQLState())) {
        throw e;
      }
      tableMaker.create(c);
      return read(c, keys);
    }
  }

  private Map<String, Integer> read(Connection c, String[] keys) throws SQLException {
    try (PreparedStatement s = c.prepareStatement(statementSql)) {
      s.unwrap(PGStatement.class).setPrepareThreshold(0);
      s.setString(1, process);
      s.setLong(2, windowNanos / 1000);
      s.setObject(3, keys);
      Map<String, Integer> read = new HashMap<>();
      try (ResultSet rows = s.executeQuery()) {
        while (rows.next()) {
          read.put(rows.getString(1), Math.max(1, rows.getInt(2)));
        }
      }
      return read;
    }
  }
}
