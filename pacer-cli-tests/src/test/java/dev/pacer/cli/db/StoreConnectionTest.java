package dev.pacer.cli.db;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.pacer.postgres.TestDatabase;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** A store's connections: as many as overlapping calls need, up to its size, under the policy. */
class StoreConnectionTest {

  private static int backendPid(java.sql.Connection c) throws SQLException {
    try (Statement s = c.createStatement();
        ResultSet r = s.executeQuery("SELECT pg_backend_pid()")) {
      r.next();
      return r.getInt(1);
    }
  }

  /**
   * The backends of {@code calls} calls made at once, each waiting inside for all the others: on
   * fewer connections than calls, none returns.
   */
  private static Set<Integer> backendsOfCallsAtOnce(StoreConnection store, int calls)
      throws Exception {
    CyclicBarrier together = new CyclicBarrier(calls);
    ExecutorService threads = Executors.newFixedThreadPool(calls);
    try {
      List<Future<Integer>> pids = new java.util.ArrayList<>();
      for (int i = 0; i < calls; i++) {
        pids.add(
            threads.submit(
                () ->
                    store.call(
                        c -> {
                          try {
                            together.await(20, TimeUnit.SECONDS);
                          } catch (Exception e) {
                            throw new SQLException("the calls did not run at once: " + e);
                          }
                          return backendPid(c);
                        })));
      }
      Set<Integer> distinct = new HashSet<>();
      for (Future<Integer> pid : pids) {
        distinct.add(pid.get(30, TimeUnit.SECONDS));
      }
      return distinct;
    } finally {
      threads.shutdownNow();
    }
  }

  @Test
  void callsThatOverlapRunAtOnceEachOnAConnectionOfItsOwn() throws Exception {
    int calls = 4;
    StoreConnection store = new StoreConnection(new Database(TestDatabase.jdbcUrl()), calls, false);
    try {
      assertThat(backendsOfCallsAtOnce(store, calls)).hasSize(calls);
    } finally {
      store.close();
    }
  }

  @Test
  void openAllOpensEveryConnectionBeforeTheCallsThatOverlapNeedThem() throws Exception {
    int size = 3;
    Database database = new Database(TestDatabase.jdbcUrl());
    StoreConnection store = new StoreConnection(database, size, false);
    try {
      long before = database.connectionAttempts();
      store.openAll();
      assertThat(database.connectionAttempts() - before).isEqualTo(size);
      store.openAll();
      assertThat(database.connectionAttempts() - before)
          .as("a second openAll opens none")
          .isEqualTo(size);

      assertThat(backendsOfCallsAtOnce(store, size)).hasSize(size);
      assertThat(database.connectionAttempts() - before)
          .as("the overlapping calls ran on the connections opened before them")
          .isEqualTo(size);
    } finally {
      store.close();
    }
  }

  private static String synchronousCommit(java.sql.Connection c) throws SQLException {
    try (Statement s = c.createStatement();
        ResultSet r = s.executeQuery("SHOW synchronous_commit")) {
      r.next();
      return r.getString(1);
    }
  }

  @Test
  void anAsynchronousStoreCommitsDurablyOnlyTheTransactionsThatAskForIt() throws Exception {
    StoreConnection store = new StoreConnection(new Database(TestDatabase.jdbcUrl()), 1, true);
    try {
      assertThat(store.call(StoreConnectionTest::synchronousCommit)).isEqualTo("off");
      assertThat(store.durableTransaction(StoreConnectionTest::synchronousCommit)).isEqualTo("on");
      assertThat(store.call(StoreConnectionTest::synchronousCommit))
          .as("the durable transaction's setting ends with it")
          .isEqualTo("off");
      assertThat(store.<Boolean>call(c -> c.getAutoCommit())).isTrue();
    } finally {
      store.close();
    }
  }

  @Test
  void callsOneAfterAnotherKeepOneConnection() throws Exception {
    StoreConnection store = new StoreConnection(new Database(TestDatabase.jdbcUrl()), 8, false);
    try {
      Set<Integer> pids = new HashSet<>();
      for (int i = 0; i < 5; i++) {
        pids.add(store.call(StoreConnectionTest::backendPid));
      }
      assertThat(pids).hasSize(1);
    } finally {
      store.close();
    }
  }

  @Test
  void whileTheDatabaseIsDownACallIsRefusedAtOnceNotQueuedForABusyConnection() throws Exception {
    Database database = new Database(TestDatabase.jdbcUrl());
    StoreConnection store = new StoreConnection(database, 1, false);
    CountDownLatch holding = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    ExecutorService thread = Executors.newSingleThreadExecutor();
    AtomicInteger attempts = new AtomicInteger();
    try {
      Future<Integer> busy =
          thread.submit(
              () ->
                  store.call(
                      c -> {
                        holding.countDown();
                        try {
                          release.await(20, TimeUnit.SECONDS);
                        } catch (InterruptedException e) {
                          Thread.currentThread().interrupt();
                        }
                        return 1;
                      }));
      assertThat(holding.await(20, TimeUnit.SECONDS)).isTrue();
      assertThatThrownBy(
              () ->
                  database
                      .outagePolicy()
                      .open(
                          () -> {
                            throw new SQLException("connection lost (test)", "08006");
                          }))
          .isInstanceOf(SQLException.class);
      long started = System.nanoTime();
      assertThatThrownBy(() -> store.call(c -> attempts.incrementAndGet()))
          .isInstanceOf(SQLException.class)
          .satisfies(e -> assertThat(((SQLException) e).getSQLState()).isEqualTo("08001"));
      assertThat((System.nanoTime() - started) / 1e9).as("seconds to refuse").isLessThan(1.0);
      assertThat(attempts).hasValue(0);
      release.countDown();
      assertThat(busy.get(20, TimeUnit.SECONDS)).isEqualTo(1);
    } finally {
      release.countDown();
      thread.shutdownNow();
      store.close();
    }
  }
}
