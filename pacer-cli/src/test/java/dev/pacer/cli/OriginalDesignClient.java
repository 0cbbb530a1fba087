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
    http.send(
        HttpRequest.newBuilder(URI.create(base + "/warm-up"))
            .header("X-Pacer-Worker", "original")
            .build(),
        HttpResponse.BodyHandlers.discarding());
    try (Connection c = DriverManager.getConnection(jdbcUrl);
        PreparedStatement reserve = c.prepareStatement(OriginalDesign.statement(table))) {
      reserve.setString(1, key);
      for (int i = 2; i <= 5; i++) {
        reserve.setBigDecimal(i, gap);
      }
      System.out.println("ready");
      System.out.flush();
      new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine();
      for (int n = 1; n <= count; n++) {
        double waitSeconds;
        try (ResultSet r = reserve.executeQuery()) {
          r.next();
          waitSeconds = r.getDouble(1);
        }
        long waitNanos = Math.round(waitSeconds * 1e9);
        Thread.sleep(waitNanos / 1_000_000, (int) (waitNanos % 1_000_000));
        http.send(
            HttpRequest.newBuilder(URI.create(base + "/original/" + n))
                .header("X-Pacer-Worker", "original")
                .build(),
            HttpResponse.BodyHandlers.discarding());
      }
    }
  }
}
