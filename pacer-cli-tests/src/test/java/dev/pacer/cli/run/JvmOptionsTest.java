package dev.pacer.cli.run;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

class JvmOptionsTest {

  @Test
  void theWrittenOptionsComeFirstWithoutCommentsAndTheEnvironmentsAfterThem() {
    String written = "# why\n-XX:TieredStopAtLevel=1\n\n  # indented comment\n  -Xss1m  \r\n";
    assertThat(JvmOptions.of(written, null)).containsExactly("-XX:TieredStopAtLevel=1", "-Xss1m");
    assertThat(JvmOptions.of(written, "  -XX:TieredStopAtLevel=4   -Xmx2g "))
        .containsExactly("-XX:TieredStopAtLevel=1", "-Xss1m", "-XX:TieredStopAtLevel=4", "-Xmx2g");
    assertThat(JvmOptions.of(written, " ")).containsExactly("-XX:TieredStopAtLevel=1", "-Xss1m");
  }

  @Test
  void theShippedFileNamesOnlyOptions() {
    List<String> shipped = JvmOptions.of(readShipped(), null);
    assertThat(shipped).isNotEmpty().allSatisfy(o -> assertThat(o).startsWith("-"));
  }

  private static String readShipped() {
    try (var in = JvmOptions.class.getResourceAsStream(JvmOptions.RESOURCE)) {
      return new String(in.readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }
}
