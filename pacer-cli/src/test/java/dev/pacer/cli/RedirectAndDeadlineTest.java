package dev.pacer.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import dev.pacer.testing.Timeline;
import dev.pacer.postgres.TestDatabase;
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
import java.util.function.Consumer;
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
  private final List<HttpServer> servers = new ArrayList<>();
  private final List<Long> arrivals = new ArrayList<>();

  @AfterEach
  void stop() {
    servers.forEach(s -> s.stop(0));
  }

  /** A destination on 127.0.0.1 whose every request is recorded, then answered by {@code answer}. */
  private HttpServer serve(String host, Consumer<HttpExchange> answer) throws IOException {
    HttpServer server = HttpServer.create(new InetSocketAddress(host, 0), 64);
    server.setExecutor(Executors.newCachedThreadPool(r -> {
      Thread t = new Thread(r, "redirecting-destination");
      t.setDaemon(true);
      return t;
    }));
    server.createContext("/", exchange -> {
      synchronized (arrivals) {
        arrivals.add(System.nanoTime());
      }
      answer.accept(exchange);
    });
    server.start();
    servers.add(server);
    return server;
  }

  private static String base(HttpServer server, String host) {
    return "http://" + host + ":" + server.getAddress().getPort();
  }

  private static void respond(HttpExchange exchange, int status, String location, String body) {
    try {
      if (location != null) {
        exchange.getResponseHeaders().add("Location", location);
      }
      byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
      exchange.sendResponseHeaders(status, bytes.length == 0 ? -1 : bytes.length);
      try (OutputStream out = exchange.getResponseBody()) {
        out.write(bytes);
      }
    } catch (IOException e) {
      exchange.close();
    }
  }

  private Cli.Result fetch(String job, List<String> urls, String... extra) throws IOException {
    Path input = Files.write(dir.resolve(job + ".txt"), urls);
    List<String> args = new ArrayList<>(List.of("fetch", input.toString(), "--job", job,
        "--destination", job, "--db", TestDatabase.jdbcUrl(), "--out",
        dir.resolve("out").toString(), "--max-load", "1000"));
    args.addAll(List.of(extra));
    return Cli.run(args.toArray(String[]::new));
  }

  private static String job(String what) {
    return what + "-" + ProcessHandle.current().pid() + "-" + UNIQUE.incrementAndGet();
  }

  @Test
  void eachSameHostRedirectHopTakesItsOwnTurn() throws Exception {
    HttpServer server = serve("127.0.0.1", exchange -> {
      String path = exchange.getRequestURI().getPath();
      if (path.startsWith("/moved/")) {
        respond(exchange, 301, "/file/" + path.substring("/moved/".length()), "");
      } else {
        respond(exchange, 200, null, "body of " + path);
      }
    });
    List<String> urls = new ArrayList<>();
    for (int i = 1; i <= 15; i++) {
      urls.add(base(server, "127.0.0.1") + "/moved/" + i);
    }
    String job = job("redirect-turns");
    Cli.Result run = fetch(job, urls, "--rate", "10", "--concurrency", "6");

    assertThat(run.code()).as(run.err()).isEqualTo(0);
    assertThat(run.number("done")).isEqualTo(15);
    Timeline door = timeline();
    System.out.println("redirects at the door: " + door);
    // 30 requests at 10/s: followed inside one turn, the hops would arrive at twice the rate.
    assertThat(door.size()).isEqualTo(30);
    assertThat(door.peakOneSecondWindow()).as(door.toString()).isLessThanOrEqualTo(11);
    assertThat(door.spanSeconds()).as(door.toString()).isGreaterThanOrEqualTo(2.9 - 0.1);
    assertThat(run.number("requestsAtDestination")).isEqualTo(30);
    assertThat(run.number("busiestOneSecondWindow")).isBetween(
        (long) door.peakOneSecondWindow() - 1, (long) door.peakOneSecondWindow() + 1);
    Path body = dir.resolve("out").resolve(job);
    try (var files = Files.walk(body)) {
      assertThat(files.filter(Files::isRegularFile).toList()).hasSize(15)
          .allSatisfy(f -> assertThat(f.getFileName().toString()).doesNotEndWith(".part"));
    }
  }

  @Test
  void aRedirectToAnotherHostIsNotFollowedAndFailsTheItem() throws Exception {
    AtomicInteger otherHost = new AtomicInteger();
    HttpServer other = serve("127.0.0.1", exchange -> {
      otherHost.incrementAndGet();
      respond(exchange, 200, null, "elsewhere");
    });
    String elsewhere = base(other, "localhost") + "/file";
    HttpServer server = serve("127.0.0.1", exchange -> respond(exchange, 302, elsewhere, ""));
    String job = job("redirect-cross-host");
    Cli.Result run = fetch(job, List.of(base(server, "127.0.0.1") + "/moved"), "--rate", "10",
        "--max-attempts", "1");

    assertThat(run.code()).as(run.err()).isEqualTo(0);
    assertThat(run.number("failed")).isEqualTo(1);
    assertThat(otherHost).hasValue(0);
    assertThat(lastError(job)).contains("localhost");
  }

  @Test
  void aBodyThatTricklesFailsAtTheDeadlineAndFreesItsThread() throws Exception {
    HttpServer server = serve("127.0.0.1", exchange -> {
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
        respond(exchange, 200, null, "quick");
      }
    });
    String job = job("trickle");
    long started = System.nanoTime();
    // One thread: the quick items can only be fetched once the trickling one has let go of it.
    Cli.Result run = fetch(job, List.of(base(server, "127.0.0.1") + "/slow",
            base(server, "127.0.0.1") + "/quick/1", base(server, "127.0.0.1") + "/quick/2"),
        "--rate", "20", "--concurrency", "1", "--request-timeout", "1", "--max-attempts", "1");
    double seconds = (System.nanoTime() - started) / 1e9;

    assertThat(run.code()).as(run.err()).isEqualTo(0);
    assertThat(run.number("done")).isEqualTo(2);
    assertThat(run.number("failed")).isEqualTo(1);
    assertThat(lastError(job)).contains("1 s");
    // Trickling for 60 s would keep the run for 60 s; the deadline ends it after about 1.
    assertThat(seconds).as("run time").isLessThan(15);
  }

  private Timeline timeline() {
    synchronized (arrivals) {
      return new Timeline(arrivals);
    }
  }

  private static String lastError(String job) throws Exception {
    try (Connection c = TestDatabase.connect();
        PreparedStatement s = c.prepareStatement(
            "SELECT string_agg(last_error, ' | ') FROM pacer_item WHERE job = ? AND state = 'failed'")) {
      s.setString(1, job);
      try (ResultSet r = s.executeQuery()) {
        r.next();
        return String.valueOf(r.getString(1));
      }
    }
  }
}
