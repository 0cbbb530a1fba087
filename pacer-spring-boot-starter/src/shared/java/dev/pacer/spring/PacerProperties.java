package dev.pacer.spring;

import dev.pacer.postgres.JdbcUrls;
import dev.pacer.postgres.TableLayout;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * Pacer's settings under {@code pacer.*}: where the cursor lives ({@code pacer.datasource}, {@code
 * pacer.cursor}) and the destinations it paces ({@code pacer.destinations.<name>}).
 *
 * <pre>
 * pacer.destinations[images.example.com].rate-per-second=7
 * pacer.destinations[images.example.com].max-fetching-processes=3
 * pacer.destinations[images.example.com].backoff-scope=fleet
 * pacer.destinations[images.example.com].max-retry-after=5m
 * </pre>
 *
 * <p>A destination name with dots must be written in brackets, as above: unbracketed, Spring reads
 * each dot as one more level of nesting. Every value is checked at start-up by {@link
 * dev.pacer.Destination.Builder} and {@link dev.pacer.postgres.PostgresCursorConfig.Builder}, and a
 * bad one stops the application with the builder's message prefixed by the property's name (see
 * {@link DestinationProperties}).
 */
@ConfigurationProperties("pacer")
public class PacerProperties {

  private final Datasource datasource = new Datasource();
  private final CursorProperties cursor = new CursorProperties();
  private final Map<String, DestinationProperties> destinations = new LinkedHashMap<>();

  public Datasource getDatasource() {
    return datasource;
  }

  public CursorProperties getCursor() {
    return cursor;
  }

  /** The configured destinations by name, in the order they were bound. */
  public Map<String, DestinationProperties> getDestinations() {
    return destinations;
  }

  /**
   * A database of Pacer's own, reached without the application's pool ({@code pacer.datasource.url}
   * with {@code username} and {@code password}). When the URL is set it wins over the application's
   * {@code DataSource}. The password goes to the driver only: it is in no {@code toString()} and no
   * log line.
   */
  public static class Datasource {
    private String url;
    private String username;
    private String password;

    public String getUrl() {
      return url;
    }

    public void setUrl(String url) {
      this.url = url;
    }

    public String getUsername() {
      return username;
    }

    public void setUsername(String username) {
      this.username = username;
    }

    public String getPassword() {
      return password;
    }

    public void setPassword(String password) {
      this.password = password;
    }

    @Override
    public String toString() {
      return "Datasource{url="
          + JdbcUrls.redact(url)
          + ", username="
          + username
          + ", password="
          + (password == null ? "none" : "***")
          + "}";
    }
  }

  /**
   * Where the cursors are stored and how the cursor behaves ({@code pacer.cursor.*}); unset values
   * keep {@link dev.pacer.postgres.PostgresCursorConfig}'s defaults.
   */
  public static class CursorProperties {
    private Layout layout = Layout.PACER_TABLE;
    private String table;
    private String keyColumn = "cache_key";
    private String valueColumn = "value";
    private String expiresColumn = "expires";
    private String keyPrefix = TableLayout.DEFAULT_KEY_PREFIX;
    private Duration operationTimeout;
    private Duration failureCooldown;
    private Duration resetBeyond;
    private Boolean synchronousCommit;
    private Duration connectTimeout = Duration.ofSeconds(10);

    public Layout getLayout() {
      return layout;
    }

    public void setLayout(Layout layout) {
      this.layout = layout;
    }

    /** The table: {@code pacer_cursor} by default in Pacer's layout; required in the others. */
    public String getTable() {
      return table;
    }

    public void setTable(String table) {
      this.table = table;
    }

    public String getKeyColumn() {
      return keyColumn;
    }

    public void setKeyColumn(String keyColumn) {
      this.keyColumn = keyColumn;
    }

    public String getValueColumn() {
      return valueColumn;
    }

    public void setValueColumn(String valueColumn) {
      this.valueColumn = valueColumn;
    }

    public String getExpiresColumn() {
      return expiresColumn;
    }

    public void setExpiresColumn(String expiresColumn) {
      this.expiresColumn = expiresColumn;
    }

    public String getKeyPrefix() {
      return keyPrefix;
    }

    public void setKeyPrefix(String keyPrefix) {
      this.keyPrefix = keyPrefix;
    }

    public Duration getOperationTimeout() {
      return operationTimeout;
    }

    public void setOperationTimeout(Duration operationTimeout) {
      this.operationTimeout = operationTimeout;
    }

    public Duration getFailureCooldown() {
      return failureCooldown;
    }

    public void setFailureCooldown(Duration failureCooldown) {
      this.failureCooldown = failureCooldown;
    }

    public Duration getResetBeyond() {
      return resetBeyond;
    }

    public void setResetBeyond(Duration resetBeyond) {
      this.resetBeyond = resetBeyond;
    }

    public Boolean getSynchronousCommit() {
      return synchronousCommit;
    }

    public void setSynchronousCommit(Boolean synchronousCommit) {
      this.synchronousCommit = synchronousCommit;
    }

    /**
     * How long start-up waits for the cursor's first connection (default 10 s). A failure there is
     * logged and does not stop the application: the cursor reconnects at its next retry boundary,
     * and until then every destination paces alone at its degraded rate.
     */
    public Duration getConnectTimeout() {
      return connectTimeout;
    }

    public void setConnectTimeout(Duration connectTimeout) {
      this.connectTimeout = connectTimeout;
    }
  }

  /** The table layouts of {@link TableLayout}. */
  public enum Layout {
    /** Pacer's own unlogged table, created on first use ({@code pacer_cursor} unless named). */
    PACER_TABLE,
    /**
     * A Django-style cache table ({@code cache_key}, {@code value}, {@code expires}), shared with a
     * Python fleet.
     */
    DJANGO_CACHE,
    /**
     * Any key/value table: its columns and key prefix from {@code pacer.cursor.key-column} and the
     * rest.
     */
    KEY_VALUE_TABLE
  }
}
