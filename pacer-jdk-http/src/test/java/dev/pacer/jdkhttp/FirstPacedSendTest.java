package dev.pacer.jdkhttp;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A warmed-up {@link PacedHttpClient}'s first paced requests in a fresh JVM ({@link
 * FirstPacedSend}): nothing is loaded between a turn being handed over and the delegate being asked
 * to send, for {@code send} and for {@code sendAsync}. A class loaded there makes the request late
 * by that much, unseen by the check for late turns, close behind the next turn; on a virtual
 * thread, one that meets a class another is loading also pins its carrier.
 */
class FirstPacedSendTest {

  @Test
  void aWarmedUpClientLoadsNothingBetweenATurnAndItsSend() throws Exception {
    List<String> lines = childOutput();
    int warmed = lines.indexOf(FirstPacedSend.WARMED);
    assertThat(warmed).as("the child's output: %s", lines).isPositive();
    List<List<String>> between = new ArrayList<>();
    List<String> loading = null;
    for (String line : lines.subList(warmed + 1, lines.size())) {
      if (line.equals(FirstPacedSend.GRANTED)) {
        loading = new ArrayList<>();
      } else if (line.equals(FirstPacedSend.SENDING) && loading != null) {
        between.add(loading);
        loading = null;
      } else if (loading != null && line.contains("class,load")) {
        loading.add(line);
      }
    }
    assertThat(between)
        .as(
            "classes loaded between each turn and its send, for send then"
                + " sendAsync; the child's output after the warm-up: %s",
            lines.subList(warmed, lines.size()))
        .containsExactly(List.of(), List.of());
  }

  private static List<String> childOutput() throws IOException, InterruptedException {
    Process child =
        new ProcessBuilder(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xlog:class+load=info:stdout",
                "-cp",
                System.getProperty("java.class.path"),
                FirstPacedSend.class.getName())
            .redirectErrorStream(true)
            .start();
    String output = new String(child.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(child.waitFor(60, TimeUnit.SECONDS)).as("child finished").isTrue();
    assertThat(child.exitValue()).as("child's exit status; output:%n%s", output).isZero();
    return output.lines().toList();
  }
}
