package dev.pacer.postgres;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.pacer.Destination;
import dev.pacer.DestinationLimiter;
import dev.pacer.LimiterLookup;
import dev.pacer.LimiterRegistry;
import dev.pacer.LockedOutException;
import dev.pacer.Slot;
import dev.pacer.jdkhttp.PacedHttpClient;
import dev.pacer.testing.Arrival;
import dev.pacer.testing.Door;
import dev.pacer.testing.Timeline;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;
import org.assertj.core.api.SoftAssertions;
import org.junit.jupiter.api.Test;

/**
 * What the hold listener believes: only the rows. A notification on the channel, which any role
 * that can connect may send, says at most which destination to read again; the pause and the
 * lockout are what the tables say, capped at the destination's {@code maxRetryAfter}. And the
 * listener keeps hearing: through a half-open connection, a table named in capitals, a row whose
 * pause no read can convert.
 */
class HoldListenerTest {

  private static final String INTRUDER = "pacer_intruder";
  private static final double RATE = 10;
  private static final int RUN_MILLIS = 3000;
  private static final Duration MAX_RETRY_AFTER = Duration.ofSeconds(20);

  @Test
  void forgedAnnouncementsFromARoleThatCanOnlyConnectChangeNoArrivals() throws Exception {
    String name = fresh("forged");
    createIntruder();
    try (PostgresCursor a = TestDatabase.cursor(TableLayout.pacerTable());
        PostgresCursor b = TestDatabase.cursor(TableLayout.pacerTable());
        Door door = Door.start();
        Connection intruder = connectAs(INTRUDER)) {
      Destination d = destination(name);
      LimiterRegistry registryA = new LimiterRegistry(a);
      LimiterRegistry registryB = new LimiterRegistry(b);
      DestinationLimiter limiterA = registryA.limiter(d);
      DestinationLimiter limiterB = registryB.limiter(d);
      URI target = door.uri().resolve("/r");
      List<PacedHttpClient> clients = new ArrayList<>();
      for (LimiterRegistry registry : List.of(registryA, registryB)) {
        PacedHttpClient client =
            PacedHttpClient.builder(
                    HttpClient.newHttpClient(),
                    LimiterLookup.byHost(registry, host -> Optional.of(d)))
                .build();
        client.warmUp(target);
        clients.add(client);
      }
      assertThatThrownBy(
              () -> execute(intruder, "UPDATE pacer_cursor SET paused_until = 'infinity'"))
          .as("the intruder cannot write the rows the listener reads")
          .isInstanceOf(SQLException.class);

      List<String> forged =
          List.of(
              "P\t" + name + "\t9000000000000000",
              "P\t" + name + "\t9223372036854775807",
              "P\t" + name + "\t-9223372036854775808",
              "P\t" + name + "\t1000000",
              "L\t" + name + "\tforged lockout",
              "P\t" + name,
              "P\t" + name + "\tNaN",
              "\t\t\t",
              "",
              "X\t" + name + "\t1",
              "P\t" + name + "\t" + "9".repeat(7000));
      AtomicBoolean sending = new AtomicBoolean(true);
      ExecutorService pool = Executors.newFixedThreadPool(5);
      try {
        Future<Integer> flood =
            pool.submit(
                () -> {
                  int sent = 0;
                  try (PreparedStatement notify =
                      intruder.prepareStatement("SELECT pg_notify(?, ?)")) {
                    while (sending.get()) {
                      for (String payload : forged) {
                        notify.setString(1, "pacer_cursor_holds");
                        notify.setString(2, payload);
                        notify.executeQuery().close();
                        sent++;
                      }
                      Thread.sleep(20);
                    }
                  }
                  return sent;
                });
        long end = System.nanoTime() + Duration.ofMillis(RUN_MILLIS).toNanos();
        List<Future<Integer>> senders = new ArrayList<>();
        for (PacedHttpClient client :
            List.of(clients.get(0), clients.get(0), clients.get(1), clients.get(1))) {
          senders.add(
              pool.submit(
                  () -> {
                    int sent = 0;
                    while (System.nanoTime() < end) {
                      client.send(
                          HttpRequest.newBuilder(target).build(),
                          HttpResponse.BodyHandlers.discarding());
                      sent++;
                    }
                    return sent;
                  }));
        }
        int sent = 0;
        for (Future<Integer> s : senders) {
          sent += s.get();
        }
        sending.set(false);
        assertThat(flood.get()).as("forged notifications sent").isGreaterThan(forged.size() * 10);

        Timeline arrivals =
            new Timeline(
                door.arrivals().stream()
                    .filter(arrival -> arrival.path().equals("/r"))
                    .map(Arrival::nanos)
                    .toList());
        System.out.printf(
            "%d forged notifications beside a fleet at %.0f/s: at the door %s%n",
            flood.get(), RATE, arrivals);
        assertThat(arrivals.size()).as("arrivals against requests sent").isEqualTo(sent);
        assertThat(arrivals.peakOneSecondWindow())
            .as("busiest 1-s window, %s", arrivals)
            .isLessThanOrEqualTo((int) RATE + 1);
        assertThat(arrivals.size())
            .as("arrivals in %d ms at %.0f/s, %s", RUN_MILLIS, RATE, arrivals)
            .isGreaterThanOrEqualTo((int) (0.9 * RATE * RUN_MILLIS / 1000));
        assertThat(arrivals.aggregateRatePerSecond())
            .as("delivered rate, %s", arrivals)
            .isBetween(0.9 * RATE, 1.05 * RATE);
        for (DestinationLimiter limiter : List.of(limiterA, limiterB)) {
          assertThat(limiter.isLockedOut()).as("locked out by a notification").isFalse();
          assertThat(limiter.pauseLeft()).as("paused by a notification").isZero();
        }

        // The listener heard all along: a pause the process recorded reaches the other at once.
        limiterA.pause(Duration.ofSeconds(5));
        assertThat(eventually(Duration.ofSeconds(2), () -> limiterB.pauseLeft().toMillis() > 3000))
            .as("a recorded pause reaches the other process")
            .isTrue();
      } finally {
        sending.set(false);
        pool.shutdownNow();
      }
    }
  }

  @Test
  void aPauseTheRowHoldsIsCappedAndAnUnconvertibleOneStallsNothing() throws Exception {
    String capped = fresh("capped");
    String unreadable = fresh("unreadable");
    try (PostgresCursor a = TestDatabase.cursor(TableLayout.pacerTable());
        PostgresCursor b = TestDatabase.cursor(TableLayout.pacerTable())) {
      LimiterRegistry registryB = new LimiterRegistry(b);
      DestinationLimiter heardCapped = registryB.limiter(destination(capped));
      DestinationLimiter heardUnreadable = registryB.limiter(destination(unreadable));
      DestinationLimiter lockingOut = new LimiterRegistry(a).limiter(destination(unreadable));
      assertThat(a.reserve(capped, Duration.ofMillis(1)).isGranted()).isTrue();
      assertThat(a.reserve(unreadable, Duration.ofMillis(1)).isGranted()).isTrue();
      // A writer with rights on the table, not Pacer: a pause of a century, and one of infinity.
      TestDatabase.execute(
          "UPDATE pacer_cursor SET paused_until = now() + interval '100 years'"
              + " WHERE name = '"
              + capped
              + "'");
      TestDatabase.execute(
          "UPDATE pacer_cursor SET paused_until = 'infinity'"
              + " WHERE name = '"
              + unreadable
              + "'");
      TestDatabase.execute(
          "SELECT pg_notify('pacer_cursor_holds', 'P' || chr(9) || '"
              + capped
              + "' || chr(9) || '1'), pg_notify('pacer_cursor_holds', 'P' || chr(9) || '"
              + unreadable
              + "' || chr(9) || '1')");
      assertThat(eventually(Duration.ofSeconds(2), () -> heardCapped.pauseLeft().toMillis() > 0))
          .as("the row's pause is heard")
          .isTrue();
      assertThat(heardCapped.pauseLeft())
          .as("capped at maxRetryAfter")
          .isLessThanOrEqualTo(MAX_RETRY_AFTER);
      assertThat(
              eventually(Duration.ofSeconds(2), () -> heardUnreadable.pauseLeft().toMillis() > 0))
          .as("an infinite pause is heard as the longest allowed")
          .isTrue();
      assertThat(heardUnreadable.pauseLeft()).isLessThanOrEqualTo(MAX_RETRY_AFTER);

      lockingOut.lockOut("HTTP 403 from https://example.org/");
      assertThat(eventually(Duration.ofSeconds(2), heardUnreadable::isLockedOut))
          .as("the listener still hears after reading those rows")
          .isTrue();
      assertThat(heardUnreadable.lockoutReason()).isEqualTo("HTTP 403 from https://example.org/");
    }
  }

  @Test
  void aTableNamedInCapitalsIsHeard() throws Exception {
    String table = "Pacer_Caps_" + UUID.randomUUID().toString().substring(0, 6);
    String name = fresh("caps");
    try (PostgresCursor a = TestDatabase.cursor(TableLayout.pacerTable(table));
        PostgresCursor b = TestDatabase.cursor(TableLayout.pacerTable(table))) {
      assertThat(a.reserve(name, Duration.ofMillis(1)).isGranted()).isTrue();
      assertThat(b.reserve(name, Duration.ofMillis(1)).isGranted()).isTrue();
      DestinationLimiter pausing = new LimiterRegistry(a).limiter(destination(name));
      DestinationLimiter hearing = new LimiterRegistry(b).limiter(destination(name));
      // Long enough for the listener to have connected and read the row: only the notification
      // can bring the pause below.
      Thread.sleep(1500);
      pausing.pause(Duration.ofSeconds(10));
      assertThat(eventually(Duration.ofMillis(500), () -> hearing.pauseLeft().toMillis() > 5000))
          .as("a pause on table %s reaches the other process", table)
          .isTrue();
    }
  }

  @Test
  void aHalfOpenListenerConnectionIsFoundAndReplaced() throws Exception {
    String name = fresh("half-open");
    try (TcpProxy proxy = new TcpProxy(TestDatabase.port());
        PostgresCursor direct = TestDatabase.cursor(TableLayout.pacerTable());
        PostgresCursor proxied =
            new PostgresCursor(
                PostgresCursorConfig.forUrl(
                        "jdbc:postgresql://127.0.0.1:" + proxy.port() + "/postgres?user=postgres")
                    .build())) {
      DestinationLimiter pausing = new LimiterRegistry(direct).limiter(destination(name));
      DestinationLimiter hearing = new LimiterRegistry(proxied).limiter(destination(name));
      pausing.pause(Duration.ofMillis(500));
      assertThat(eventually(Duration.ofSeconds(2), () -> hearing.pauseLeft().toMillis() > 0))
          .as("heard through the proxy")
          .isTrue();

      proxy.silenceOpen();
      assertThat(eventually(Duration.ofSeconds(2), () -> hearing.pauseLeft().isZero())).isTrue();
      pausing.pause(Duration.ofSeconds(MAX_RETRY_AFTER.toSeconds()));
      // The announcement is lost with the connection: only a new one, reading the row, hears it.
      assertThat(eventually(Duration.ofSeconds(12), () -> hearing.pauseLeft().toMillis() > 0))
          .as("a pause recorded while the listener's connection was half-open")
          .isTrue();
    }
  }

  /**
   * Two cursors, as two processes have, each with its own connections through a real PgBouncer in
   * transaction mode, where no notification reaches the other's listener: the pause one records
   * reaches the other within half a second, and the turn the other was granted before it, due
   * inside the pause, is held until the pause ends.
   */
  @Test
  void aPauseRecordedBehindATransactionPoolerReachesTheOtherProcessAndHoldsItsGrantedTurn()
      throws Exception {
    String name = fresh("pooled-pause");
    Destination everyTwoSeconds =
        Destination.builder(name)
            .ratePerSecond(0.5)
            .maxConcurrency(2)
            .maxFetchingProcesses(2)
            .maxRetryAfter(MAX_RETRY_AFTER)
            .build();
    Duration pause = Duration.ofSeconds(3);
    ExecutorService thread = Executors.newSingleThreadExecutor();
    try (PgBouncer pooler = PgBouncer.transactionMode(TestDatabase.port(), 2);
        PostgresCursor a = throughThePooler(pooler);
        PostgresCursor b = throughThePooler(pooler)) {
      DestinationLimiter pausing = new LimiterRegistry(a).limiter(everyTwoSeconds);
      DestinationLimiter hearing = new LimiterRegistry(b).limiter(everyTwoSeconds);
      hearing.acquire().close();
      long reservationsBefore = b.reservationStatements();
      Future<Long> wentOut =
          thread.submit(
              () -> {
                try (Slot turn = hearing.acquire()) {
                  return System.nanoTime();
                }
              });
      assertThat(
              eventually(
                  Duration.ofSeconds(2), () -> b.reservationStatements() > reservationsBefore))
          .as("the other process's second turn, 2 s after its first, granted")
          .isTrue();

      long pausedAt = System.nanoTime();
      pausing.pause(pause);
      Optional<Duration> heard =
          heldAfter(
              pausedAt,
              Duration.ofSeconds(2),
              () -> hearing.pauseLeft().compareTo(pause.minusSeconds(1)) > 0);
      long out = wentOut.get(10, TimeUnit.SECONDS);
      SoftAssertions softly = new SoftAssertions();
      softly
          .assertThat(heard)
          .as("from the pause's recording to the other process's hearing it")
          .hasValueSatisfying(d -> assertThat(d).isLessThanOrEqualTo(Duration.ofMillis(500)));
      softly
          .assertThat(Duration.ofNanos(out - pausedAt))
          .as("from the pause's recording to the granted turn's going out")
          .isGreaterThanOrEqualTo(pause);
      softly.assertThat(hearing.turnsHeldForPause()).as("turns held for the pause").isEqualTo(1);
      softly.assertAll();
    } finally {
      thread.shutdownNow();
    }
  }

  /**
   * The same through the pooler for a lockout: it reaches the other process within half a second,
   * and the turn that process was granted before it never goes out.
   */
  @Test
  void aLockoutRecordedBehindATransactionPoolerReachesTheOtherProcess() throws Exception {
    String name = fresh("pooled-lockout");
    Destination everyTwoSeconds =
        Destination.builder(name)
            .ratePerSecond(0.5)
            .maxConcurrency(2)
            .maxFetchingProcesses(2)
            .maxRetryAfter(MAX_RETRY_AFTER)
            .build();
    String reason = "HTTP 403 from https://example.org/";
    ExecutorService thread = Executors.newSingleThreadExecutor();
    try (PgBouncer pooler = PgBouncer.transactionMode(TestDatabase.port(), 2);
        PostgresCursor a = throughThePooler(pooler);
        PostgresCursor b = throughThePooler(pooler)) {
      DestinationLimiter lockingOut = new LimiterRegistry(a).limiter(everyTwoSeconds);
      DestinationLimiter hearing = new LimiterRegistry(b).limiter(everyTwoSeconds);
      hearing.acquire().close();
      long reservationsBefore = b.reservationStatements();
      Future<?> granted =
          thread.submit(
              () -> {
                hearing.acquire().close();
                return null;
              });
      assertThat(
              eventually(
                  Duration.ofSeconds(2), () -> b.reservationStatements() > reservationsBefore))
          .as("the other process's second turn, 2 s after its first, granted")
          .isTrue();

      long lockedAt = System.nanoTime();
      lockingOut.lockOut(reason);
      Optional<Duration> heard = heldAfter(lockedAt, Duration.ofSeconds(2), hearing::isLockedOut);
      Throwable met = null;
      try {
        granted.get(10, TimeUnit.SECONDS);
      } catch (ExecutionException e) {
        met = e.getCause();
      }
      SoftAssertions softly = new SoftAssertions();
      softly
          .assertThat(heard)
          .as("from the lockout's recording to the other process's hearing it")
          .hasValueSatisfying(d -> assertThat(d).isLessThanOrEqualTo(Duration.ofMillis(500)));
      softly.assertThat(hearing.lockoutReason()).isEqualTo(reason);
      softly
          .assertThat(met)
          .as("what the turn granted before the lockout met, instead of going out")
          .isInstanceOf(LockedOutException.class);
      softly.assertAll();
    } finally {
      thread.shutdownNow();
    }
  }

  /**
   * Connected with a server process of its own, through a proxy that passes on no notification: the
   * listener's own NOTIFY does not come back, so it polls, and a pause recorded after that reaches
   * it within half a second.
   */
  @Test
  void aListenerWhoseOwnNotificationDoesNotComeBackHearsAPauseAllTheSame() throws Exception {
    String name = fresh("unnotified");
    try (TcpProxy proxy = new TcpProxy(TestDatabase.port());
        PostgresCursor direct = TestDatabase.cursor(TableLayout.pacerTable())) {
      proxy.dropNotifications();
      try (PostgresCursor proxied =
          new PostgresCursor(
              PostgresCursorConfig.forUrl(
                      "jdbc:postgresql://127.0.0.1:"
                          + proxy.port()
                          + "/postgres?user=postgres"
                          + "&sslmode=disable&gssEncMode=disable")
                  .build())) {
        DestinationLimiter pausing = new LimiterRegistry(direct).limiter(destination(name));
        DestinationLimiter hearing = new LimiterRegistry(proxied).limiter(destination(name));
        // Long enough for the listener to have waited for its own notification in vain.
        Thread.sleep(2000);
        long pausedAt = System.nanoTime();
        pausing.pause(Duration.ofSeconds(5));
        assertThat(
                heldAfter(
                    pausedAt, Duration.ofSeconds(2), () -> hearing.pauseLeft().toMillis() > 3000))
            .as("from the pause's recording to the proxied process's hearing it")
            .hasValueSatisfying(d -> assertThat(d).isLessThanOrEqualTo(Duration.ofMillis(500)));
      }
    }
  }

  private static PostgresCursor throughThePooler(PgBouncer pooler) {
    return new PostgresCursor(PostgresCursorConfig.forUrl(pooler.jdbcUrl()).build());
  }

  @Test
  void aPooledListenerConnectionGoesBackListeningToNothing() throws Exception {
    String name = fresh("pooled");
    List<Connection> lent = new ArrayList<>();
    DataSourceAdapter pool =
        new DataSourceAdapter() {
          @Override
          public Connection getConnection() throws SQLException {
            Connection c = TestDatabase.connect();
            synchronized (lent) {
              lent.add(c);
            }
            return keptOpenOnClose(c);
          }
        };
    try (PostgresCursor cursor =
        new PostgresCursor(PostgresCursorConfig.forDataSource(pool).build())) {
      new LimiterRegistry(cursor).limiter(destination(name));
      assertThat(eventually(Duration.ofSeconds(2), () -> anyListening(lent))).isTrue();
    }
    assertThat(eventually(Duration.ofSeconds(2), () -> !anyListening(lent)))
        .as("a connection lent back to the pool still listening")
        .isTrue();
    for (Connection c : lent) {
      c.close();
    }
  }

  /** A pool's connection: its close() gives it back, here by leaving it open. */
  private static Connection keptOpenOnClose(Connection real) {
    return (Connection)
        Proxy.newProxyInstance(
            Connection.class.getClassLoader(),
            new Class<?>[] {Connection.class},
            (proxy, method, args) -> {
              if (method.getName().equals("close")) {
                return null;
              }
              try {
                return method.invoke(real, args);
              } catch (InvocationTargetException e) {
                throw e.getCause();
              }
            });
  }

  private static boolean anyListening(List<Connection> connections) {
    synchronized (connections) {
      for (Connection c : connections) {
        try (Statement s = c.createStatement();
            ResultSet r = s.executeQuery("SELECT count(*) FROM pg_listening_channels()")) {
          r.next();
          if (r.getInt(1) > 0) {
            return true;
          }
        } catch (SQLException e) {
          throw new IllegalStateException(e);
        }
      }
    }
    return false;
  }

  private static Destination destination(String name) {
    return Destination.builder(name)
        .ratePerSecond(RATE)
        .maxConcurrency(2)
        .maxFetchingProcesses(2)
        .maxRetryAfter(MAX_RETRY_AFTER)
        .build();
  }

  private static String fresh(String prefix) {
    return prefix + "-" + UUID.randomUUID().toString().substring(0, 8);
  }

  private static void createIntruder() {
    TestDatabase.execute(
        "DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '"
            + INTRUDER
            + "') THEN CREATE ROLE "
            + INTRUDER
            + " LOGIN; END IF; END $$");
  }

  private static Connection connectAs(String role) throws SQLException {
    Properties props = new Properties();
    props.setProperty("user", role);
    return DriverManager.getConnection(
        "jdbc:postgresql://127.0.0.1:" + TestDatabase.port() + "/postgres", props);
  }

  private static void execute(Connection c, String sql) throws SQLException {
    try (Statement s = c.createStatement()) {
      s.execute(sql);
    }
  }

  /**
   * How long after {@code sinceNanos} {@code condition} first held, polled every millisecond on the
   * wall clock; empty if it did not hold within {@code within}.
   */
  private static Optional<Duration> heldAfter(
      long sinceNanos, Duration within, BooleanSupplier condition) throws InterruptedException {
    long deadline = System.nanoTime() + within.toNanos();
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        return Optional.empty();
      }
      Thread.sleep(1);
    }
    return Optional.of(Duration.ofNanos(System.nanoTime() - sinceNanos));
  }

  /** Polls {@code condition} on the wall clock until it holds or {@code within} has passed. */
  private static boolean eventually(Duration within, BooleanSupplier condition)
      throws InterruptedException {
    long deadline = System.nanoTime() + within.toNanos();
    while (System.nanoTime() < deadline) {
      if (condition.getAsBoolean()) {
        return true;
      }
      Thread.sleep(20);
    }
    return condition.getAsBoolean();
  }
}
