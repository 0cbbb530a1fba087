package dev.pacer.cli;

import dev.pacer.postgres.OriginalDesign;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.math.BigDecimal;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;

/**
 * A member of the original (Python) design's fleet, as a JVM of its own: for each of its requests
 * it runs the original statement on a Django cache row, sleeps the wait it answers, and sends the
 * request. It warms its HTTP client up with one request ({@code URL/warm-up}), then waits for a
 * line on standard input before its first turn.
 *
 * <p>Arguments: JDBC URL, cache table, key, gap in seconds, number of requests, base URL.
 */
public final class OriginalDesignClient {

  private OriginalDesignClient() {}

  public static void main(String[] args) throws Exception {
    String jdbcUrl = args[0];
    String table = args[1];
    String key = args[2];
    BigDecimal gap = new BigDecimal(args[3]);
    int count = Integer.parseInt(args[4]);
    String base = args[5];
    HttpClient http = HttpClient.newHttpClient();
    HttpRequest warmUp =
        HttpRequest.newBuilder(URI.create(base + "/warm-up"))
            .header("X-Pacer-Worker", "original")
            .build();
    http.send(warmUp, HttpResponse.BodyHandlers.discarding());
    try (Connection c = DriverManager.getConnection(jdbcUrl);
        PreparedStatement reserve = c.prepareStatement(OriginalDesign.statement(table))) {
      for (int i = 2; i <= 5; i++) {
        reserve.setBigDecimal(i, gap);
      }
      // One turn of a key of its own first, as the measured turns run it: the original design
      // has no late-turn rule, and a cold JVM's first statement, sleep and send can put its first
      // request a turn late, beside the fleet's next one.
      reserve.setString(1, key + "-warm-up");
      try (ResultSet r = reserve.executeQuery()) {
        r.next();
        sleep(r.getDouble(1));
      }
      http.send(warmUp, HttpResponse.BodyHandlers.discarding());
      reserve.setString(1, key);
      System.out.println("ready");
      System.out.flush();
      new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine();
      for (int n = 1; n <= count; n++) {
        try (ResultSet r = reserve.executeQuery()) {
          r.next();
          sleep(r.getDouble(1));
        }
        http.send(
            HttpRequest.newBuilder(URI.create(base + "/original/" + n))
                .header("X-Pacer-Worker", "original")
                .build(),
            HttpResponse.BodyHandlers.discarding());
      }
    }
  }

  private static void sleep(double seconds) throws InterruptedException {
    long nanos = Math.round(seconds * 1e9);
    Thread.sleep(nanos / 1_000_000, (int) (nanos % 1_000_000));
  }
}
