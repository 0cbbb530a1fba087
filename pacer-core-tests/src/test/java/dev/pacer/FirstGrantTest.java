package dev.pacer;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A process's first turn in a fresh JVM ({@link FirstGrant}): nothing is loaded between the
 * limiter's last clock read, the one its check for late turns makes, and the caller holding the
 * slot. A class loaded there (1.1 to 1.3 ms for the slot's and the listeners' event's, measured on
 * a quiet machine, several times that on a loaded one) would make the first request late by that
 * much, unseen by the check, close behind the next process's turn.
 */
class FirstGrantTest {

  @Test
  void theFirstGrantLoadsNothingAfterItsLastClockRead() throws Exception {
    List<String> lines = childOutput();
    int acquired = lines.indexOf(FirstGrant.ACQUIRED);
    assertThat(acquired).as("the child's output: %s", lines).isPositive();
    int lastClockRead = lines.subList(0, acquired).lastIndexOf(FirstGrant.CLOCK);
    assertThat(lastClockRead).as("the child's output: %s", lines).isNotNegative();
    assertThat(lines.subList(lastClockRead + 1, acquired))
        .as("classes loaded after the check for late turns read the clock")
        .isEmpty();
  }

  private static List<String> childOutput() throws IOException, InterruptedException {
    Process child =
        new ProcessBuilder(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-verbose:class",
                "-cp",
                System.getProperty("java.class.path"),
                FirstGrant.class.getName())
            .redirectErrorStream(true)
            .start();
    String output = new String(child.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(child.waitFor(60, TimeUnit.SECONDS)).as("child finished").isTrue();
    assertThat(child.exitValue()).as("child's exit status; output:%n%s", output).isZero();
    return output.lines().toList();
  }
}
