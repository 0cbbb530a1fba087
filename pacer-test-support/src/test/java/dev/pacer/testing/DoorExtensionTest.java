package dev.pacer.testing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.extension.RegisterExtension;

/** One door for a class in a static field, a fresh one for each test in an instance field. */
class DoorExtensionTest {

  private static int get(DoorExtension door, String path) throws Exception {
    return HttpClient.newHttpClient()
        .send(
            HttpRequest.newBuilder(URI.create(door.url(path))).build(),
            HttpResponse.BodyHandlers.discarding())
        .statusCode();
  }

  @Test
  void aDoorOutsideItsTestsIsNotOpen() {
    assertThatThrownBy(new DoorExtension()::door).isInstanceOf(IllegalStateException.class);
  }

  @Nested
  @TestMethodOrder(MethodOrderer.OrderAnnotation.class)
  class PerClass {

    @RegisterExtension static final DoorExtension door = new DoorExtension();

    @Test
    @Order(1)
    void firstTestSendsOne() throws Exception {
      assertThat(get(door, "/status/429")).isEqualTo(429);
      assertThat(door.arrivals()).hasSize(1);
    }

    @Test
    @Order(2)
    void secondTestSeesTheFirstTestsArrivalsAtTheSameDoor() throws Exception {
      assertThat(get(door, "/two")).isEqualTo(200);
      assertThat(door.timeline().size()).isEqualTo(2);
    }
  }

  @Nested
  @TestMethodOrder(MethodOrderer.OrderAnnotation.class)
  class PerTest {

    @RegisterExtension final DoorExtension door = new DoorExtension();

    @Test
    @Order(1)
    void firstTestSendsOne() throws Exception {
      assertThat(get(door, "/one")).isEqualTo(200);
      assertThat(door.arrivals()).hasSize(1);
    }

    @Test
    @Order(2)
    void secondTestStartsWithAnEmptyDoor() throws Exception {
      assertThat(door.arrivals()).isEmpty();
      assertThat(get(door, "/two")).isEqualTo(200);
      assertThat(door.arrivals()).hasSize(1);
    }
  }
}
