package dev.pacer.postgres;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import dev.pacer.testing.Arrival;
import dev.pacer.testing.Door;
import dev.pacer.testing.Timeline;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The blocking {@code acquire()} on virtual threads: 10,000 of them on one limiter at 100/s, a
 * real PostgreSQL cursor, each sending one request at its turn. The build is Java 17, so the
 * threads run in a child JVM ({@link VirtualThreadWorker}) on a JDK of 21 or later, found by
 * {@link #virtualThreadJdk()}; without one this test fails, since CI has one. It asserts that no
 * virtual thread pinned its carrier (JFR's {@code jdk.VirtualThreadPinned}, every event), that the
 * ceiling held where the requests arrive, that the rate did not collapse, and that the threads
 * interrupted at the end gave every permit back.
 */
class VirtualThreadsTest {

  /** Names a JDK home of 21 or later to run the child on; the environment's comes second. */
  static final String JDK_PROPERTY = "pacer.virtualThreadsJdk";
  static final String JDK_ENV = "PACER_VIRTUAL_THREADS_JDK";

  private static final int THREADS = 10_000;
  private static final double RATE = 100;
  private static final int CONCURRENCY = 16;
  private static final long RUN_MILLIS = 8_000;
  /**
   * A guard against a collapse, as in {@link AsyncAcquirePostgresTest}: measured 62-87/s with
   * 52-167 turns given up as late, at load averages of 15-24 on the 2-core build machine shared
   * with other builds; pinned to one core at load 24-27, 42/s, under this bound.
   */
  private static final double MIN_RATE = 50;

  @Test
  void tenThousandVirtualThreadsKeepTheCeilingAndNonePinsItsCarrier() throws Exception {
    Path jdk = virtualThreadJdk();
    String name = "virtual-" + UUID.randomUUID().toString().substring(0, 8);
    Path childErr = Files.createTempFile("virtual-threads", ".err");
    try (Door door = Door.start()) {
      String java = jdk.resolve("bin").resolve("java").toString();
      Process child = new ProcessBuilder(java, "-cp", System.getProperty("java.class.path"),
          VirtualThreadWorker.class.getName(), TestDatabase.jdbcUrl(), name,
          door.uri().toString(), String.valueOf(THREADS), String.valueOf(RATE),
          String.valueOf(CONCURRENCY), String.valueOf(RUN_MILLIS))
          .redirectError(childErr.toFile())
          .start();
      Map<String, String> result = new HashMap<>();
      TurnTrace trace = new TurnTrace(RATE);
      try (BufferedReader out = new BufferedReader(
          new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8))) {
        String line;
        while ((line = out.readLine()) != null) {
          if (line.startsWith("SENT ")) {
            String[] send = line.split(" ");
            trace.sent(send[1], Long.parseLong(send[2]), Long.parseLong(send[3]));
          }
          if (line.startsWith("RESULT ")) {
            for (String pair : line.substring(7).split(" ")) {
              String[] kv = pair.split("=", 2);
              result.put(kv[0], kv[1]);
            }
          }
        }
      } finally {
        if (!child.waitFor(60, TimeUnit.SECONDS)) {
          child.destroyForcibly();
        }
      }
      List<Arrival> run = door.arrivals().stream()
          .filter(a -> !a.path().equals(VirtualThreadWorker.WARM_UP_PATH)).toList();
      Timeline arrivals = new Timeline(run.stream().map(Arrival::nanos).toList());
      // The child's stderr: its log, and the stack of every carrier pinned.
      String errors = Files.readString(childErr);
      System.out.printf("10,000 virtual threads on %s: at the door %s; as sent %s; turns %s; %s%n"
              + "%s%n%s%nthe child's stderr:%n%s%n", jdk, arrivals, trace.sends(), trace.turns(),
          result, trace.busiestWindow(run), trace.stampDelays(run), errors);

      assertThat(child.exitValue()).as("child exit; its stderr:%n%s", errors).isZero();
      assertThat(result).as("the child's report").containsKeys("pinned", "control", "sent");
      assertThat(Integer.parseInt(result.get("control")))
          .as("the deliberate pin was seen, so the count below can see one").isGreaterThan(0);
      assertThat(Integer.parseInt(result.get("pinned"))).as("virtual threads that pinned their"
          + " carrier; the child's stderr:%n%s", errors).isZero();
      assertThat(Integer.parseInt(result.get("failed"))).as("requests that failed").isZero();
      assertThat(Integer.parseInt(result.get("alive"))).as("threads alive after the interrupt")
          .isZero();
      assertThat(result.get("permits")).as("permits back after the interrupt")
          .isEqualTo(CONCURRENCY + "/" + CONCURRENCY);
      assertThat(arrivals.size()).as("arrivals, against the child's count of requests sent")
          .isGreaterThanOrEqualTo(Integer.parseInt(result.get("sent")));
      assertThat(arrivals.peakOneSecondWindow()).as("busiest 1-s window at the door, %s; %s",
              arrivals, trace.busiestWindow(run))
          .isLessThanOrEqualTo((int) RATE + 1);
      assertThat(arrivals.aggregateRatePerSecond()).as("delivered rate, %s", arrivals)
          .isGreaterThanOrEqualTo(MIN_RATE);
      assertThat(arrivals.size()).as("arrivals in the run")
          .isGreaterThanOrEqualTo((int) (MIN_RATE * (RUN_MILLIS / 1000.0 - 1)));
    } finally {
      Files.deleteIfExists(childErr);
    }
  }

  /**
   * A JDK home of 21 or later: the one named by {@value #JDK_PROPERTY} or {@value #JDK_ENV} (which
   * must be one), else the one running this test if it is recent enough, else the oldest such
   * under {@code /usr/lib/jvm} (the oldest is the strictest: up to JDK 23 a {@code synchronized}
   * block around a blocking call pins too).
   */
  static Path virtualThreadJdk() throws IOException {
    String named = Optional.ofNullable(System.getProperty(JDK_PROPERTY))
        .orElse(System.getenv(JDK_ENV));
    if (named != null && !named.isBlank()) {
      Path home = Paths.get(named);
      int feature = featureVersion(home);
      if (feature < 21) {
        fail(JDK_PROPERTY + "/" + JDK_ENV + " names " + home + ", which is "
            + (feature == 0 ? "not a JDK home (no release file with JAVA_VERSION)" : "JDK " + feature)
            + "; virtual threads need 21 or later");
      }
      return home;
    }
    Path running = Paths.get(System.getProperty("java.home"));
    if (Runtime.version().feature() >= 21) {
      return running;
    }
    Path root = Paths.get("/usr/lib/jvm");
    List<Path> found = new ArrayList<>();
    if (Files.isDirectory(root)) {
      try (Stream<Path> homes = Files.list(root)) {
        homes.filter(home -> Files.isExecutable(home.resolve("bin").resolve("java")))
            .filter(home -> featureVersion(home) >= 21)
            .forEach(found::add);
      }
    }
    return found.stream()
        .min(Comparator.comparingInt(VirtualThreadsTest::featureVersion)
            .thenComparing(Path::toString))
        .orElseGet(() -> fail("no JDK of 21 or later found to run virtual threads on: the build"
            + " runs on " + Runtime.version() + " (" + running + "), and " + root + " has none."
            + " Name one with -D" + JDK_PROPERTY + "=<home> or " + JDK_ENV + "=<home>"));
  }

  /** The feature version in {@code home}'s release file, or 0 if it has none. */
  private static int featureVersion(Path home) {
    Path release = home.resolve("release");
    if (!Files.isRegularFile(release)) {
      return 0;
    }
    Properties p = new Properties();
    try (var in = Files.newBufferedReader(release)) {
      p.load(in);
    } catch (IOException e) {
      return 0;
    }
    String version = p.getProperty("JAVA_VERSION", "").replace("\"", "");
    String feature = version.split("[.+-]", 2)[0];
    try {
      return Integer.parseInt(feature);
    } catch (NumberFormatException e) {
      return 0;
    }
  }
}
