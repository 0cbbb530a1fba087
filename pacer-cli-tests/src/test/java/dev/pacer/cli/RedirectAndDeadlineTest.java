package dev.pacer.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpServer;
import dev.pacer.postgres.TestDatabase;
import dev.pacer.testing.Answer;
import dev.pacer.testing.DoorServer;
import dev.pacer.testing.Request;
import dev.pacer.testing.Timeline;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Redirects are requests, and a response has a deadline: {@code pacer fetch} against local
 * destinations that answer 301 or trickle their bodies, judged by what arrives at them.
 */
class RedirectAndDeadlineTest {

  private static final AtomicInteger UNIQUE = new AtomicInteger();

  @TempDir Path dir;
  private final List<DoorServer> doors = new ArrayList<>();
  private HttpServer trickler;

  @AfterEach
  void stop() throws IOException {
    for (DoorServer door : doors) {
      door.close();
    }
    if (trickler != null) {
      trickler.stop(0);
    }
  }

  /** A destination on 127.0.0.1 that stamps every request and answers what {@code answer} says. */
  private DoorServer serve(Function<Request, Answer> answer) throws IOException {
    DoorServer door = new DoorServer(answer);
    doors.add(door);
    return door;
  }

  private static String base(DoorServer door, String host) {
    return "http://" + host + ":" + door.port();
  }

  private Cli.Result fetch(String job, List<String> urls, String... extra) throws IOException {
    Path input = Files.write(dir.resolve(job + ".txt"), urls);
    List<String> args =
        new ArrayList<>(
            List.of(
                "fetch",
                input.toString(),
                "--job",
                job,
                "--destination",
                job,
                "--db",
                TestDatabase.jdbcUrl(),
                "--out",
                dir.resolve("out").toString(),
                "--max-load",
                "1000"));
    args.addAll(List.of(extra));
    return Cli.run(args.toArray(String[]::new));
  }

  private static String job(String what) {
    return what + "-" + ProcessHandle.current().pid() + "-" + UNIQUE.incrementAndGet();
  }

  @Test
  void eachSameHostRedirectHopTakesItsOwnTurn() throws Exception {
    DoorServer server =
        serve(
            request -> {
              String path = request.path();
              return path.startsWith("/moved/")
                  ? Answer.status(301)
                      .with("Location", "/file/" + path.substring("/moved/".length()))
                  : Answer.text(200, "body of " + path);
            });
    List<String> urls = new ArrayList<>();
    for (int i = 1; i <= 15; i++) {
      urls.add(base(server, "127.0.0.1") + "/moved/" + i);
    }
    String job = job("redirect-turns");
    Cli.Result run = fetch(job, urls, "--rate", "10", "--concurrency", "6");

    assertThat(run.code()).as(run.err()).isEqualTo(0);
    assertThat(run.number("done")).isEqualTo(15);
    Timeline door = server.timeline();
    System.out.println("redirects at the door: " + door);
    // 30 requests at 10/s: followed inside one turn, the hops would arrive at twice the rate.
    assertThat(door.size()).isEqualTo(30);
    assertThat(door.peakOneSecondWindow()).as(door.toString()).isLessThanOrEqualTo(11);
    assertThat(door.spanSeconds()).as(door.toString()).isGreaterThanOrEqualTo(2.9 - 0.1);
    assertThat(run.number("requestsAtDestination")).isEqualTo(30);
    assertThat(run.number("busiestOneSecondWindow"))
        .isBetween((long) door.peakOneSecondWindow() - 1, (long) door.peakOneSecondWindow() + 1);
    Path body = dir.resolve("out").resolve(job);
    try (var files = Files.walk(body)) {
      assertThat(files.filter(Files::isRegularFile).toList())
          .hasSize(15)
          .allSatisfy(f -> assertThat(f.getFileName().toString()).doesNotEndWith(".part"));
    }
  }

  @Test
  void aRedirectToAnotherHostIsNotFollowedAndFailsTheItem() throws Exception {
    DoorServer other = serve(request -> Answer.text(200, "elsewhere"));
    String elsewhere = base(other, "localhost") + "/file";
    DoorServer server = serve(request -> Answer.status(302).with("Location", elsewhere));
    String job = job("redirect-cross-host");
    Cli.Result run =
        fetch(
            job,
            List.of(base(server, "127.0.0.1") + "/moved"),
            "--rate",
            "10",
            "--max-attempts",
            "1");

    assertThat(run.code()).as(run.err()).isEqualTo(0);
    assertThat(run.number("failed")).isEqualTo(1);
    assertThat(other.arrivals()).isEmpty();
    assertThat(lastError(job)).contains("localhost");
  }

  @Test
  void aBodyThatTricklesFailsAtTheDeadlineAndFreesItsThread() throws Exception {
    // The door writes each answer whole; this destination sends a body a byte at a time.
    trickler = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 64);
    trickler.setExecutor(
        Executors.newCachedThreadPool(
            r -> {
              Thread t = new Thread(r, "trickling-destination");
              t.setDaemon(true);
              return t;
            }));
    trickler.createContext(
        "/",
        exchange -> {
          if (exchange.getRequestURI().getPath().startsWith("/slow")) {
            try {
              exchange.sendResponseHeaders(200, 1_000_000);
              OutputStream out = exchange.getResponseBody();
              for (int i = 0; i < 600; i++) {
                out.write('x');
                out.flush();
                Thread.sleep(100);
              }
            } catch (IOException | InterruptedException e) {
              exchange.close();
            }
          } else {
            byte[] quick = "quick".getBytes(StandardCharsets.UTF_8);
            exchange.sendResponseHeaders(200, quick.length);
            try (OutputStream out = exchange.getResponseBody()) {
              out.write(quick);
            }
          }
        });
    trickler.start();
    String base = "http://127.0.0.1:" + trickler.getAddress().getPort();
    String job = job("trickle");
    long started = System.nanoTime();
    // One thread: the quick items can only be fetched once the trickling one has let go of it.
    Cli.Result run =
        fetch(
            job,
            List.of(base + "/slow", base + "/quick/1", base + "/quick/2"),
            "--rate",
            "20",
            "--concurrency",
            "1",
            "--request-timeout",
            "1",
            "--max-attempts",
            "1");
    double seconds = (System.nanoTime() - started) / 1e9;

    assertThat(run.code()).as(run.err()).isEqualTo(0);
    assertThat(run.number("done")).isEqualTo(2);
    assertThat(run.number("failed")).isEqualTo(1);
    assertThat(lastError(job)).contains("1 s");
    // Trickling for 60 s would keep the run for 60 s; the deadline ends it after about 1.
    assertThat(seconds).as("run time").isLessThan(15);
  }

  private static String lastError(String job) throws Exception {
    try (Connection c = TestDatabase.connect();
        PreparedStatement s =
            c.prepareStatement(
                "SELECT string_agg(last_error, ' | ')"
                    + " FROM pacer_item WHERE job = ? AND state = 'failed'")) {
      s.setString(1, job);
      try (ResultSet r = s.executeQuery()) {
        r.next();
        return String.valueOf(r.getString(1));
      }
    }
  }
}
