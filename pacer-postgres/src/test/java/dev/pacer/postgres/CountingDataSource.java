package dev.pacer.postgres;

import java.io.PrintWriter;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.logging.Logger;
import javax.sql.DataSource;

/** A DataSource that counts how many connections were taken from it. */
final class CountingDataSource implements DataSource {
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

  @Override
  public Connection getConnection(String user, String password) throws SQLException {
    taken.incrementAndGet();
    return delegate.getConnection(user, password);
  }

  @Override
  public PrintWriter getLogWriter() throws SQLException {
    return delegate.getLogWriter();
  }

  @Override
  public void setLogWriter(PrintWriter out) throws SQLException {
    delegate.setLogWriter(out);
  }

  @Override
  public void setLoginTimeout(int seconds) throws SQLException {
    delegate.setLoginTimeout(seconds);
  }

  @Override
  public int getLoginTimeout() throws SQLException {
    return delegate.getLoginTimeout();
  }

  @Override
  public Logger getParentLogger() throws SQLFeatureNotSupportedException {
    return delegate.getParentLogger();
  }

  @Override
  public <T> T unwrap(Class<T> iface) throws SQLException {
    return delegate.unwrap(iface);
  }

  @Override
  public boolean isWrapperFor(Class<?> iface) throws SQLException {
    return delegate.isWrapperFor(iface);
  }
}
