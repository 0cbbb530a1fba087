package dev.pacer.postgres;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;

/** A DataSource that counts how many connections were taken from it. */
final class CountingDataSource extends DataSourceAdapter {
  private final DataSource delegate;
  private final AtomicInteger taken = new AtomicInteger();

  CountingDataSource(DataSource delegate) {
    this.delegate = delegate;
  }

  int connectionsTaken() {
    return taken.get();
  }

  @Override
  public Connection getConnection() throws SQLException {
    taken.incrementAndGet();
    return delegate.getConnection();
  }
}
