package dev.pacer.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A virtual thread interrupted while its reservation waits in the round trip (the cursor's row held
 * locked by another connection) must cost that caller alone: the cursor's one connection survives,
 * the database is not held down, the interrupted reservation is answered and the thread keeps its
 * interrupt. On a virtual thread an interrupt closes a socket it is reading from, so this runs in a
 * child JVM ({@link InterruptedRoundTripWorker}) on a JDK of 21 or later, found as {@link
 * VirtualThreadsTest} finds one.
 */
class InterruptedRoundTripTest {

  @Test
  void aVirtualThreadInterruptedInItsRoundTripLeavesTheSharedConnectionUp() throws Exception {
    Path jdk = VirtualThreadsTest.virtualThreadJdk();
    String name = "interrupted-" + UUID.randomUUID().toString().substring(0, 8);
    Path childErr = Files.createTempFile("interrupted-round-trip", ".err");
    try {
      Process child =
          new ProcessBuilder(
                  jdk.resolve("bin").resolve("java").toString(),
                  "-cp",
                  System.getProperty("java.class.path"),
                  InterruptedRoundTripWorker.class.getName(),
                  TestDatabase.jdbcUrl(),
                  name)
              .redirectError(childErr.toFile())
              .start();
      Map<String, String> result = new HashMap<>();
      try (BufferedReader out =
          new BufferedReader(
              new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8))) {
        String line;
        while ((line = out.readLine()) != null) {
          if (line.startsWith("RESULT ")) {
            for (String pair : line.substring(7).split(" ")) {
              String[] kv = pair.split("=", 2);
              result.put(kv[0], kv[1]);
            }
          }
        }
      } finally {
        if (!child.waitFor(30, TimeUnit.SECONDS)) {
          child.destroyForcibly();
        }
      }
      String errors = Files.readString(childErr);
      System.out.printf(
          "interrupted in the round trip, on %s: %s%nthe child's stderr:%n%s%n",
          jdk, result, errors);

      assertThat(child.exitValue()).as("child exit; its stderr:%n%s", errors).isZero();
      assertThat(result).as("the child's report").containsKeys("interrupted", "latched");
      assertThat(result.get("alive")).as("the interrupted thread still running").isEqualTo("false");
      assertThat(result.get("interrupted"))
          .as("the interrupted reservation's answer")
          .isEqualTo("shared");
      assertThat(result.get("keptInterrupt"))
          .as("the thread's interrupt, kept for its caller")
          .isEqualTo("true");
      assertThat(result.get("latched"))
          .as("the database held down after the interrupt")
          .isEqualTo("false");
      assertThat(result.get("newConnections"))
          .as("connections the cursor opened since")
          .isEqualTo("0");
      assertThat(result.get("failures")).as("failed reservations").isEqualTo("0");
      assertThat(result.get("next"))
          .as("the next reservation, on a thread not interrupted")
          .isEqualTo("shared");
    } finally {
      Files.deleteIfExists(childErr);
    }
  }
}
