package dev.pacer.cli.db;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.cli.model.UrlList;
import dev.pacer.postgres.TestDatabase;
import java.io.BufferedWriter;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Enqueue streams: a list larger than the heap of the JVM that enqueues it goes in whole, once, and
 * enqueued again adds nothing. 20,000 URLs of 2,000 characters are 40 MB of text; the child JVM has
 * a 24 MB heap, so an enqueue that held the list in memory (as a {@code List<String>}, or as one
 * batch) fails with an OutOfMemoryError, which this test reports.
 */
class EnqueueAtScaleTest {

  static final int URLS = 20_000;
  static final int HOSTS = 200;
  static final int URL_LENGTH = 2_000;
  static final String HEAP = "-Xmx24m";

  @TempDir Path dir;

  @Test
  void aListLargerThanTheHeapEnqueuesOnceAndAgainAddsNothing() throws Exception {
    Path list = dir.resolve("urls.txt");
    try (BufferedWriter w = Files.newBufferedWriter(list, StandardCharsets.UTF_8)) {
      for (int i = 0; i < URLS; i++) {
        String url = "http://host-" + (i % HOSTS) + ".example/" + i + "/";
        w.write(url + "p".repeat(URL_LENGTH - url.length()));
        w.write('\n');
      }
      // A duplicate in the input is one item.
      w.write(
          "http://host-0.example/0/"
              + "p".repeat(URL_LENGTH - "http://host-0.example/0/".length()));
      w.write('\n');
    }
    assertThat(Files.size(list))
        .as("the list is larger than the child's heap")
        .isGreaterThan(32L << 20);
    String job = "enqueue-scale-" + ProcessHandle.current().pid();

    List<String> first = child(list, job, UUID.randomUUID().toString());
    assertThat(first).as("first enqueue").contains("added " + URLS, "lines " + (URLS + 1));
    List<String> again = child(list, job, UUID.randomUUID().toString());
    assertThat(again).as("the same list again").contains("added 0");

    try (WorkState store = new WorkState(new Database(TestDatabase.jdbcUrl()))) {
      assertThat(store.items().counts(job).total()).isEqualTo(URLS);
    }
  }

  private List<String> child(Path list, String job, String key) throws Exception {
    List<String> command =
        List.of(
            Path.of(System.getProperty("java.home"), "bin", "java").toString(),
            HEAP,
            "-XX:+ExitOnOutOfMemoryError",
            "-cp",
            System.getProperty("java.class.path"),
            Enqueue.class.getName(),
            TestDatabase.jdbcUrl(),
            list.toString(),
            job,
            key);
    Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
    List<String> out = new ArrayList<>();
    try (InputStream in = p.getInputStream()) {
      out.addAll(new String(in.readAllBytes(), StandardCharsets.UTF_8).lines().toList());
    }
    assertThat(p.waitFor(120, TimeUnit.SECONDS)).as("the child finished").isTrue();
    assertThat(p.exitValue()).as("child with %s: %s", HEAP, out).isZero();
    return out;
  }

  /** The child: reads the list as {@code pacer fetch} does and enqueues it. */
  public static final class Enqueue {
    public static void main(String[] args) throws Exception {
      Database database = new Database(args[0]);
      try (InputStream in = Files.newInputStream(Path.of(args[1]));
          UrlList urls = UrlList.read(in, args[1]);
          WorkState store = new WorkState(database)) {
        store.ensureSchema();
        int added = store.jobs().enqueue(args[3], args[2], "scale", 1.0, urls.urls());
        System.out.println("lines " + urls.count());
        System.out.println("added " + added);
      }
    }
  }
}
