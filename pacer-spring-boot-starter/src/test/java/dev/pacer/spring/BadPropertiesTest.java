package dev.pacer.spring;

import static dev.pacer.spring.PacerAutoConfigurationTest.messages;
import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import dev.pacer.LocalCursor;
import dev.pacer.spi.Cursor;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.stream.Stream;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/**
 * A bad value under {@code pacer.*} stops the application at start-up, with the property's name
 * and, in the builder's words, what was wrong with the value; and the password of {@code
 * pacer.datasource} is never printed, whatever fails.
 */
class BadPropertiesTest {

  private final ApplicationContextRunner runner =
      new ApplicationContextRunner()
          .withConfiguration(AutoConfigurations.of(PacerAutoConfiguration.class));

  static Stream<Arguments> badDestinationValues() {
    String api = "pacer.destinations.api.";
    return Stream.of(
        Arguments.of(
            api + "rate-per-second=-2",
            "pacer.destinations[api].rate-per-second: ratePerSecond must be finite, > 0 and"
                + " <= 1000000, got -2.0"),
        Arguments.of(
            api + "rate-per-second=2000000",
            "pacer.destinations[api].rate-per-second: ratePerSecond must be finite, > 0 and"
                + " <= 1000000, got 2000000.0"),
        Arguments.of(
            api + "max-concurrency=0",
            "pacer.destinations[api].max-concurrency: maxConcurrency must be >= 1, got 0"),
        Arguments.of(
            api + "max-concurrency-fleet-wide=-1",
            "pacer.destinations[api].max-concurrency-fleet-wide: maxConcurrencyFleetWide must be"
                + " >= 1, got -1"),
        Arguments.of(
            api + "max-fetching-processes=0",
            "pacer.destinations[api].max-fetching-processes: maxFetchingProcesses must be >= 1,"
                + " got 0"),
        Arguments.of(
            api + "lockout-status-codes=403,700",
            "pacer.destinations[api].lockout-status-codes: lockoutStatusCodes must hold HTTP"
                + " status codes 100-599, got 700"),
        Arguments.of(
            api + "backoff-status-codes=99",
            "pacer.destinations[api].backoff-status-codes: backoffStatusCodes must hold HTTP"
                + " status codes 100-599, got 99"),
        Arguments.of(
            api + "backoff-status-codes=403,429",
            "pacer.destinations[api]: status code 403 is in both lockoutStatusCodes and"
                + " backoffStatusCodes"),
        Arguments.of(
            api + "max-retry-after=2d",
            "pacer.destinations[api].max-retry-after: maxRetryAfter must be > 0 and at most a"
                + " day, got PT48H"),
        Arguments.of(
            api + "max-retry-after=0s",
            "pacer.destinations[api].max-retry-after: maxRetryAfter must be > 0 and at most a"
                + " day, got PT0S"));
  }

  @ParameterizedTest
  @MethodSource("badDestinationValues")
  void aBadDestinationValueStopsStartUpNamingTheProperty(String property, String message) {
    String[] values =
        property.contains("rate-per-second")
            ? new String[] {property}
            : new String[] {"pacer.destinations.api.rate-per-second=5", property};
    runner
        .withBean(Cursor.class, LocalCursor::new)
        .withPropertyValues(values)
        .run(context -> assertThat(messages(context.getStartupFailure())).contains(message));
  }

  @Test
  void aDestinationWithoutItsCeilingStopsStartUp() {
    runner
        .withBean(Cursor.class, LocalCursor::new)
        .withPropertyValues("pacer.destinations.api.max-concurrency=3")
        .run(
            context ->
                assertThat(messages(context.getStartupFailure()))
                    .contains("pacer.destinations[api].rate-per-second must be set"));
  }

  @Test
  void aBadDestinationNameStopsStartUpQuotingIt() {
    runner
        .withBean(Cursor.class, LocalCursor::new)
        .withPropertyValues("pacer.destinations[bad\tname].rate-per-second=3")
        .run(
            context ->
                assertThat(messages(context.getStartupFailure()))
                    .contains(
                        "pacer.destinations[bad\tname]: destination name must be printable with"
                            + " no whitespace"));
  }

  @Test
  void aHostOfTwoDestinationsOrNoHostAtAllStopsStartUp() {
    runner
        .withBean(Cursor.class, LocalCursor::new)
        .withPropertyValues(
            "pacer.destinations.a.rate-per-second=1",
            "pacer.destinations.a.hosts=api.example.com",
            "pacer.destinations.b.rate-per-second=1",
            "pacer.destinations.b.hosts=API.example.com")
        .run(
            context ->
                assertThat(messages(context.getStartupFailure()))
                    .contains("host api.example.com is paced by two destinations, a and b"));
    runner
        .withBean(Cursor.class, LocalCursor::new)
        .withPropertyValues(
            "pacer.destinations.a.rate-per-second=1",
            "pacer.destinations.a.hosts=https://api.example.com/v1")
        .run(
            context ->
                assertThat(messages(context.getStartupFailure()))
                    .contains(
                        "pacer.destinations[a].hosts: a host name without scheme, port, path or"
                            + " whitespace, got \"https://api.example.com/v1\""));
  }

  @Test
  void aValueOfTheWrongTypeStopsStartUpNamingTheProperty() {
    runner
        .withBean(Cursor.class, LocalCursor::new)
        .withPropertyValues("pacer.destinations.api.rate-per-second=fast")
        .run(
            context ->
                assertThat(messages(context.getStartupFailure()))
                    .contains("pacer.destinations.api.rate-per-second")
                    .contains("fast"));
    runner
        .withBean(Cursor.class, LocalCursor::new)
        .withPropertyValues(
            "pacer.destinations.api.rate-per-second=1",
            "pacer.destinations.api.backoff-scope=everywhere")
        .run(
            context ->
                assertThat(messages(context.getStartupFailure()))
                    .contains("pacer.destinations.api.backoff-scope")
                    .contains("everywhere"));
  }

  @Test
  void aFleetBackoffOnAKeyValueTableIsRefusedNamingTheDestination() throws Exception {
    String table = "django_cache_kv";
    dev.pacer.postgres.TestDatabase.createDjangoCacheTable(table);
    try (HikariDataSource pool = Pools.pool(3)) {
      runner
          .withBean(DataSource.class, () -> pool)
          .withPropertyValues(
              "pacer.cursor.layout=django-cache",
              "pacer.cursor.table=" + table,
              "pacer.destinations.api.rate-per-second=1",
              "pacer.destinations.api.backoff-scope=fleet")
          .run(
              context ->
                  assertThat(messages(context.getStartupFailure()))
                      .contains(
                          "destination api: backoffScope FLEET needs a cursor that keeps the"
                              + " fleet's backoff multiplier"));
    }
  }

  static Stream<Arguments> badCursorValues() {
    return Stream.of(
        Arguments.of(
            "pacer.cursor.table=pacer; DROP TABLE x",
            "pacer.cursor (layout PACER_TABLE): table must"),
        Arguments.of(
            "pacer.cursor.layout=django-cache",
            "pacer.cursor.table must be set: the layout DJANGO_CACHE uses an existing table"),
        Arguments.of(
            "pacer.cursor.operation-timeout=0s",
            "pacer.cursor.operation-timeout: operationTimeout must be > 0, got PT0S"),
        Arguments.of(
            "pacer.cursor.failure-cooldown=-1s",
            "pacer.cursor.failure-cooldown: failureCooldown must be >= 0, got PT-1S"),
        Arguments.of(
            "pacer.cursor.reset-beyond=0s",
            "pacer.cursor.reset-beyond: resetBeyond must be > 0, got PT0S"),
        Arguments.of(
            "pacer.cursor.connect-timeout=0s",
            "pacer.cursor.connect-timeout must be > 0, got PT0S"),
        Arguments.of(
            "pacer.datasource.url=jdbc:mysql://db/app?password=hunter2",
            "pacer.datasource.url: jdbcUrl must start with jdbc:postgresql:, got"
                + " jdbc:mysql://db/app?password=***"));
  }

  @ParameterizedTest
  @MethodSource("badCursorValues")
  void aBadCursorValueStopsStartUpNamingTheProperty(String property, String message)
      throws Exception {
    try (HikariDataSource pool = Pools.pool(3)) {
      runner
          .withBean(DataSource.class, () -> pool)
          .withPropertyValues(property)
          .run(
              context ->
                  assertThat(messages(context.getStartupFailure()))
                      .contains(message)
                      .doesNotContain("hunter2"));
    }
  }

  /**
   * A database that refuses the cursor (nothing listens on the port) is logged while the context
   * starts and once more when the context closes, and neither line, nor the properties' own
   * description, holds the password.
   */
  @Test
  void thePasswordIsNeverPrinted() throws Exception {
    String secret = "s3cret-" + System.nanoTime();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    PrintStream original = System.err;
    System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
    try {
      runner
          .withPropertyValues(
              "pacer.datasource.url=jdbc:postgresql://127.0.0.1:1/app",
              "pacer.datasource.username=app",
              "pacer.datasource.password=" + secret,
              "pacer.cursor.connect-timeout=1s",
              "pacer.destinations.api.rate-per-second=50")
          .run(
              context -> {
                assertThat(context).hasNotFailed();
                assertThat(context.getBean(PacerProperties.class).getDatasource().toString())
                    .contains("password=***")
                    .doesNotContain(secret);
                var limiter = context.getBean(PacerDestinations.class).limiter("api");
                limiter.acquire().close();
                assertThat(limiter.isDegraded())
                    .as("paced alone while the database is away")
                    .isTrue();
              });
    } finally {
      System.setErr(original);
    }
    String printed = err.toString(StandardCharsets.UTF_8);
    assertThat(printed)
        .as("what was logged")
        .contains("Could not connect the PostgreSQL cursor")
        .doesNotContain(secret);
  }
}
