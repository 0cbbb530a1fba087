package dev.pacer.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.cli.model.Secrets;
import dev.pacer.postgres.PostgresCursor;
import dev.pacer.postgres.PostgresCursorConfig;
import dev.pacer.postgres.TestDatabase;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * What pacer prints comes in part from rows it did not write (the database is shared) and from what
 * destinations answered: none of it reaches the terminal as a control character or a bidirectional
 * override.
 */
class TerminalOutputTest {

  @Test
  void aLogLineNamingAHostileValueReachesTheTerminalEscaped() {
    ByteArrayOutputStream terminal = new ByteArrayOutputStream();
    PrintStream err = Secrets.forTerminal(new PrintStream(terminal, true, StandardCharsets.UTF_8));
    err.println("WARN Destination h\u001b[31mé\u202e locked out: x\u009b2J");
    err.print("\u001b[1A");
    err.flush();
    assertThat(terminal.toString(StandardCharsets.UTF_8))
        .isEqualTo(
            "WARN Destination h\\u001b[31mé\\u202e locked out: x\\u009b2J"
                + System.lineSeparator()
                + "\\u001b[1A");
  }

  @Test
  void statusReadsCursorRowsWhoseInstantsAreInfinite() {
    String name = "infinite-" + UUID.randomUUID().toString().substring(0, 8);
    try (PostgresCursor cursor =
        new PostgresCursor(PostgresCursorConfig.forUrl(TestDatabase.jdbcUrl()).build())) {
      assertThat(cursor.reserve(name + "-a", Duration.ofMillis(1)).isGranted()).isTrue();
    }
    for (String value : new String[] {"infinity", "-infinity"}) {
      TestDatabase.execute(
          "INSERT INTO pacer_cursor (name, next_at, updated_at, paused_until)"
              + " VALUES ('"
              + name
              + value
              + "', '"
              + value
              + "', '"
              + value
              + "', '"
              + value
              + "')");
    }
    Cli.Result status = Cli.run("status", "--db", TestDatabase.jdbcUrl());
    TestDatabase.execute("DELETE FROM pacer_cursor WHERE name LIKE '" + name + "%'");
    assertThat(status.code()).as(status.err()).isZero();
    assertThat(status.out()).contains(name + "infinity", name + "-infinity");
  }

  @Test
  void aLockoutReasonFromTheDatabaseCannotMoveTheCursorOrReorderTheText() {
    String name = "terminal-" + UUID.randomUUID().toString().substring(0, 8);
    String hostile = "HTTP 403 \u001b[2J\u001b]0;owned\u0007 \u009b31m \u202etxt.exe";
    try (PostgresCursor cursor =
        new PostgresCursor(PostgresCursorConfig.forUrl(TestDatabase.jdbcUrl()).build())) {
      assertThat(cursor.reserve(name, Duration.ofMillis(1)).isGranted()).isTrue();
      assertThat(cursor.lockOut(name, hostile)).isTrue();
      Cli.Result status = Cli.run("status", "--db", TestDatabase.jdbcUrl());
      assertThat(status.code()).as(status.err()).isZero();
      assertThat(status.out())
          .as("the reason, escaped")
          .contains("HTTP 403 \\u001b[2J\\u001b]0;owned\\u0007 \\u009b31m \\u202etxt.exe");
      assertThat(status.out() + status.err())
          .doesNotContain("\u001b", "\u0007", "\u009b", "\u202e");
      cursor.clearLockout(name);
    }
  }
}
