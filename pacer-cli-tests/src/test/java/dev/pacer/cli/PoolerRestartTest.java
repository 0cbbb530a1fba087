package dev.pacer.cli;

import static dev.pacer.cli.TestDestination.count;
import static dev.pacer.cli.TestDestination.perSecond;
import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.postgres.PgBouncer;
import dev.pacer.postgres.RestartablePostgres;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A conveyor run ({@link FaultRun}) through a real PgBouncer in transaction mode, with the pooler
 * restarted under it, then the server behind the pooler: each outage is one the fleet rides out,
 * pacing locally and returning together on the outage policy's retry grid.
 */
class PoolerRestartTest {

  private static final int RATE = FaultRun.RATE;

  /** From the moment the fault begins to the moment the restart begins. */
  private static final long OUTAGE = 4 * FaultRun.SECOND;

  /**
   * PgBouncer turns its clients away for this long after a failed login to the server, even once
   * the server is back; its default, 15 s, would make the test that long longer.
   */
  private static final Duration SERVER_LOGIN_RETRY = Duration.ofSeconds(1);

  @TempDir Path dir;
  private RestartablePostgres postgres;
  private PgBouncer pooler;
  private TestDestination destination;
  private FaultRun faults;

  @BeforeEach
  void start() throws IOException {
    postgres = new RestartablePostgres();
    pooler = PgBouncer.transactionMode(postgres.port(), 4, SERVER_LOGIN_RETRY);
    destination = new TestDestination();
    faults = new FaultRun(dir, destination, postgres.jdbcUrl());
  }

  @AfterEach
  void stop() throws Exception {
    faults.close();
    destination.close();
    pooler.close();
    postgres.close();
  }

  @Test
  void pgBouncerRestartedMidRun() throws Exception {
    String job = "pooler-restart";
    // About 2 s at the full rate before the outage, the items in hand during it, and 19 s at the
    // full rate once the fleet is back on the shared cursor: the hand-over that this test places
    // from `up`, then the 4 s that assertFullRateAfterHandOver judges. The pooler answers before
    // start() returns, so a boundary between the two brings the fleet back a boundary before the
    // one this test counts from, and the hand-over it judges ends 15 s after `up`, not 10.
    int items = 230;
    Process run = faults.fetch(job, items, pooler.jdbcUrl());
    faults.awaitArrivals(20);
    faults.awaitEveryWorker();
    Set<String> workersBefore = faults.workers(0, Long.MAX_VALUE);
    long down = System.nanoTime();
    pooler.stop();
    sleepUntil(down + OUTAGE);
    pooler.start();
    long up = System.nanoTime();
    String err = faults.finish(run, job, items);
    // A fresh PgBouncer logs in to the server at the first client's request.
    assertRodeOut("pooler restart", down, up, up, workersBefore, err);
  }

  @Test
  void serverBehindPgBouncerCrashedAndRestartedMidRun() throws Exception {
    String job = "pooled-server-restart";
    // As for the pooler's restart, and 5 s more at about 7/s: the probes of one boundary may
    // straddle the end of PgBouncer's wait, and a process that returned a boundary before the
    // others fetches meanwhile; and 70 more, as the workers also fetch what they leased ahead while
    // the server is away.
    int items = 290;
    Process run = faults.fetch(job, items, pooler.jdbcUrl());
    faults.awaitArrivals(20);
    faults.awaitEveryWorker();
    Set<String> workersBefore = faults.workers(0, Long.MAX_VALUE);
    long down = System.nanoTime();
    postgres.stopImmediately();
    sleepUntil(down + OUTAGE);
    postgres.start();
    long up = System.nanoTime();
    String err = faults.finish(run, job, items);
    pooler
        .log()
        .lines()
        .filter(l -> !l.contains("login attempt") && !l.contains("close request"))
        .forEach(l -> System.out.println("pooled server restart | PgBouncer: " + l));
    // PgBouncer's last failed login was before the server came back: it logs in again, and
    // serves its clients, at most SERVER_LOGIN_RETRY later.
    long served = up + SERVER_LOGIN_RETRY.toNanos();
    assertRodeOut("pooled server restart", down, up, served, workersBefore, err);
    // PgBouncer stays up and answers for the server with errors of its own, all 08P01 ("server
    // conn crashed?", "server login has been failing"): the outage policy went down on one.
    assertThat(err).contains("[SQLState 08P01]; pacing locally");
  }

  /**
   * The ceiling held from the first request; the items in hand were fetched during the outage
   * ({@code down} to {@code up}); the fleet was back at the full rate once the hand-over after the
   * database answered again ({@code served}, at the latest) had ended; no worker exited; and the
   * outage was one the policy saw and saw end.
   */
  private void assertRodeOut(
      String fault, long down, long up, long served, Set<String> workersBefore, String err) {
    List<TestDestination.Arrival> arrivals = destination.arrivals();
    int during = count(arrivals, down, up);
    System.out.printf(
        "%s: %s; %.1f s outage, %d requests during it; per second from the outage" + " on: %s%n",
        fault,
        TestDestination.timeline(arrivals),
        (up - down) / 1e9,
        during,
        perSecond(arrivals, down));
    TestDestination.assertHeldCeiling(arrivals, RATE);
    assertThat(during)
        .as("items in hand fetched during the outage, at the degraded rate")
        .isPositive();
    faults.assertFullRateAfterHandOver(arrivals, served);
    assertThat(faults.workers(up, Long.MAX_VALUE))
        .as("no worker exited")
        .isEqualTo(workersBefore)
        .hasSize(3);
    assertThat(err).contains("unavailable", "PostgreSQL answers again");
  }

  private static void sleepUntil(long nanoTime) throws InterruptedException {
    long left = nanoTime - System.nanoTime();
    if (left > 0) {
      Thread.sleep(left / 1_000_000, (int) (left % 1_000_000));
    }
  }
}
