package dev.pacer.spring;

import dev.pacer.Destination;
import dev.pacer.LimiterRegistry;
import dev.pacer.postgres.PostgresCursor;
import dev.pacer.postgres.PostgresCursorConfig;
import dev.pacer.postgres.PostgresFleetSlots;
import dev.pacer.postgres.TableLayout;
import dev.pacer.spi.Cursor;
import dev.pacer.spi.FleetSlots;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.function.Consumer;
import javax.sql.DataSource;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;

/**
 * Pacer in a Spring Boot application: one {@link PostgresCursor}, one {@link LimiterRegistry} and
 * the limiters of the destinations under {@code pacer.destinations} ({@link PacerDestinations}).
 * Each bean backs off when the application defines its own of that type.
 *
 * <p><b>Where the cursor connects.</b> With {@code pacer.datasource.url} set, the cursor connects
 * there through the driver, outside any pool. Otherwise it borrows from the application's {@code
 * DataSource} (the primary one, if there are several), and keeps what it borrows for the life of
 * the application: one connection for the cursor's statements, one for its {@code LISTEN}er (the
 * pauses and lockouts other processes announce), and, only while a destination with {@code
 * max-concurrency-fleet-wide} is in use, one for the fleet slots. A pool must be that much larger
 * than the application alone needs; docs/integrations.md says what this means for a pool's leak
 * detection and {@code maxLifetime}. Neither can be the caller's own connection: a reservation
 * inside the caller's transaction would hold the cursor row's lock until it commits, and stall the
 * whole fleet.
 *
 * <p>The cursor connects while the context starts, allowing {@code pacer.cursor.connect-timeout}; a
 * database that cannot be reached then is logged and does not stop the application, which paces
 * each destination alone at its degraded rate until the cursor's next retry boundary. Everything
 * Pacer holds is closed with the context: the cursor's connections go back to the pool, reset.
 */
@AutoConfiguration(
    afterName = {
      // Spring Boot 4's, and 3's: either orders the cursor after the application's DataSource.
      "org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration",
      "org.springframework.boot.autoconfigure.jdbc.DataSourceAutoConfiguration"
    })
@EnableConfigurationProperties(PacerProperties.class)
public class PacerAutoConfiguration {

  @Bean(destroyMethod = "close")
  @ConditionalOnMissingBean(Cursor.class)
  public PostgresCursor pacerCursor(
      PacerProperties properties, ObjectProvider<DataSource> dataSources) {
    PacerProperties.CursorProperties c = properties.getCursor();
    PostgresCursorConfig.Builder config = connection(properties.getDatasource(), dataSources);
    config.layout(layout(c));
    set("pacer.cursor.operation-timeout", c.getOperationTimeout(), config::operationTimeout);
    set("pacer.cursor.failure-cooldown", c.getFailureCooldown(), config::failureCooldown);
    set("pacer.cursor.reset-beyond", c.getResetBeyond(), config::resetBeyond);
    set("pacer.cursor.synchronous-commit", c.getSynchronousCommit(), config::synchronousCommit);
    if (c.getConnectTimeout() == null
        || c.getConnectTimeout().isNegative()
        || c.getConnectTimeout().isZero()) {
      throw new IllegalArgumentException(
          "pacer.cursor.connect-timeout must be > 0, got " + c.getConnectTimeout());
    }
    PostgresCursor cursor = new PostgresCursor(config.build());
    cursor.connect(c.getConnectTimeout());
    return cursor;
  }

  /**
   * Slots for the destinations that cap their concurrency fleet-wide, on the cursor's database and
   * under its outage policy. They open their connection at the first capped request, so an
   * application without such a destination never opens it.
   */
  @Bean(destroyMethod = "close")
  @ConditionalOnMissingBean(FleetSlots.class)
  @ConditionalOnBean(PostgresCursor.class)
  public PostgresFleetSlots pacerFleetSlots(PostgresCursor cursor) {
    return PostgresFleetSlots.sharing(cursor, holder());
  }

  @Bean
  @ConditionalOnMissingBean
  public LimiterRegistry pacerLimiterRegistry(
      Cursor cursor, ObjectProvider<FleetSlots> fleetSlots) {
    FleetSlots slots = fleetSlots.getIfUnique();
    return slots == null ? new LimiterRegistry(cursor) : new LimiterRegistry(cursor, slots);
  }

  /**
   * The configured destinations' limiters. Every destination is built here, so a bad value stops
   * the application at start-up with the property's name and the builder's message.
   */
  @Bean
  @ConditionalOnMissingBean
  public PacerDestinations pacerDestinations(PacerProperties properties, LimiterRegistry registry) {
    Map<Destination, Set<String>> destinations = new LinkedHashMap<>();
    for (Map.Entry<String, DestinationProperties> e : properties.getDestinations().entrySet()) {
      destinations.put(e.getValue().toDestination(e.getKey()), e.getValue().hostsOf(e.getKey()));
    }
    return new PacerDestinations(registry, destinations);
  }

  private static PostgresCursorConfig.Builder connection(
      PacerProperties.Datasource own, ObjectProvider<DataSource> dataSources) {
    if (own.getUrl() != null) {
      Properties props = new Properties();
      if (own.getUsername() != null) {
        props.setProperty("user", own.getUsername());
      }
      if (own.getPassword() != null) {
        props.setProperty("password", own.getPassword());
      }
      try {
        return PostgresCursorConfig.forUrl(own.getUrl(), props);
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException("pacer.datasource.url: " + e.getMessage(), e);
      }
    }
    DataSource dataSource = dataSources.getIfUnique();
    if (dataSource == null) {
      throw new IllegalStateException(
          dataSources.stream().findAny().isPresent()
              ? "Pacer's cursor needs one DataSource, and the application has several with none"
                  + " primary: mark one @Primary, or set pacer.datasource.url"
              : "Pacer's cursor needs PostgreSQL: set pacer.datasource.url (with"
                  + " pacer.datasource.username and pacer.datasource.password), or give the"
                  + " application a DataSource");
    }
    return PostgresCursorConfig.forDataSource(dataSource);
  }

  private static TableLayout layout(PacerProperties.CursorProperties c) {
    try {
      return switch (c.getLayout()) {
        case PACER_TABLE ->
            c.getTable() == null ? TableLayout.pacerTable() : TableLayout.pacerTable(c.getTable());
        case DJANGO_CACHE -> TableLayout.djangoCache(requiredTable(c));
        case KEY_VALUE_TABLE ->
            TableLayout.keyValueTable(
                requiredTable(c),
                c.getKeyColumn(),
                c.getValueColumn(),
                c.getExpiresColumn(),
                c.getKeyPrefix());
      };
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(
          "pacer.cursor (layout " + c.getLayout() + "): " + e.getMessage(), e);
    }
  }

  private static String requiredTable(PacerProperties.CursorProperties c) {
    if (c.getTable() == null) {
      throw new IllegalArgumentException(
          "pacer.cursor.table must be set: the layout "
              + c.getLayout()
              + " uses an existing table, and has no default name");
    }
    return c.getTable();
  }

  private static <T> void set(String property, T value, Consumer<T> setter) {
    if (value == null) {
      return;
    }
    try {
      setter.accept(value);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(property + ": " + e.getMessage(), e);
    }
  }

  /** What {@code pacer_fleet_slot.holder} says of this process: host and pid. */
  private static String holder() {
    String host;
    try {
      host = InetAddress.getLocalHost().getHostName();
    } catch (UnknownHostException e) {
      host = "unknown-host";
    }
    return "spring:" + host + ":" + ProcessHandle.current().pid();
  }
}
