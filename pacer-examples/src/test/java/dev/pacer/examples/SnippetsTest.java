package dev.pacer.examples;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Every code block the documentation marks as a snippet is, character for character, an example's
 * region.
 */
class SnippetsTest {

  private static final Path ROOT = Path.of("..").toAbsolutePath().normalize();
  private static final List<Path> SOURCES =
      List.of(
          Path.of("src/test/java/dev/pacer/examples"),
          ROOT.resolve("pacer-spring-boot-starter/src/test/java/dev/pacer/spring"));
  private static final List<Path> DOCUMENTS =
      List.of(ROOT.resolve("README.md"), ROOT.resolve("docs/integrations.md"));

  @Test
  void everyShownSnippetIsTheCodeTheExamplesRun() {
    List<Snippets.Shown> shown = new ArrayList<>();
    for (Path document : DOCUMENTS) {
      assertThat(document).exists();
      shown.addAll(Snippets.shownIn(document));
    }
    assertThat(shown).as("snippets shown in %s", DOCUMENTS).isNotEmpty();
    for (Snippets.Shown s : shown) {
      Path source =
          SOURCES.stream()
              .map(dir -> dir.resolve(s.exampleClass() + ".java"))
              .filter(Files::exists)
              .findFirst()
              .orElse(null);
      assertThat(source)
          .as("%s in %s: no such example in %s", s.key(), s.document(), SOURCES)
          .isNotNull();
      Map<String, String> regions = Snippets.regionsOf(source);
      assertThat(regions).as("regions of %s", source).containsKey(s.region());
      assertThat(s.text())
          .as(
              "%s as shown in %s (copy the region from %s)",
              s.key(), s.document().getFileName(), source)
          .isEqualTo(regions.get(s.region()));
    }
  }

  @Test
  void theCheckNoticesADocumentThatDrifted() throws Exception {
    Path drifted = Files.createTempFile("drifted", ".md");
    Path source = SOURCES.get(0).resolve("LimiterExample.java");
    String region = Snippets.regionsOf(source).get("acquire");
    Files.writeString(
        drifted,
        "<!-- snippet: LimiterExample#acquire -->\n```java\n"
            + region.replace("acquire()", "acquire(2)")
            + "```\n");
    Snippets.Shown shown = Snippets.shownIn(drifted).get(0);
    assertThat(shown.text()).isNotEqualTo(region);
    Files.delete(drifted);
  }
}
