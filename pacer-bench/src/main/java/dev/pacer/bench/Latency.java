package dev.pacer.bench;

import dev.pacer.postgres.PostgresCursor;
import dev.pacer.postgres.PostgresCursorConfig;
import dev.pacer.spi.Reservation;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.postgresql.PGStatement;

/**
 * Round-trip latency from one thread, all on one connection: JDBC {@code SELECT 1} (prepared
 * server-side) against one Pacer reservation, the cursor being handed that same connection (and so
 * setting its session up as it always does). A third series, the smallest write there is on the
 * same table (a bare upsert of one row, no pacing arithmetic), tells the cost of any write
 * transaction apart from the cost of Pacer's statement. Each of {@link StatementSteps}' earlier
 * statements is timed raw beside them. All alternate call by call, so that a change in the
 * machine's state during the measurement hits all alike.
 */
final class Latency {

  /** Microsecond percentiles of both. */
  record Result(
      double select1P50,
      double select1P99,
      double reserveP50,
      double reserveP99,
      double bareUpsertP50,
      double bareUpsertP99,
      List<Step> steps,
      int samplesEach) {

    public Result {
      steps = List.copyOf(steps);
    }

    double ratio() {
      return reserveP50 / select1P50;
    }

    /** Reservation p50 ÷ the bare upsert's p50: what Pacer's statement costs beyond any write. */
    double bareUpsertRatio() {
      return reserveP50 / bareUpsertP50;
    }
  }

  /** One of {@link StatementSteps}' statements, timed raw beside the others. */
  record Step(String label, double p50, double p99) {}

  /**
   * The smallest write on Pacer's table, the latency floor of any reservation: one upsert of one
   * row, nothing computed, run on the cursor's own connection and so with its session settings.
   */
  static final String BARE_UPSERT =
      "INSERT INTO "
          + Contender.PACER_TABLE
          + " AS c (name, next_at, updated_at)"
          + " VALUES (?, clock_timestamp(), clock_timestamp())"
          + " ON CONFLICT (name) DO UPDATE SET next_at = EXCLUDED.next_at,"
          + " updated_at = EXCLUDED.updated_at RETURNING c.next_at";

  private Latency() {}

  static Result measure(Database.Target db, int samples) throws SQLException {
    List<StatementSteps.Step> steps = StatementSteps.all();
    Samples taken = new Samples(samples, steps.size());
    PreparedStatement[] raw = new PreparedStatement[steps.size()];
    try (Connection c = db.connect();
        PostgresCursor cursor =
            new PostgresCursor(
                PostgresCursorConfig.forDataSource(new SingleConnectionDataSource(c)).build())) {
      // The cursor sets the session up (autocommit, timeouts, synchronous_commit) on first use.
      reserve(cursor, "bench-latency");
      try (PreparedStatement ping = c.prepareStatement("SELECT 1");
          PreparedStatement bare = c.prepareStatement(BARE_UPSERT)) {
        ping.unwrap(PGStatement.class).setPrepareThreshold(1);
        bare.unwrap(PGStatement.class).setPrepareThreshold(1);
        bare.setString(1, "bench-latency-bare-upsert");
        prepareSteps(c, cursor, steps, raw);
        Calls calls = new Calls(ping, cursor, "bench-latency", bare, raw);
        for (int i = 0; i < Math.max(2_000, samples); i++) {
          calls.untimed();
        }
        for (int i = 0; i < samples; i++) {
          calls.timed(taken, i);
        }
      } finally {
        for (PreparedStatement step : raw) {
          if (step != null) {
            step.close();
          }
        }
      }
    }
    return taken.result(steps);
  }

  /** Each step's statement prepared on {@code c}, its row made as a first reservation makes it. */
  private static void prepareSteps(
      Connection c, PostgresCursor cursor, List<StatementSteps.Step> steps, PreparedStatement[] raw)
      throws SQLException {
    for (int j = 0; j < raw.length; j++) {
      // Checked for a lockout, as a first reservation checks a row it makes.
      reserve(cursor, "bench-latency-step-" + j);
      raw[j] = c.prepareStatement(steps.get(j).sql());
      raw[j].unwrap(PGStatement.class).setPrepareThreshold(1);
      steps.get(j).binder().bind(raw[j], "bench-latency-step-" + j);
    }
  }

  /** One call of each kind, in the same order every time. */
  private record Calls(
      PreparedStatement select1,
      PostgresCursor cursor,
      String key,
      PreparedStatement bare,
      PreparedStatement[] raw) {

    void untimed() throws SQLException {
      ping(select1);
      reserve(cursor, key);
      ping(bare);
      for (PreparedStatement step : raw) {
        answer(step);
      }
    }

    /**
     * Interleaved call by call: the machine's state (which core the backend and this thread run on,
     * other processes' load) changes over milliseconds, and all of them see the same.
     */
    void timed(Samples into, int i) throws SQLException {
      long t0 = System.nanoTime();
      ping(select1);
      long t1 = System.nanoTime();
      reserve(cursor, key);
      long t2 = System.nanoTime();
      ping(bare);
      long t3 = System.nanoTime();
      into.select1[i] = t1 - t0;
      into.reserve[i] = t2 - t1;
      into.upsert[i] = t3 - t2;
      for (int j = 0; j < raw.length; j++) {
        long s0 = System.nanoTime();
        answer(raw[j]);
        into.steps[j][i] = System.nanoTime() - s0;
      }
    }
  }

  /** Every timed call's nanoseconds, by kind. */
  private static final class Samples {
    final long[] select1;
    final long[] reserve;
    final long[] upsert;
    final long[][] steps;

    Samples(int samples, int stepCount) {
      select1 = new long[samples];
      reserve = new long[samples];
      upsert = new long[samples];
      steps = new long[stepCount][samples];
    }

    Result result(List<StatementSteps.Step> labels) {
      List<Step> stepResults = new ArrayList<>();
      for (int j = 0; j < steps.length; j++) {
        Arrays.sort(steps[j]);
        stepResults.add(
            new Step(
                labels.get(j).label(),
                percentileMicros(steps[j], 0.50),
                percentileMicros(steps[j], 0.99)));
      }
      Arrays.sort(select1);
      Arrays.sort(reserve);
      Arrays.sort(upsert);
      return new Result(
          percentileMicros(select1, 0.50),
          percentileMicros(select1, 0.99),
          percentileMicros(reserve, 0.50),
          percentileMicros(reserve, 0.99),
          percentileMicros(upsert, 0.50),
          percentileMicros(upsert, 0.99),
          stepResults,
          select1.length);
    }
  }

  private static void ping(PreparedStatement statement) throws SQLException {
    try (ResultSet r = statement.executeQuery()) {
      r.next();
    }
  }

  /** Runs a reservation statement, which must answer a granted turn. */
  private static void answer(PreparedStatement statement) throws SQLException {
    try (ResultSet r = statement.executeQuery()) {
      if (!r.next() || r.getObject(1) == null) {
        throw new IllegalStateException("a statement of StatementSteps granted no turn");
      }
    }
  }

  private static void reserve(PostgresCursor cursor, String key) {
    Reservation turn = cursor.reserve(key, Duration.ZERO);
    if (!turn.isGranted()) {
      throw new IllegalStateException("reservation was " + turn);
    }
  }

  /** Nearest-rank percentile of sorted nanoseconds, in microseconds. */
  static double percentileMicros(long[] sortedNanos, double p) {
    int rank = (int) Math.ceil(p * sortedNanos.length);
    return sortedNanos[Math.max(0, rank - 1)] / 1_000.0;
  }
}
