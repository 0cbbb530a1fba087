package dev.pacer.postgres;

import dev.pacer.Destination;
import dev.pacer.DestinationLimiter;
import dev.pacer.LimiterRegistry;
import dev.pacer.LocalCursor;
import dev.pacer.jdkhttp.SentRequest;
import dev.pacer.spi.Cursor;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * One fleet member, run as its own JVM by {@link FleetTest}: builds its own limiter and its {@link
 * DoorClient}, prints READY, waits for GO on stdin (so that every process starts together), then
 * sends {@code count} requests to the door, one per turn, each with a query of its own, and prints
 * each request's trace ({@link TraceLines}) and its {@link TurnsTaken} in the run's steady part
 * ({@link SteadyTurns}).
 *
 * <p>Arguments: {@code shared|local jdbcUrl destination ratePerSecond count doorUrl member}.
 */
public final class FleetWorker {

  public static void main(String[] args) throws Exception {
    boolean shared = args[0].equals("shared");
    String jdbcUrl = args[1];
    Destination destination =
        Destination.builder(args[2])
            .ratePerSecond(Double.parseDouble(args[3]))
            .maxConcurrency(1)
            .maxFetchingProcesses(3)
            .build();
    int count = Integer.parseInt(args[4]);
    URI door = URI.create(args[5]);

    Cursor cursor =
        shared
            ? new PostgresCursor(PostgresCursorConfig.forUrl(jdbcUrl).build())
            : new LocalCursor();
    LimiterRegistry registry = new LimiterRegistry(cursor);
    DestinationLimiter limiter = registry.limiter(destination);
    if (shared && !((PostgresCursor) cursor).connect(Duration.ofSeconds(30))) {
      throw new IllegalStateException("could not connect to " + jdbcUrl);
    }
    ConcurrentLinkedQueue<SentRequest> traced = new ConcurrentLinkedQueue<>();
    DoorClient client = DoorClient.opened(limiter, door, args[6], traced::add);
    System.out.println("READY");
    System.out.flush();
    BufferedReader in =
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    if (!"GO".equals(in.readLine())) {
      throw new IllegalStateException("expected GO");
    }
    SteadyTurns steady = new SteadyTurns(System.nanoTime(), limiter::lateTurnsSkipped);
    for (int i = 0; i < count; i++) {
      steady.beforeTurn();
      client.send(FleetTest.query(args[6], i));
    }
    for (SentRequest r : traced) {
      String line = TraceLines.line(r);
      if (line != null) {
        System.out.println(line);
      }
    }
    System.out.println(steady.taken().line());
    System.out.flush();
    if (cursor instanceof PostgresCursor pg) {
      pg.close();
    }
  }
}
