package dev.pacer.http;

import dev.pacer.Destination;
import dev.pacer.DestinationLimiter;
import dev.pacer.LimiterLookup;
import dev.pacer.LimiterRegistry;
import dev.pacer.LocalCursor;
import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/**
 * The child JVM of {@link ColdStartTest}: builds one client in a fresh JVM, paced and warmed up
 * (argument {@code warm}) or unpaced ({@code unpaced}), and sends {@link #REQUESTS} GETs to {@code
 * <url>/ok/<i>} from {@link #THREADS} threads at once, paced at {@link #CEILING}/s. It prints
 * {@code LATE <n>}: the turns its limiter gave up as late. Arguments: the {@link Client}, the
 * destination's URL (no trailing slash), {@code warm} or {@code unpaced}.
 */
public final class ColdStart {

  static final int CEILING = 10;
  static final int REQUESTS = 30;
  static final int THREADS = 30;

  public static void main(String[] args) throws Exception {
    Client kind = Client.valueOf(args[0]);
    String url = args[1];
    boolean paced = args[2].equals("warm");
    DestinationLimiter limiter =
        new LimiterRegistry(new LocalCursor())
            .limiter(
                Destination.builder("cold-start")
                    .ratePerSecond(CEILING)
                    .maxConcurrency(THREADS)
                    .build());
    ExecutorService threads = Executors.newFixedThreadPool(THREADS);
    try (Client.Getter client = paced ? kind.open(LimiterLookup.only(limiter)) : kind.bare()) {
      if (paced) {
        client.warmUp(URI.create(url));
      }
      List<Future<Client.Answer>> answers = new ArrayList<>();
      for (int i = 0; i < REQUESTS; i++) {
        URI uri = URI.create(url + "/ok/" + i);
        answers.add(threads.submit(() -> client.get(uri)));
      }
      for (Future<Client.Answer> answer : answers) {
        if (answer.get(60, TimeUnit.SECONDS).status() != 200) {
          throw new IllegalStateException("not 200: " + answer.get());
        }
      }
    } finally {
      threads.shutdownNow();
    }
    System.out.println("LATE " + limiter.lateTurnsSkipped());
  }
}
