package dev.pacer.postgres;

import dev.pacer.spi.Reservation;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The child JVM of {@link InterruptedRoundTripTest}, run on a JDK with virtual threads (this class
 * is compiled for 17, so it starts one by reflection). A virtual thread reserves on a real {@link
 * PostgresCursor} while another connection holds the cursor's row locked, so that its reservation
 * waits in the round trip; it is interrupted there, then the lock is released. Reports on one line
 * what the interrupted reservation answered, whether the thread kept its interrupt, and what the
 * cursor looks like afterwards: latched or not, connections opened, failures, and the next
 * reservation of an uninterrupted thread.
 *
 * <p>Arguments: {@code jdbcUrl destination}.
 */
public final class InterruptedRoundTripWorker {

  private static final Duration GAP = Duration.ofMillis(10);

  public static void main(String[] args) throws Exception {
    String jdbcUrl = args[0];
    String name = args[1];
    // Long enough that the lock wait below never meets lock_timeout on a busy host.
    PostgresCursor cursor =
        new PostgresCursor(
            PostgresCursorConfig.forUrl(jdbcUrl).operationTimeout(Duration.ofSeconds(5)).build());
    if (!cursor.connect(Duration.ofSeconds(30))) {
      throw new IllegalStateException("could not connect to the test database");
    }
    if (!cursor.reserve(name, GAP, Duration.ZERO).isGranted()) {
      throw new IllegalStateException("the first reservation was not granted");
    }
    long attemptsBefore = cursor.connectionAttempts();

    AtomicReference<Reservation> interruptedAnswer = new AtomicReference<>();
    AtomicBoolean keptInterrupt = new AtomicBoolean();
    WorkerThreads threads = new WorkerThreads();
    Thread reserving;
    try (Connection locker = DriverManager.getConnection(jdbcUrl)) {
      locker.setAutoCommit(false);
      try (PreparedStatement lock =
          locker.prepareStatement("SELECT 1 FROM pacer_cursor WHERE name = ? FOR UPDATE")) {
        lock.setString(1, name);
        try (ResultSet row = lock.executeQuery()) {
          if (!row.next()) {
            throw new IllegalStateException("no cursor row for " + name);
          }
        }
      }
      reserving =
          threads.startVirtual(
              () -> {
                interruptedAnswer.set(cursor.reserve(name, GAP, Duration.ZERO));
                keptInterrupt.set(Thread.currentThread().isInterrupted());
              });
      // The statement is on the server, waiting for the row, and the thread waits for its answer.
      while (!waitingForLock(locker) || !parked(reserving)) {
        Thread.sleep(1);
      }
      reserving.interrupt();
      // A read the interrupt closed fails at once, and its thread goes on to answer: it is given
      // the time to, before the statement may go on; a thread that waits on unharmed is still
      // parked when it is over.
      reserving.join(200);
      locker.rollback();
    }
    reserving.join(10_000);
    Reservation next = cursor.reserve(name, GAP, Duration.ZERO);
    System.out.println(
        "RESULT interrupted="
            + describe(interruptedAnswer.get())
            + " keptInterrupt="
            + keptInterrupt.get()
            + " alive="
            + reserving.isAlive()
            + " latched="
            + cursor.isLatched()
            + " newConnections="
            + (cursor.connectionAttempts() - attemptsBefore)
            + " failures="
            + cursor.failureCount()
            + " next="
            + describe(next));
    cursor.close();
    threads.exitIfAnyDied();
  }

  private static String describe(Reservation r) {
    if (r == null) {
      return "none";
    }
    if (r.isGranted()) {
      return r.isHandOver() ? "handOver" : "shared";
    }
    return r.isUnavailable() ? "unavailable" : "refused";
  }

  /** Whether some backend waits for a row lock on the cursor table: the reservation's. */
  private static boolean waitingForLock(Connection locker) throws Exception {
    try (PreparedStatement s =
            locker.prepareStatement(
                "SELECT count(*) FROM pg_stat_activity"
                    + " WHERE wait_event_type = 'Lock' AND query LIKE '%pacer_cursor%'");
        ResultSet row = s.executeQuery()) {
      row.next();
      return row.getInt(1) > 0;
    }
  }

  private static boolean parked(Thread thread) {
    Thread.State state = thread.getState();
    return state == Thread.State.WAITING || state == Thread.State.TIMED_WAITING;
  }
}
