package dev.pacer.cli.db;

import java.io.PrintWriter;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.util.logging.Logger;
import javax.sql.DataSource;

/** A DataSource over one connection recipe, so the cursor connects through the process's gate. */
final class GatedDataSource implements DataSource {

  @FunctionalInterface
  interface Connector {
    Connection connect() throws SQLException;
  }

  private final Connector connector;

  GatedDataSource(Connector connector) {
    this.connector = connector;
  }

  @Override
  public Connection getConnection() throws SQLException {
    return connector.connect();
  }

  @Override
  public Connection getConnection(String username, String password) throws SQLException {
    throw new SQLFeatureNotSupportedException("credentials come from the JDBC URL");
  }

  @Override
  public PrintWriter getLogWriter() {
    return null;
  }

  @Override
  public void setLogWriter(PrintWriter out) {
    // pgjdbc logs through java.util.logging; nothing to set.
  }

  @Override
  public void setLoginTimeout(int seconds) {
    // The connector sets its own bounds.
  }

  @Override
  public int getLoginTimeout() {
    return 0;
  }

  @Override
  public Logger getParentLogger() throws SQLFeatureNotSupportedException {
    throw new SQLFeatureNotSupportedException();
  }

  @Override
  public <T> T unwrap(Class<T> iface) throws SQLException {
    if (iface.isInstance(this)) {
      return iface.cast(this);
    }
    throw new SQLException("not a wrapper for " + iface);
  }

  @Override
  public boolean isWrapperFor(Class<?> iface) {
    return iface.isInstance(this);
  }
}
