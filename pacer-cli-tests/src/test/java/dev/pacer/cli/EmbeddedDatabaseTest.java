package dev.pacer.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Without {@code --db}: two {@code pacer fetch} invocations (separate JVMs) on one machine find one
 * embedded PostgreSQL and so share one ceiling; the one that ends first does not take the database
 * away from the other.
 */
class EmbeddedDatabaseTest {

  @TempDir Path dir;

  @AfterEach
  void stopDatabase() {
    Cli.run("db", "stop", "--data-dir", dir.resolve("pacer-home").toString());
  }

  @Test
  void twoInvocationsWithoutDbShareOneDatabaseAndOneCeiling() throws Exception {
    String home = dir.resolve("pacer-home").toString();
    String destinationName = "embedded-shared-" + ProcessHandle.current().pid();
    try (TestDestination destination = new TestDestination()) {
      List<String> a = new ArrayList<>();
      List<String> b = new ArrayList<>();
      // The second invocation may start fetching a second or more after the first (its JVM and
      // its wait for the database the first one starts): 40 items keep the first fetching, alone
      // at 10/s, for 4 s, so that the two overlap however they start. The second has twice as
      // many, so that it goes on after the first has ended, on the database the other may have
      // started, whichever of the two one core runs first.
      for (int i = 1; i <= 40; i++) {
        a.add(destination.url("/a/" + i));
      }
      for (int i = 1; i <= 80; i++) {
        b.add(destination.url("/b/" + i));
      }
      Path inputA = Files.write(dir.resolve("a.txt"), a);
      Path inputB = Files.write(dir.resolve("b.txt"), b);
      Process first =
          Cli.spawn(
              Map.of(),
              dir.resolve("a.out"),
              dir.resolve("a.err"),
              "fetch",
              inputA.toString(),
              "--data-dir",
              home,
              "--destination",
              destinationName,
              "--rate",
              "10",
              "--concurrency",
              "2",
              "--out",
              dir.resolve("out").toString(),
              "--max-load",
              "1000");
      Process second =
          Cli.spawn(
              Map.of(),
              dir.resolve("b.out"),
              dir.resolve("b.err"),
              "fetch",
              inputB.toString(),
              "--data-dir",
              home,
              "--destination",
              destinationName,
              "--rate",
              "10",
              "--concurrency",
              "2",
              "--out",
              dir.resolve("out").toString(),
              "--max-load",
              "1000");
      assertThat(first.waitFor(120, TimeUnit.SECONDS)).isTrue();
      assertThat(second.waitFor(120, TimeUnit.SECONDS)).isTrue();
      String errA = Files.readString(dir.resolve("a.err"));
      String errB = Files.readString(dir.resolve("b.err"));
      assertThat(first.exitValue()).as(errA).isZero();
      assertThat(second.exitValue()).as(errB).isZero();
      assertThat(Files.readString(dir.resolve("a.out")))
          .as("stdout is a file, not a terminal: no progress bar, just the summary")
          .doesNotContain("\r")
          .hasLineCount(1);
      assertThat(lastLine(dir.resolve("a.out"))).contains("\"done\":40");
      assertThat(lastLine(dir.resolve("b.out"))).contains("\"done\":80");
      assertThat(port(errA)).as("both used the same database").isEqualTo(port(errB));
      assertThat(errA + errB).containsOnlyOnce("Starting the embedded PostgreSQL");

      List<TestDestination.Arrival> arrivals = destination.arrivals();
      long lastA =
          arrivals.stream()
              .filter(x -> x.path().startsWith("/a/"))
              .mapToLong(TestDestination.Arrival::nanos)
              .max()
              .orElseThrow();
      long firstB =
          arrivals.stream()
              .filter(x -> x.path().startsWith("/b/"))
              .mapToLong(TestDestination.Arrival::nanos)
              .min()
              .orElseThrow();
      long lastB =
          arrivals.stream()
              .filter(x -> x.path().startsWith("/b/"))
              .mapToLong(TestDestination.Arrival::nanos)
              .max()
              .orElseThrow();
      assertThat((lastA - firstB) / 1e9).as("the two runs overlapped").isGreaterThan(1.0);
      assertThat(lastB).as("the second run went on after the first ended").isGreaterThan(lastA);
      assertThat(arrivals).hasSize(120);
      TestDestination.assertHeldCeiling(arrivals, 10);
    }
    Cli.Result status = Cli.run("db", "status", "--data-dir", home);
    assertThat(status.out()).contains("is running");
  }

  private static String lastLine(Path file) throws Exception {
    String[] lines = Files.readString(file).strip().split("\n");
    return lines[lines.length - 1];
  }

  private static String port(String stderr) {
    Matcher m = Pattern.compile("jdbc:postgresql://127\\.0\\.0\\.1:(\\d+)/").matcher(stderr);
    assertThat(m.find()).as(stderr).isTrue();
    return m.group(1);
  }
}
