package dev.pacer.bench;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.github.bucket4j.BucketConfiguration;
import io.github.bucket4j.distributed.BucketProxy;
import io.github.bucket4j.distributed.proxy.ProxyManager;
import io.github.bucket4j.postgresql.Bucket4jPostgreSQL;
import java.time.Duration;
import java.util.function.Function;
import javax.sql.DataSource;

/**
 * Bucket4j's PostgreSQL backend as its documentation sets it up: a pooled {@link DataSource}
 * (HikariCP, one connection for the process's one thread), a {@code ProxyManager<Long>} over a
 * {@code (id BIGINT PRIMARY KEY, state BYTEA, expires_at BIGINT)} table, one bucket per key with a
 * capacity and a greedy refill of 10^9 per second, so that {@code tryConsume(1)} never waits and
 * each call is one database transaction.
 */
final class Bucket4jOperation implements Operation {

  private static final long HUGE = 1_000_000_000L;

  private final HikariDataSource pool;
  private final BucketProxy[] buckets;
  private int next;

  private Bucket4jOperation(
      Database.Target db,
      boolean synchronousCommit,
      String[] keys,
      Function<DataSource, ProxyManager<Long>> manager) {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(db.jdbcUrl());
    config.setDataSourceProperties(db.properties());
    config.setMaximumPoolSize(1);
    config.setMinimumIdle(1);
    config.setPoolName("bench-bucket4j");
    if (!synchronousCommit) {
      config.setConnectionInitSql("SET synchronous_commit = off");
    }
    this.pool = new HikariDataSource(config);
    ProxyManager<Long> proxies = manager.apply(pool);
    BucketConfiguration everyoneGoes =
        BucketConfiguration.builder()
            .addLimit(limit -> limit.capacity(HUGE).refillGreedy(HUGE, Duration.ofSeconds(1)))
            .build();
    this.buckets = new BucketProxy[keys.length];
    for (int i = 0; i < keys.length; i++) {
      buckets[i] = proxies.builder().build(Database.numericKey(keys[i]), () -> everyoneGoes);
    }
  }

  static Bucket4jOperation selectForUpdate(
      Database.Target db, boolean synchronousCommit, String[] keys) {
    return new Bucket4jOperation(
        db,
        synchronousCommit,
        keys,
        ds ->
            Bucket4jPostgreSQL.selectForUpdateBasedBuilder(ds)
                .table(Contender.BUCKET4J_SELECT_FOR_UPDATE_TABLE)
                .build());
  }

  static Bucket4jOperation advisoryLock(
      Database.Target db, boolean synchronousCommit, String[] keys) {
    return new Bucket4jOperation(
        db,
        synchronousCommit,
        keys,
        ds ->
            Bucket4jPostgreSQL.advisoryLockBasedBuilder(ds)
                .table(Contender.BUCKET4J_ADVISORY_LOCK_TABLE)
                .build());
  }

  @Override
  public void perform() {
    BucketProxy bucket = buckets[next];
    next = next + 1 == buckets.length ? 0 : next + 1;
    if (!bucket.tryConsume(1)) {
      throw new IllegalStateException("Bucket4j refused a token from a bucket that never empties");
    }
  }

  @Override
  public void close() {
    pool.close();
  }
}
