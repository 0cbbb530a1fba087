package dev.pacer.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.postgres.TestDatabase;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A short {@code pacer demo}: worker JVMs, the self-enforcing destination, figures and a PNG. */
class DemoTest {

  @TempDir Path dir;

  @Test
  void aShortDemoHoldsTheCeilingAndWritesItsTimeline() throws Exception {
    Cli.Result demo = Cli.run("demo", "--seconds", "4", "--db", TestDatabase.jdbcUrl(),
        "--data-dir", dir.toString(), "--max-load", "1000");

    assertThat(demo.code()).as(demo.err()).isEqualTo(0);
    assertThat(demo.out()).contains("\"done\":28", "Pacing: fleet-wide", "28 of 28 items done");
    double aggregate = Double.parseDouble(find(demo.out(),
        "Aggregate rate at the destination: ([0-9.]+) requests/s"));
    int peak = Integer.parseInt(find(demo.out(), "Busiest 1-s window: (\\d+) requests"));
    int refused = Integer.parseInt(find(demo.out(), "429 answers from the destination: (\\d+)"));
    assertThat(aggregate).isLessThanOrEqualTo(7 * 1.25);
    assertThat(peak).isLessThanOrEqualTo(9);
    // The destination refuses above 7/s with a 3-request burst allowance: paced traffic passes.
    assertThat(refused).isLessThanOrEqualTo(2);
    Path png = Path.of(find(demo.out(), "Timeline \\(PNG\\): (\\S+)"));
    assertThat(png).startsWith(dir);
    assertThat(Files.size(png)).isGreaterThan(5_000);
  }

  private static String find(String text, String regex) {
    Matcher m = Pattern.compile(regex).matcher(text);
    assertThat(m.find()).as("%s in:%n%s", regex, text).isTrue();
    return m.group(1);
  }
}
