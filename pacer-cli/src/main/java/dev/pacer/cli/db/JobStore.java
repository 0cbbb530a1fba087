package dev.pacer.cli.db;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.OptionalDouble;
import java.util.OptionalInt;

/** Jobs: a named URL list bound to one destination, with its latest run's ceiling. */
public final class JobStore {

  /**
   * How long one statement of an enqueue may take to answer. The connection's own bound (10 s) is
   * for statements on one row; moving a list into the job is one statement over all of it, and a
   * million URLs take tens of seconds on a busy machine.
   */
  static final Duration ENQUEUE_READ_TIMEOUT = Duration.ofMinutes(30);

  private final StoreConnection connection;
  private final ItemStore items;

  JobStore(StoreConnection connection, ItemStore items) {
    this.connection = connection;
    this.items = items;
  }

  /** The destination a job was created for, if the job exists. */
  public Optional<String> jobDestination(String job) throws SQLException {
    return connection.call(
        c -> {
          try (PreparedStatement s =
              c.prepareStatement("SELECT destination FROM pacer_job WHERE name = ?")) {
            s.setString(1, job);
            try (ResultSet r = s.executeQuery()) {
              return r.next() ? Optional.of(r.getString(1)) : Optional.<String>empty();
            }
          }
        });
  }

  /**
   * Adds the URLs to the job, creating the job if needed; URLs already in it (or twice in {@code
   * urls}) are skipped. Idempotent under {@code key}: run again with the same key (a retry whose
   * first answer was lost with the connection) it adds nothing and answers what the first run
   * added.
   *
   * <p>The URLs stream through {@code COPY} into a temporary table, and one {@code INSERT … SELECT
   * … ON CONFLICT} moves them into the job in input order, all in one transaction: memory stays
   * bounded by the copy buffer however long the list, and a failure adds nothing. {@code urls} is
   * iterated once per attempt, from the start: a list, or a file read again.
   *
   * @param key names this enqueue (a run's id), for the whole job's life
   * @return how many were new
   */
  public int enqueue(
      String key, String job, String destination, double ceiling, Iterable<String> urls)
      throws SQLException {
    return connection.call(
        c -> {
          int readTimeout = c.getNetworkTimeout();
          c.setNetworkTimeout(Runnable::run, (int) ENQUEUE_READ_TIMEOUT.toMillis());
          c.setAutoCommit(false);
          try {
            StoreConnection.commitDurably(c);
            OptionalInt earlier = enqueuedBefore(c, job, key);
            if (earlier.isPresent()) {
              c.commit();
              return earlier.getAsInt();
            }
            try (PreparedStatement s =
                c.prepareStatement(
                    "INSERT INTO pacer_job (name, destination, ceiling) VALUES (?, ?, ?)"
                        + " ON CONFLICT (name) DO UPDATE SET ceiling = excluded.ceiling")) {
              s.setString(1, job);
              s.setString(2, destination);
              s.setDouble(3, ceiling);
              s.executeUpdate();
            }
            int added = copyIntoJob(c, job, urls);
            try (PreparedStatement s =
                c.prepareStatement(
                    "UPDATE pacer_job SET enqueue_key = ?, enqueued = ? WHERE name = ?")) {
              s.setString(1, key);
              s.setInt(2, added);
              s.setString(3, job);
              s.executeUpdate();
            }
            c.commit();
            if (added > 0) {
              refreshItemStatistics(c);
            }
            return added;
          } catch (SQLException | RuntimeException e) {
            c.rollback();
            throw e;
          } finally {
            c.setAutoCommit(true);
            c.setNetworkTimeout(Runnable::run, readTimeout);
          }
        });
  }

  /**
   * Refreshes the planner's statistics of the items once an enqueue has added some, so that the
   * claims of the run that follows are planned for the job's size rather than for the table as it
   * was before: planned for a table without the job, a claim's record walks every open item of it
   * where it would look up each outcome's item by its key, and autovacuum analyses the table only a
   * minute or so later. Best effort: without it (a role that does not own the table is refused) the
   * claims are slower, never wrong.
   */
  private static void refreshItemStatistics(Connection c) {
    try (Statement s = c.createStatement()) {
      s.execute("ANALYZE pacer_item");
      c.commit();
    } catch (SQLException e) {
      try {
        c.rollback();
      } catch (SQLException ignored) {
        // The connection is lost: the next statement on it finds that out.
      }
    }
  }

  /** How many the enqueue named {@code key} added, if it was done before. */
  private static OptionalInt enqueuedBefore(Connection c, String job, String key)
      throws SQLException {
    try (PreparedStatement s =
        c.prepareStatement("SELECT enqueued FROM pacer_job WHERE name = ? AND enqueue_key = ?")) {
      s.setString(1, job);
      s.setString(2, key);
      try (ResultSet r = s.executeQuery()) {
        return r.next() ? OptionalInt.of(r.getInt(1)) : OptionalInt.empty();
      }
    }
  }

  /** Copies the URLs into a temporary table and moves them into the job; returns how many new. */
  private static int copyIntoJob(Connection c, String job, Iterable<String> urls)
      throws SQLException {
    try (Statement s = c.createStatement()) {
      s.execute(
          "CREATE TEMPORARY TABLE pacer_enqueue (ord bigserial, url_key text NOT NULL,"
              + " url text NOT NULL, host text NOT NULL) ON COMMIT DROP");
    }
    UrlCopy.copy(c, "COPY pacer_enqueue (url_key, url, host) FROM STDIN", urls);
    // An item enqueued before items knew their host gets it now; only new rows are counted
    // as added (xmax is 0 on a row this statement inserted, not on one it updated). A URL
    // given twice is moved once, at its first place: an upsert may touch a row only once.
    try (PreparedStatement s =
        c.prepareStatement(
            "WITH moved AS (INSERT INTO pacer_item AS i (job, url_key, url, host)"
                + " SELECT ?, url_key, url, host FROM (SELECT DISTINCT ON (url_key) *"
                + " FROM pacer_enqueue ORDER BY url_key, ord) first ORDER BY ord"
                + " ON CONFLICT (job, url_key) DO UPDATE SET host = excluded.host"
                + " WHERE i.host IS NULL RETURNING i.xmax = 0 AS inserted)"
                + " SELECT count(*) FILTER (WHERE inserted) FROM moved")) {
      s.setString(1, job);
      try (ResultSet r = s.executeQuery()) {
        r.next();
        return r.getInt(1);
      }
    }
  }

  /** A job; {@code ceiling} is its latest run's fleet-wide ceiling, if one was recorded. */
  public record JobRow(
      String name, String destination, OptionalDouble ceiling, ItemStore.Counts counts) {}

  public List<JobRow> jobs(String onlyJob) throws SQLException {
    record Named(String name, String destination, OptionalDouble ceiling) {}
    List<Named> named =
        connection.call(
            c -> {
              try (PreparedStatement s =
                  c.prepareStatement(
                      "SELECT name, destination, ceiling FROM pacer_job WHERE (?::text IS NULL OR"
                          + " name = ?) ORDER BY created_at, name")) {
                s.setString(1, onlyJob);
                s.setString(2, onlyJob);
                List<Named> out = new ArrayList<>();
                try (ResultSet r = s.executeQuery()) {
                  while (r.next()) {
                    double ceiling = r.getDouble(3);
                    out.add(
                        new Named(
                            r.getString(1),
                            r.getString(2),
                            r.wasNull() ? OptionalDouble.empty() : OptionalDouble.of(ceiling)));
                  }
                }
                return out;
              }
            });
    List<JobRow> rows = new ArrayList<>();
    for (Named j : named) {
      rows.add(new JobRow(j.name(), j.destination(), j.ceiling(), items.counts(j.name())));
    }
    return rows;
  }
}
