package dev.pacer.http;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.testing.Timeline;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Each integration's warm-up in a fresh JVM ({@link ColdStart}): 30 requests from 30 threads at
 * 10/s, whose arrivals are counted at a door in this JVM. Without the warm-up, the first requests
 * load the client's classes after their turns began, the requests of other threads granted turns
 * meanwhile wait for the same loading, and they reach the door together (the busiest 1-s window
 * then holds more than the ceiling + 1); with it, the busiest window holds at most 11.
 */
class ColdStartTest {

  @ParameterizedTest
  @EnumSource(Client.class)
  void aWarmedUpClientsFirstRequestsKeepTheCeiling(Client kind) throws Exception {
    Timeline arrivals = run(kind, "warm");
    System.out.printf("%s warmed up: %s%n", kind, arrivals);
    assertThat(arrivals.size()).isEqualTo(ColdStart.REQUESTS);
    assertThat(arrivals.peakOneSecondWindow()).as("busiest 1-s window, %s", arrivals)
        .isLessThanOrEqualTo(ColdStart.CEILING + 1);
    // 30 turns 0.1 s apart: the last arrives 2.9 s after the first.
    assertThat(arrivals.spanSeconds()).as("rate not collapsed, %s", arrivals).isGreaterThan(2.8)
        .isLessThan(4.0);
  }

  static Timeline run(Client kind, String warmth) throws Exception {
    try (ArrivalServer door = new ArrivalServer()) {
      Process child = new ProcessBuilder(
          Path.of(System.getProperty("java.home"), "bin", "java").toString(),
          "-cp", System.getProperty("java.class.path"), ColdStart.class.getName(),
          kind.name(), door.uri("/").toString(), warmth)
          .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.INHERIT).start();
      assertThat(child.waitFor(90, TimeUnit.SECONDS)).as("child finished").isTrue();
      assertThat(child.exitValue()).as("child's exit status").isZero();
      return new Timeline(door.arrivals().stream()
          .filter(a -> a.path().startsWith("/ok/")).map(ArrivalServer.Arrival::nanos).toList());
    }
  }
}
