package dev.pacer.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

class VersionTest {

  @Test
  void theVersionPrintedIsTheRootPomsRevision() throws Exception {
    Matcher revision =
        Pattern.compile("<revision>([^<]+)</revision>")
            .matcher(Files.readString(Path.of("..", "pom.xml")));
    assertThat(revision.find()).as("a <revision> in the root POM").isTrue();
    Cli.Result run = Cli.run("--version");
    assertThat(run.code()).isZero();
    assertThat(run.out().strip()).isEqualTo("pacer " + revision.group(1));
  }
}
