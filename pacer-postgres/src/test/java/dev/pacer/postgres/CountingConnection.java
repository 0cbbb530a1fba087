package dev.pacer.postgres;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.Statement;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A connection that counts what its user asks of it: each statement execution, and every call on
 * the connection itself. Each of those can be a round trip to the server; a reservation that is one
 * round trip shows one execution and no connection call.
 */
final class CountingConnection {

  private final Connection connection;
  private final AtomicLong executions = new AtomicLong();
  private final AtomicLong connectionCalls = new AtomicLong();

  CountingConnection(Connection real) {
    this.connection =
        (Connection)
            Proxy.newProxyInstance(
                Connection.class.getClassLoader(),
                new Class<?>[] {Connection.class},
                forward(real, this::onConnectionCall));
  }

  Connection connection() {
    return connection;
  }

  long executions() {
    return executions.get();
  }

  long connectionCalls() {
    return connectionCalls.get();
  }

  private Object onConnectionCall(Method method, Object result) {
    connectionCalls.incrementAndGet();
    if (result instanceof Statement statement) {
      Class<?> type = method.getReturnType();
      return Proxy.newProxyInstance(
          type.getClassLoader(),
          new Class<?>[] {type},
          forward(
              statement,
              (m, r) -> {
                if (m.getName().startsWith("execute")) {
                  executions.incrementAndGet();
                }
                return r;
              }));
    }
    return result;
  }

  private interface AfterCall {
    Object after(Method method, Object result);
  }

  private static InvocationHandler forward(Object target, AfterCall after) {
    return (proxy, method, args) -> {
      try {
        return after.after(method, method.invoke(target, args));
      } catch (InvocationTargetException e) {
        throw e.getCause();
      }
    };
  }
}
