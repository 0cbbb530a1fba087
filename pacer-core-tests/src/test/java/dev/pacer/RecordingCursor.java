package dev.pacer;

import dev.pacer.spi.Cursor;
import dev.pacer.spi.Reservation;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/** Passes reservations to a delegate and records the interval each one asked for. */
class RecordingCursor implements Cursor {
  private final Cursor delegate;
  private final List<Duration> intervals = new ArrayList<>();

  RecordingCursor(Cursor delegate) {
    this.delegate = delegate;
  }

  @Override
  public synchronized Reservation reserve(String name, Duration interval, Duration notBefore) {
    intervals.add(interval);
    return delegate.reserve(name, interval, notBefore);
  }

  @Override
  public synchronized Reservation tryReserve(
      String name, Duration interval, Duration notBefore, Duration maxWait) {
    intervals.add(interval);
    return delegate.tryReserve(name, interval, notBefore, maxWait);
  }

  @Override
  public void clear(String name) {
    delegate.clear(name);
  }

  @Override
  public boolean pause(String name, Duration delay) {
    return delegate.pause(name, delay);
  }

  @Override
  public boolean lockOut(String name, String reason) {
    return delegate.lockOut(name, reason);
  }

  @Override
  public void listen(String name, Listener listener) {
    delegate.listen(name, listener);
  }

  synchronized List<Long> intervalsMillis() {
    List<Long> out = new ArrayList<>();
    intervals.forEach(i -> out.add(i.toMillis()));
    return out;
  }
}
