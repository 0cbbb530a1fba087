package dev.pacer.cli.run;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The heartbeat keeps the leases: one that stopped would let every item this worker holds lapse.
 */
class WorkerHeartbeatTest {

  @Test
  void aHeartbeatThatThrowsAnErrorBeatsAgain() throws Exception {
    ScheduledExecutorService executor = Executors.newSingleThreadScheduledExecutor();
    CountDownLatch beats = new CountDownLatch(3);
    try {
      Worker.scheduleHeartbeat(
          executor,
          () -> {
            beats.countDown();
            if (beats.getCount() == 2) {
              throw new OutOfMemoryError("Java heap space (simulated)");
            }
          },
          10);
      assertThat(beats.await(5, TimeUnit.SECONDS)).as("beats after the first threw").isTrue();
    } finally {
      executor.shutdownNow();
    }
  }
}
