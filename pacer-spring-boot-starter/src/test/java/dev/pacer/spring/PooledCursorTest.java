package dev.pacer.spring;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import dev.pacer.DestinationLimiter;
import dev.pacer.postgres.PostgresCursor;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.UUID;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/**
 * What an application's HikariCP pool does to the connections the cursor keeps borrowed, and what
 * the cursor does about it: the claims docs/integrations.md makes about pool size, {@code
 * maxLifetime} and leak detection.
 */
class PooledCursorTest {

  private static final Duration SETTLE = Duration.ofSeconds(5);

  /**
   * A listener whose connection dropped connects again at the cursor's next retry boundary (a grid
   * of the failure cooldown, 5 s by default) and 100 ms more, never sooner: up to 5.1 s and its
   * connection's set-up.
   */
  private static final Duration LISTENER_BACK = Duration.ofSeconds(7);

  private final ApplicationContextRunner runner =
      new ApplicationContextRunner()
          .withConfiguration(AutoConfigurations.of(PacerAutoConfiguration.class));

  /**
   * HikariCP retires a connection past {@code maxLifetime} by marking it evicted, and closes it
   * only when it is given back (or at once if idle); {@code softEvictConnections()} runs that same
   * path for every connection at once, without waiting the 30-s minimum lifetime. The cursor keeps
   * its two: reservations go on, no failure, nothing more borrowed. When the server then closes
   * them (what a server or a proxy that ends old sessions does, and what {@code maxLifetime} exists
   * to pre-empt), the next reservation finds its connection dead, borrows a fresh one and is
   * granted in the same call, and the listener borrows its own again by the next retry boundary.
   */
  @Test
  void aRetiredConnectionStaysWithTheCursorAndAClosedOneIsReplacedInTheSameCall() throws Exception {
    String api = "pool-" + UUID.randomUUID().toString().substring(0, 8);
    try (HikariDataSource pool = Pools.pool(4)) {
      runner
          .withBean(DataSource.class, () -> pool)
          .withPropertyValues("pacer.destinations[" + api + "].rate-per-second=100")
          .run(
              context -> {
                PostgresCursor cursor = context.getBean(PostgresCursor.class);
                DestinationLimiter limiter = context.getBean(PacerDestinations.class).limiter(api);
                limiter.acquire().close();
                assertThat(
                        Pools.settlesTo(
                            2, SETTLE, () -> pool.getHikariPoolMXBean().getActiveConnections()))
                    .isEqualTo(2);

                pool.getHikariPoolMXBean().softEvictConnections();
                for (int i = 0; i < 5; i++) {
                  limiter.acquire().close();
                }
                assertThat(cursor.failureCount()).isZero();
                assertThat(limiter.isDegraded()).isFalse();
                assertThat(pool.getHikariPoolMXBean().getActiveConnections())
                    .as("borrowed after the pool retired every connection")
                    .isEqualTo(2);
                assertThat(Pools.sessions(pool.getPoolName()))
                    .as("server sessions: the retired ones, still the cursor's")
                    .isEqualTo(2);

                assertThat(Pools.terminate(pool.getPoolName())).isEqualTo(2);
                long attemptsBefore = cursor.connectionAttempts();
                limiter.acquire().close();
                assertThat(cursor.failureCount()).as("failed reservations").isZero();
                assertThat(limiter.isDegraded()).as("paced alone").isFalse();
                assertThat(cursor.connectionAttempts())
                    .as("connections borrowed by the reservation")
                    .isEqualTo(attemptsBefore + 1);
                assertThat(
                        Pools.settlesTo(2, LISTENER_BACK, () -> Pools.sessions(pool.getPoolName())))
                    .as("server sessions once the listener is back")
                    .isEqualTo(2);
                // The pool opens the listener's connection before it lends it: the server's session
                // can be counted a moment before the pool counts it borrowed.
                assertThat(
                        Pools.settlesTo(
                            2, SETTLE, () -> pool.getHikariPoolMXBean().getActiveConnections()))
                    .as("connections borrowed once the listener is back")
                    .isEqualTo(2);
              });
    }
  }

  /**
   * HikariCP's leak detection reports each of the cursor's two connections once, a WARN with a
   * stack trace naming the thread that borrowed it (the one that started the context, and {@code
   * pacer-hold-listener}), after the threshold; pacing goes on undisturbed. The report comes again
   * only for a connection borrowed again (after the database closed the last one).
   */
  @Test
  void leakDetectionReportsEachKeptConnectionOnce() throws Exception {
    String api = "leak-" + UUID.randomUUID().toString().substring(0, 8);
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    PrintStream original = System.err;
    System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
    try (HikariDataSource pool = Pools.pool(4, 2_000)) {
      runner
          .withBean(DataSource.class, () -> pool)
          .withPropertyValues("pacer.destinations[" + api + "].rate-per-second=20")
          .run(
              context -> {
                DestinationLimiter limiter = context.getBean(PacerDestinations.class).limiter(api);
                // 3 s of turns at 20/s: past the 2-s threshold, and the leak task's run.
                for (int i = 0; i < 61; i++) {
                  limiter.acquire().close();
                }
                assertThat(limiter.isDegraded()).isFalse();
              });
    } finally {
      System.setErr(original);
    }
    String printed = err.toString(StandardCharsets.UTF_8);
    assertThat(printed.split("Connection leak detection triggered", -1)).as(printed).hasSize(3);
    assertThat(printed).contains("on thread main").contains("on thread pacer-hold-listener");
  }
}
