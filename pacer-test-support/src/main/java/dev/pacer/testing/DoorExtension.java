package dev.pacer.testing;

import java.io.IOException;
import java.net.URI;
import java.util.List;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A {@link Door} opened for a test class, or for each of its tests, and closed after it, with this
 * JVM's {@link WallClockSteps} sampling from before the door opens, so that {@link FleetBounds} can
 * tell a step of the wall clock during any run from a fault of the fleet:
 *
 * <pre>{@code
 * @RegisterExtension static final DoorExtension door = new DoorExtension();  // one per class
 * @RegisterExtension final DoorExtension door = new DoorExtension();         // one per test
 * }</pre>
 *
 * <p>In a static field JUnit calls it before and after all the class's tests, and the tests share
 * one door (each run sends to a path of its own); in an instance field JUnit calls it only before
 * and after each test, which gets a door with no arrivals yet. Where the door cannot run at the
 * real-time policy, {@link FleetBounds#at(double, String, DoorExtension)} reports a broken upper
 * bound as a skip naming that cause, as it does for the {@link Door} itself.
 */
public final class DoorExtension
    implements BeforeAllCallback, AfterAllCallback, BeforeEachCallback, AfterEachCallback {

  private Door door;
  private boolean perClass;

  @Override
  public void beforeAll(ExtensionContext context) throws IOException {
    perClass = true;
    open();
  }

  @Override
  public void afterAll(ExtensionContext context) throws IOException {
    close();
  }

  @Override
  public void beforeEach(ExtensionContext context) throws IOException {
    if (!perClass) {
      open();
    }
  }

  @Override
  public void afterEach(ExtensionContext context) throws IOException {
    if (!perClass) {
      close();
    }
  }

  private void open() throws IOException {
    WallClockSteps.get();
    door = Door.start();
  }

  private void close() throws IOException {
    Door open = door;
    door = null;
    if (open != null) {
      open.close();
    }
  }

  /** The open door; it fails outside the tests it was registered for. */
  public Door door() {
    if (door == null) {
      throw new IllegalStateException("the door is open only while its tests run");
    }
    return door;
  }

  /** See {@link Door#uri()}. */
  public URI uri() {
    return door().uri();
  }

  /** See {@link Door#url(String)}. */
  public String url(String path) {
    return door().url(path);
  }

  /** See {@link Door#arrivals()}. */
  public List<Arrival> arrivals() throws IOException {
    return door().arrivals();
  }

  /** See {@link Door#timeline()}. */
  public Timeline timeline() throws IOException {
    return door().timeline();
  }

  /** See {@link Door#realTime()}. */
  public boolean realTime() {
    return door().realTime();
  }
}
