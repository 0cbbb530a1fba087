package dev.pacer.spring;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import dev.pacer.BackoffScope;
import dev.pacer.Destination;
import dev.pacer.DestinationLimiter;
import dev.pacer.LimiterRegistry;
import dev.pacer.LocalCursor;
import dev.pacer.Slot;
import dev.pacer.postgres.PostgresCursor;
import dev.pacer.postgres.PostgresFleetSlots;
import dev.pacer.postgres.TableLayout;
import dev.pacer.postgres.TestDatabase;
import dev.pacer.spi.Cursor;
import dev.pacer.spi.FleetSlots;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/**
 * The auto-configuration on a real PostgreSQL: which beans it makes and when it backs off, every
 * property bound, bad values refused at start-up by name, and where the cursor's connections come
 * from and go back to.
 */
class PacerAutoConfigurationTest {

  private static final Duration SETTLE = Duration.ofSeconds(5);

  private final ApplicationContextRunner runner =
      new ApplicationContextRunner()
          .withConfiguration(AutoConfigurations.of(PacerAutoConfiguration.class));

  private static String freshName() {
    return "sb-" + UUID.randomUUID().toString().substring(0, 8);
  }

  @Test
  void withTheApplicationsDataSourceTheCursorHoldsTwoPooledConnectionsAndGivesThemBackOnClose()
      throws Exception {
    String api = freshName();
    try (HikariDataSource pool = Pools.pool(5)) {
      // Not closed with the context (as an application's own pool would be, after the cursor), so
      // that what the cursor left borrowed can be counted afterwards.
      runner
          .withBean(DataSource.class, () -> pool, bd -> bd.setDestroyMethodName(""))
          .withPropertyValues("pacer.destinations[" + api + "].rate-per-second=50")
          .run(
              context -> {
                assertThat(context)
                    .hasSingleBean(PostgresCursor.class)
                    .hasSingleBean(PostgresFleetSlots.class)
                    .hasSingleBean(LimiterRegistry.class)
                    .hasSingleBean(PacerDestinations.class);
                DestinationLimiter limiter = context.getBean(PacerDestinations.class).limiter(api);
                assertThat(limiter)
                    .isSameAs(
                        context.getBean(LimiterRegistry.class).limiter(limiter.destination()));
                try (Slot slot = limiter.acquire()) {
                  assertThat(limiter.isDegraded()).as("paced on the shared cursor").isFalse();
                }
                assertThat(context.getBean(PostgresCursor.class).failureCount()).isZero();
                // The cursor's session and its listener's, borrowed for the application's life; the
                // fleet slots open none until a capped destination asks.
                assertThat(
                        Pools.settlesTo(
                            2, SETTLE, () -> pool.getHikariPoolMXBean().getActiveConnections()))
                    .as("pooled connections held")
                    .isEqualTo(2);
              });
      assertThat(pool.isClosed()).as("the application's pool outlives the test context").isFalse();
      assertThat(
              Pools.settlesTo(0, SETTLE, () -> pool.getHikariPoolMXBean().getActiveConnections()))
          .as("pooled connections held after the context closed")
          .isEqualTo(0);
    }
  }

  /** A destination capped fleet-wide costs the pool one connection more: the fleet slots'. */
  @Test
  void aFleetWideCapBorrowsAThirdConnectionAtItsFirstRequest() throws Exception {
    String capped = freshName();
    try (HikariDataSource pool = Pools.pool(5)) {
      runner
          .withBean(DataSource.class, () -> pool, bd -> bd.setDestroyMethodName(""))
          .withPropertyValues(
              "pacer.destinations[" + capped + "].rate-per-second=50",
              "pacer.destinations[" + capped + "].max-concurrency-fleet-wide=2")
          .run(
              context -> {
                assertThat(
                        Pools.settlesTo(
                            2, SETTLE, () -> pool.getHikariPoolMXBean().getActiveConnections()))
                    .as("before the first capped request")
                    .isEqualTo(2);
                DestinationLimiter limiter =
                    context.getBean(PacerDestinations.class).limiter(capped);
                try (Slot slot = limiter.acquire()) {
                  assertThat(limiter.isDegraded()).isFalse();
                }
                assertThat(pool.getHikariPoolMXBean().getActiveConnections())
                    .as("cursor, listener and fleet slots")
                    .isEqualTo(3);
              });
      assertThat(
              Pools.settlesTo(0, SETTLE, () -> pool.getHikariPoolMXBean().getActiveConnections()))
          .as("after the context closed")
          .isEqualTo(0);
    }
  }

  @Test
  void pacerDatasourceUrlWinsOverTheDataSourceAndLeavesThePoolAlone() throws Exception {
    String api = freshName();
    try (HikariDataSource pool = Pools.pool(5)) {
      runner
          .withBean(DataSource.class, () -> pool)
          .withPropertyValues(
              "pacer.datasource.url=" + Pools.url(),
              "pacer.datasource.username=postgres",
              "pacer.datasource.password=unused-here",
              "pacer.destinations[" + api + "].rate-per-second=50")
          .run(
              context -> {
                DestinationLimiter limiter = context.getBean(PacerDestinations.class).limiter(api);
                try (Slot slot = limiter.acquire()) {
                  assertThat(limiter.isDegraded()).isFalse();
                }
                assertThat(pool.getHikariPoolMXBean().getTotalConnections())
                    .as("connections the pool ever opened")
                    .isZero();
                assertThat(Pools.settlesTo(1, SETTLE, () -> Pools.sessions("pacer-cursor")))
                    .as("the cursor's own session")
                    .isEqualTo(1);
                assertThat(Pools.settlesTo(1, SETTLE, () -> Pools.sessions("pacer-listener")))
                    .as("the cursor's listener's session")
                    .isEqualTo(1);
              });
      assertThat(
              Pools.settlesTo(
                  0,
                  SETTLE,
                  () -> Pools.sessions("pacer-cursor") + Pools.sessions("pacer-listener")))
          .as("sessions left after the context closed")
          .isZero();
    }
  }

  @Test
  void withoutADataSourceOrAUrlStartUpFailsSayingWhatToSet() {
    runner.run(
        context ->
            assertThat(messages(context.getStartupFailure()))
                .contains("set pacer.datasource.url")
                .contains("or give the application a DataSource"));
  }

  @Test
  void severalDataSourcesWithoutAPrimaryAreRefusedByName() throws Exception {
    try (HikariDataSource a = Pools.pool(2);
        HikariDataSource b = Pools.pool(2)) {
      runner
          .withBean("a", DataSource.class, () -> a)
          .withBean("b", DataSource.class, () -> b)
          .run(
              context ->
                  assertThat(messages(context.getStartupFailure()))
                      .contains(
                          "several with none primary: mark one @Primary, or set"
                              + " pacer.datasource.url"));
    }
  }

  @Test
  void everyBeanBacksOffForTheApplicationsOwn() {
    LocalCursor cursor = new LocalCursor();
    runner
        .withBean(Cursor.class, () -> cursor)
        .withPropertyValues("pacer.destinations.api.rate-per-second=5")
        .run(
            context -> {
              assertThat(context)
                  .hasSingleBean(Cursor.class)
                  .doesNotHaveBean(PostgresCursor.class)
                  .doesNotHaveBean(FleetSlots.class);
              assertThat(context.getBean(PacerDestinations.class).limiter("api").isDegraded())
                  .isFalse();
            });
    LimiterRegistry registry = new LimiterRegistry(cursor);
    PacerDestinations destinations = new PacerDestinations(registry, Map.of());
    runner
        .withBean(LimiterRegistry.class, () -> registry)
        .withBean(PacerDestinations.class, () -> destinations)
        .withBean(Cursor.class, () -> cursor)
        .withPropertyValues("pacer.destinations.api.rate-per-second=5")
        .run(
            context -> {
              assertThat(context.getBean(LimiterRegistry.class)).isSameAs(registry);
              assertThat(context.getBean(PacerDestinations.class)).isSameAs(destinations);
            });
    FleetSlots slots = (destination, n) -> FleetSlots.Claim.unavailable();
    try (HikariDataSource pool = Pools.pool(3)) {
      runner
          .withBean(DataSource.class, () -> pool)
          .withBean(FleetSlots.class, () -> slots)
          .run(
              context ->
                  assertThat(context)
                      .hasSingleBean(FleetSlots.class)
                      .doesNotHaveBean(PostgresFleetSlots.class));
    }
  }

  @Test
  void everyDestinationFieldIsBoundFromItsProperty() {
    String name = "images.example.com";
    String p = "pacer.destinations[" + name + "].";
    runner
        .withBean(Cursor.class, LocalCursor::new)
        .withBean(FleetSlots.class, () -> (destination, n) -> FleetSlots.Claim.unavailable())
        .withPropertyValues(
            p + "rate-per-second=7.5",
            p + "max-concurrency=6",
            p + "max-concurrency-fleet-wide=4",
            p + "max-fetching-processes=3",
            p + "lockout-status-codes=401,403",
            p + "backoff-status-codes=429,503,509",
            p + "backoff-scope=fleet",
            p + "max-retry-after=90s",
            "pacer.destinations.plain.rate-per-second=2",
            "pacer.destinations.nolockout.rate-per-second=2",
            "pacer.destinations.nolockout.lockout-status-codes=",
            p + "hosts=images.example.com,IMG.example.com",
            "pacer.destinations[api/v2].rate-per-second=1")
        .run(
            context -> {
              PacerDestinations destinations = context.getBean(PacerDestinations.class);
              assertThat(destinations.names())
                  .containsExactly(name, "plain", "nolockout", "api/v2");
              assertThat(destinations.limiter(name).destination())
                  .isEqualTo(
                      Destination.builder(name)
                          .ratePerSecond(7.5)
                          .maxConcurrency(6)
                          .maxConcurrencyFleetWide(4)
                          .maxFetchingProcesses(3)
                          .lockoutStatusCodes(Set.of(401, 403))
                          .backoffStatusCodes(Set.of(429, 503, 509))
                          .backoffScope(BackoffScope.FLEET)
                          .maxRetryAfter(Duration.ofSeconds(90))
                          .build());
              assertThat(destinations.limiter("plain").destination())
                  .as("the builder's defaults for what is unset")
                  .isEqualTo(Destination.builder("plain").ratePerSecond(2).build());
              assertThat(destinations.limiter("nolockout").destination().lockoutStatusCodes())
                  .isEmpty();
              assertThat(destinations.destinationForHost("img.example.com").orElseThrow().name())
                  .isEqualTo(name);
              assertThat(destinations.destinationForHost("Images.Example.com").orElseThrow().name())
                  .isEqualTo(name);
              assertThat(destinations.destinationForHost("plain").orElseThrow().name())
                  .as("a destination's name is its host by default")
                  .isEqualTo("plain");
              assertThat(destinations.destinationForHost("api/v2"))
                  .as("a name that is no host paces none")
                  .isEmpty();
              assertThat(destinations.destinationForHost("example.com")).isEmpty();
            });
  }

  @Test
  void theCursorsTableLayoutAndTimingsAreBound() throws Exception {
    String table = "django_cache_" + UUID.randomUUID().toString().substring(0, 8);
    TestDatabase.createDjangoCacheTable(table);
    try (HikariDataSource pool = Pools.pool(3)) {
      runner
          .withBean(DataSource.class, () -> pool)
          .withPropertyValues(
              "pacer.cursor.layout=django-cache",
              "pacer.cursor.table=" + table,
              "pacer.cursor.operation-timeout=750ms",
              "pacer.cursor.failure-cooldown=3s",
              "pacer.cursor.reset-beyond=2h",
              "pacer.cursor.synchronous-commit=true",
              "pacer.destinations.shared.rate-per-second=20")
          .run(
              context -> {
                PostgresCursor cursor = context.getBean(PostgresCursor.class);
                assertThat(cursor.config().layout().toString())
                    .isEqualTo(TableLayout.djangoCache(table).toString());
                assertThat(cursor.config().operationTimeout()).isEqualTo(Duration.ofMillis(750));
                assertThat(cursor.config().failureCooldown()).isEqualTo(Duration.ofSeconds(3));
                assertThat(cursor.config().resetBeyond()).isEqualTo(Duration.ofHours(2));
                assertThat(cursor.config().synchronousCommit()).isTrue();
                DestinationLimiter limiter =
                    context.getBean(PacerDestinations.class).limiter("shared");
                limiter.acquire().close();
                assertThat(limiter.isDegraded()).isFalse();
              });
      assertThat(rows(table, TableLayout.DEFAULT_KEY_PREFIX + "shared"))
          .as("the cursor row, where a Python fleet reads it")
          .isEqualTo(1);
    }
  }

  @Test
  void aPacerTableOfAnotherNameIsCreatedAndUsed() throws Exception {
    String table = "pacer_cursor_" + UUID.randomUUID().toString().substring(0, 8);
    try (HikariDataSource pool = Pools.pool(3)) {
      runner
          .withBean(DataSource.class, () -> pool)
          .withPropertyValues(
              "pacer.cursor.table=" + table, "pacer.destinations.own.rate-per-second=20")
          .run(
              context -> context.getBean(PacerDestinations.class).limiter("own").acquire().close());
      assertThat(rows(table, "own")).isEqualTo(1);
    }
  }

  private static int rows(String table, String key) {
    String keyColumn = table.startsWith("django") ? "cache_key" : "name";
    try (var c = TestDatabase.connect();
        var s =
            c.prepareStatement("SELECT count(*) FROM " + table + " WHERE " + keyColumn + " = ?")) {
      s.setString(1, key);
      try (var r = s.executeQuery()) {
        r.next();
        return r.getInt(1);
      }
    } catch (java.sql.SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  /**
   * Every message down the cause chain, one per line: what a start-up failure tells the operator.
   */
  static String messages(Throwable failure) {
    assertThat(failure).as("start-up failed").isNotNull();
    StringBuilder all = new StringBuilder();
    for (Throwable t = failure; t != null; t = t.getCause()) {
      all.append(t.getMessage()).append('\n');
    }
    return all.toString();
  }
}
