package dev.pacer.bench;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The floor of {@link FetchThroughput}: a plain {@code java.net.http} loop, run in a JVM of its own
 * as {@code pacer fetch} is. {@code THREADS} threads share one client and take the URLs of the file
 * in turn, each body streamed to a file of its own. No pacing, no work state, no retries. Prints
 * "{@code <ok> <seconds>}": the successful fetches and the time from the first request to the last
 * answer (the JVM's start and the file's reading are not counted, as {@code pacer fetch}'s own
 * figure leaves out its start and its enqueue).
 *
 * <p>Usage: {@code BareFetch URL_FILE THREADS OUT_DIR [--force]}. With {@code --force} each body
 * file, and its directory, is forced to the storage device as {@code pacer fetch} forces its
 * bodies: the same loop with Pacer's durability, to tell what that costs from what the rest does.
 */
public final class BareFetch {

  private BareFetch() {}

  public static void main(String[] args) throws Exception {
    List<String> urls = Files.readAllLines(Path.of(args[0]));
    int threads = Integer.parseInt(args[1]);
    Path out = Files.createDirectories(Path.of(args[2]));
    boolean force = args.length > 3 && args[3].equals("--force");
    HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
    AtomicInteger next = new AtomicInteger();
    AtomicLong ok = new AtomicLong();
    Thread[] workers = new Thread[threads];
    long started = System.nanoTime();
    for (int t = 0; t < threads; t++) {
      workers[t] =
          new Thread(
              () -> {
                for (int i; (i = next.getAndIncrement()) < urls.size(); ) {
                  HttpRequest request =
                      HttpRequest.newBuilder(URI.create(urls.get(i)))
                          .timeout(Duration.ofSeconds(60))
                          .GET()
                          .build();
                  try {
                    HttpResponse<Path> response =
                        client.send(
                            request,
                            HttpResponse.BodyHandlers.ofFile(out.resolve(Integer.toString(i))));
                    if (force) {
                      forceToDisk(response.body());
                      forceToDisk(out);
                    }
                    if (response.statusCode() == 200) {
                      ok.incrementAndGet();
                    }
                  } catch (java.io.IOException e) {
                    // Counted by its absence from ok.
                  } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                  }
                }
              });
      workers[t].start();
    }
    for (Thread w : workers) {
      w.join();
    }
    double seconds = (System.nanoTime() - started) / 1e9;
    System.out.println(ok.get() + " " + seconds);
  }

  private static void forceToDisk(Path path) throws java.io.IOException {
    try (java.nio.channels.FileChannel c =
        java.nio.channels.FileChannel.open(path, java.nio.file.StandardOpenOption.READ)) {
      c.force(true);
    }
  }
}
