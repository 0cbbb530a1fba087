package dev.pacer.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.TimeSource;
import dev.pacer.spi.FleetSlots;
import dev.pacer.spi.Reservation;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.junit.jupiter.api.Test;

/**
 * PostgreSQL comes back from a restart refusing the fleet: a role whose {@code CONNECTION LIMIT}
 * the fleet exceeds, or a read-only server. Each process is what the CLI makes of one: a cursor and
 * fleet slots, each on a connection of its own, under one outage policy per process. It has no
 * background probe, so the first caller after a boundary (a slot poll, as when it comes before a
 * late probe) makes that boundary's attempt, whatever the server answers it. While refused, the
 * fleet degrades (reservations answer "unavailable", nothing throws) and tries once per boundary;
 * once the server takes the fleet again, every process is granted turns by the database from the
 * second boundary on, at the latest.
 */
class RefusingServerTest {

  private static final Duration COOLDOWN = Duration.ofSeconds(1);
  private static final Duration GAP = Duration.ofMillis(10);
  private static final long SECOND = 1_000_000_000L;
  private static final String ROLE = "pacer_fleet";

  @Test
  void aFleetOverItsRolesConnectionLimitAtTheReturnIsBackWithinTwoBoundariesOfTheLift()
      throws Exception {
    try (RestartablePostgres postgres = new RestartablePostgres();
        TcpProxy proxy = new TcpProxy(postgres.port())) {
      administer(
          postgres,
          "CREATE ROLE " + ROLE + " LOGIN",
          "GRANT CREATE, USAGE ON SCHEMA public TO " + ROLE);
      Properties login = new Properties();
      login.setProperty("user", ROLE);
      List<FleetProcess> fleet = fleet(4, proxy, login);
      try {
        Rounds connected = Rounds.until(fleet, epochNanos() + SECOND);
        assertThat(connected.grantedByEach(epochNanos())).as("connected: %s", connected).isTrue();

        // Four processes of two connections each, three connections allowed.
        administer(postgres, "ALTER ROLE " + ROLE + " CONNECTION LIMIT 3");
        postgres.stopImmediately();
        postgres.start();
        long returned = epochNanos();
        long attemptsBefore = proxy.connectionsAccepted();
        Rounds limited = Rounds.until(fleet, returned + 7 * SECOND / 2);
        assertThat(limited.thrown()).as("nothing thrown").isEmpty();
        assertThat(limited.unavailableAfter(returned + 5 * SECOND / 2))
            .as("the limit still turns processes away: %s", limited)
            .isPositive();
        assertAtMostTwoAttemptsPerBoundary(
            proxy.connectionsAccepted() - attemptsBefore, fleet, returned);

        administer(postgres, "ALTER ROLE " + ROLE + " CONNECTION LIMIT -1");
        long lifted = epochNanos();
        assertBackWithinTwoBoundaries(fleet, lifted);
      } finally {
        fleet.forEach(FleetProcess::close);
      }
    }
  }

  @Test
  void aFleetFindingTheServerReadOnlyDegradesAndIsBackWithinTwoBoundariesOfItsWritableReturn()
      throws Exception {
    try (RestartablePostgres postgres = new RestartablePostgres();
        TcpProxy proxy = new TcpProxy(postgres.port())) {
      Properties login = new Properties();
      login.setProperty("user", "postgres");
      List<FleetProcess> fleet = fleet(3, proxy, login);
      try {
        Rounds connected = Rounds.until(fleet, epochNanos() + SECOND);
        assertThat(connected.grantedByEach(epochNanos())).as("connected: %s", connected).isTrue();

        postgres.stopImmediately();
        postgres.start(Map.of("default_transaction_read_only", "on"));
        long readOnly = epochNanos();
        long attemptsBefore = proxy.connectionsAccepted();
        Rounds refused = Rounds.until(fleet, readOnly + 7 * SECOND / 2);
        assertThat(refused.thrown()).as("nothing thrown").isEmpty();
        assertThat(refused.granted())
            .as("nothing granted by a server that takes no writes: %s", refused)
            .isZero();
        assertThat(refused.unavailableAfter(readOnly)).as("reservations answered").isPositive();
        assertAtMostTwoAttemptsPerBoundary(
            proxy.connectionsAccepted() - attemptsBefore, fleet, readOnly);

        postgres.stopImmediately();
        postgres.start();
        long writable = epochNanos();
        assertBackWithinTwoBoundaries(fleet, writable);
      } finally {
        fleet.forEach(FleetProcess::close);
      }
    }
  }

  /**
   * Each process's two connections are opened again after the restart, then at most again at each
   * boundary: a server that turns connections away is not asked in between.
   */
  private static void assertAtMostTwoAttemptsPerBoundary(
      long attempts, List<FleetProcess> fleet, long since) {
    long boundaries = RetryGrid.boundariesBetween(since, epochNanos(), COOLDOWN);
    System.out.printf(
        "refusing server test: %d connection attempts by %d processes over %d" + " boundaries%n",
        attempts, fleet.size(), boundaries);
    assertThat(attempts)
        .as("connection attempts over %d boundaries", boundaries)
        .isLessThanOrEqualTo(fleet.size() * 2 * (boundaries + 1));
  }

  /**
   * From {@code returned} on, every process is granted a turn by the second boundary after it, and
   * every turn in the second after that boundary is granted too.
   */
  private static void assertBackWithinTwoBoundaries(List<FleetProcess> fleet, long returned) {
    long secondBoundary =
        RetryGrid.boundaryAfter(RetryGrid.boundaryAfter(returned, COOLDOWN), COOLDOWN);
    Rounds back = Rounds.until(fleet, secondBoundary + SECOND);
    System.out.printf(
        "refusing server test: returned at %s, second boundary %s: %s%n",
        Instant.ofEpochSecond(0, returned), Instant.ofEpochSecond(0, secondBoundary), back);
    assertThat(back.thrown()).as("nothing thrown").isEmpty();
    assertThat(back.grantedByEach(secondBoundary))
        .as("each process granted by the database by the second boundary: %s", back)
        .isTrue();
    assertThat(back.unavailableAfter(secondBoundary))
        .as("no process pacing locally after it: %s", back)
        .isZero();
  }

  private static List<FleetProcess> fleet(int processes, TcpProxy proxy, Properties login) {
    String url = "jdbc:postgresql://127.0.0.1:" + proxy.port() + "/postgres";
    List<FleetProcess> fleet = new ArrayList<>();
    for (int i = 0; i < processes; i++) {
      fleet.add(new FleetProcess("process-" + i, url, login));
    }
    return fleet;
  }

  /** One process of the fleet: a cursor and fleet slots under one outage policy. */
  private static final class FleetProcess implements AutoCloseable {
    final String name;
    final PostgresCursor cursor;
    final PostgresFleetSlots slots;

    FleetProcess(String name, String url, Properties login) {
      this.name = name;
      OutagePolicy policy =
          new OutagePolicy(
              name, COOLDOWN, TimeSource.SYSTEM, OutagePolicy.Scheduler.none(), () -> {});
      PostgresCursorConfig config =
          PostgresCursorConfig.forUrl(url, login).outagePolicy(policy).build();
      this.cursor = new PostgresCursor(config);
      this.slots = new PostgresFleetSlots(config, policy, name, PostgresFleetSlots.DEFAULT_LEASE);
    }

    /** A slot poll, then a reservation: the poll is the first caller after a boundary. */
    Reservation round() {
      FleetSlots.Claim claim = slots.tryTake(name, 1);
      if (claim.outcome() == FleetSlots.Claim.Outcome.TAKEN) {
        claim.lease().giveBack();
      }
      return cursor.reserve(name, GAP);
    }

    @Override
    public void close() {
      slots.close();
      cursor.close();
    }
  }

  /** The reservations of rounds over the whole fleet, every 20 ms, with their instants. */
  private record Rounds(
      List<List<Long>> grantedAt, List<List<Long>> unavailableAt, List<Throwable> thrown) {

    static Rounds until(List<FleetProcess> fleet, long endEpochNanos) {
      Rounds rounds = new Rounds(new ArrayList<>(), new ArrayList<>(), new ArrayList<>());
      fleet.forEach(
          p -> {
            rounds.grantedAt.add(new ArrayList<>());
            rounds.unavailableAt.add(new ArrayList<>());
          });
      while (epochNanos() < endEpochNanos) {
        for (int i = 0; i < fleet.size(); i++) {
          try {
            Reservation r = fleet.get(i).round();
            (r.isGranted() ? rounds.grantedAt : rounds.unavailableAt).get(i).add(epochNanos());
          } catch (RuntimeException | Error e) {
            rounds.thrown.add(e);
          }
        }
        try {
          Thread.sleep(20);
        } catch (InterruptedException e) {
          throw new IllegalStateException(e);
        }
      }
      return rounds;
    }

    boolean grantedByEach(long epochNanos) {
      return grantedAt.stream().allMatch(g -> !g.isEmpty() && g.get(0) <= epochNanos);
    }

    long granted() {
      return grantedAt.stream().mapToLong(List::size).sum();
    }

    long unavailableAfter(long epochNanos) {
      return unavailableAt.stream().flatMap(List::stream).filter(t -> t > epochNanos).count();
    }

    @Override
    public String toString() {
      StringBuilder s = new StringBuilder();
      for (int i = 0; i < grantedAt.size(); i++) {
        List<Long> g = grantedAt.get(i);
        s.append(
            String.format(
                "process-%d: %d granted (first %s), %d unavailable; ",
                i,
                g.size(),
                g.isEmpty() ? "none" : Instant.ofEpochSecond(0, g.get(0)),
                unavailableAt.get(i).size()));
      }
      return s.append(thrown.size()).append(" thrown").toString();
    }
  }

  /** Runs each statement as the server's superuser, durably: the stop that follows is a crash. */
  private static void administer(RestartablePostgres postgres, String... statements)
      throws SQLException {
    try (Connection c = DriverManager.getConnection(postgres.jdbcUrl());
        Statement s = c.createStatement()) {
      for (String statement : statements) {
        s.execute(statement);
      }
      s.execute("CHECKPOINT");
    }
  }

  private static long epochNanos() {
    Instant now = Instant.now();
    return now.getEpochSecond() * SECOND + now.getNano();
  }
}
