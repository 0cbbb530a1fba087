package dev.pacer.cli.ui;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class TerminalStreamTest {

  @Test
  void aLogLineNamingAHostileValueReachesTheTerminalEscaped() {
    ByteArrayOutputStream terminal = new ByteArrayOutputStream();
    PrintStream err = TerminalStream.of(terminal);
    err.println("WARN Destination h\u001b[31mé\u202e locked out: x\u009b2J");
    err.print("\u001b[1A");
    err.flush();
    assertThat(terminal.toString(StandardCharsets.UTF_8)).isEqualTo(
        "WARN Destination h\\u001b[31mé\\u202e locked out: x\\u009b2J\n\\u001b[1A");
  }
}
