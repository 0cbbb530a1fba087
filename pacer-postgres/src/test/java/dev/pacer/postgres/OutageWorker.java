package dev.pacer.postgres;

import dev.pacer.Destination;
import dev.pacer.DestinationLimiter;
import dev.pacer.LimiterRegistry;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;

/**
 * The fleet members of one JVM for {@link OutageFleet}: {@code members} of them, each with a
 * cursor, a registry and a {@link DoorClient} of its own, as independent as processes (a member is
 * a process to the census and to the degraded pacing), and {@code threads} threads each that send
 * one request to the door per turn, as fast as the limiter allows, for {@code seconds}. Member
 * {@code i} names itself {@code <name>-<i>} at the door. At the end it prints the members' {@link
 * TurnsTaken} together, the turns given up as late counted from GO (the opening requests' turns are
 * no turns of the run); a thread that died of anything but an interrupt makes it exit {@link
 * WorkerThreads#DIED}.
 *
 * <p>Arguments: {@code jdbcUrl layout destination ratePerSecond maxFetchingProcesses members
 * threads seconds doorUrl name}, where {@code layout} is {@code pacer} ({@link
 * TableLayout#pacerTable()}, which keeps a census) or {@code key-value:<table>} ({@link
 * TableLayout#djangoCache}, which keeps none; the table must exist).
 */
public final class OutageWorker {

  private static final String KEY_VALUE = "key-value:";

  public static void main(String[] args) throws Exception {
    String jdbcUrl = args[0];
    TableLayout layout =
        args[1].startsWith(KEY_VALUE)
            ? TableLayout.djangoCache(args[1].substring(KEY_VALUE.length()))
            : TableLayout.pacerTable();
    int members = Integer.parseInt(args[5]);
    int threads = Integer.parseInt(args[6]);
    Destination destination =
        Destination.builder(args[2])
            .ratePerSecond(Double.parseDouble(args[3]))
            .maxConcurrency(threads)
            .maxFetchingProcesses(Integer.parseInt(args[4]))
            .build();
    long runNanos = Duration.ofSeconds(Long.parseLong(args[7])).toNanos();
    URI door = URI.create(args[8]);
    List<PostgresCursor> cursors = new ArrayList<>();
    List<DestinationLimiter> limiters = new ArrayList<>();
    List<DoorClient> clients = new ArrayList<>();
    for (int m = 0; m < members; m++) {
      PostgresCursor cursor =
          new PostgresCursor(PostgresCursorConfig.forUrl(jdbcUrl).layout(layout).build());
      DestinationLimiter limiter = new LimiterRegistry(cursor).limiter(destination);
      if (!cursor.connect(Duration.ofSeconds(30))) {
        throw new IllegalStateException("could not connect to " + jdbcUrl);
      }
      cursors.add(cursor);
      limiters.add(limiter);
      clients.add(DoorClient.opened(limiter, door, args[9] + "-" + m));
    }
    // The threads wait for GO already started: started at GO, every JVM of the fleet would make
    // its threads at the run's first turns.
    CountDownLatch go = new CountDownLatch(1);
    long[] end = new long[1];
    WorkerThreads workers = new WorkerThreads();
    List<long[]> sentByThread = new ArrayList<>();
    for (DoorClient client : clients) {
      for (int t = 0; t < threads; t++) {
        long[] sent = new long[1];
        sentByThread.add(sent);
        workers.start(
            () -> {
              go.await();
              while (System.nanoTime() < end[0]) {
                client.send();
                sent[0]++;
              }
            });
      }
    }
    System.out.println("READY");
    System.out.flush();
    BufferedReader in =
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    if (!"GO".equals(in.readLine())) {
      throw new IllegalStateException("expected GO");
    }
    long lateBefore = limiters.stream().mapToLong(DestinationLimiter::lateTurnsSkipped).sum();
    end[0] = System.nanoTime() + runNanos;
    go.countDown();
    workers.joinAll();
    long sent = sentByThread.stream().mapToLong(s -> s[0]).sum();
    long late =
        limiters.stream().mapToLong(DestinationLimiter::lateTurnsSkipped).sum() - lateBefore;
    System.out.println(new TurnsTaken(sent, late).line());
    System.out.flush();
    cursors.forEach(PostgresCursor::close);
    workers.exitIfAnyDied();
  }
}
