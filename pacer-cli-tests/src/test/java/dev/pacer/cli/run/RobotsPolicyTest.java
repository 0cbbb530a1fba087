package dev.pacer.cli.run;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.cli.db.RobotsStore.Fetched;
import dev.pacer.cli.db.RobotsStore.Settlement;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** What each answer to {@code GET /robots.txt} means, as {@link RobotsPolicy}'s table says. */
class RobotsPolicyTest {

  private static final String ROBOTS = "http://example.org/robots.txt";
  private final RobotsPolicy policy = new RobotsPolicy(Duration.ofSeconds(30));

  private Settlement settle(int status, String body) {
    return policy.settle(ROBOTS, new Fetched(status, body.getBytes(StandardCharsets.UTF_8)));
  }

  @Test
  void theGroupNamingPacerIsObeyedBeforeTheWildcard() {
    Settlement s =
        settle(200, "User-agent: *\nDisallow: /\n\nUser-agent: pacer\n" + "Disallow: /private/\n");
    assertThat(s.skip().test("http://example.org/private/1")).isTrue();
    assertThat(s.skip().test("http://example.org/item/1")).isFalse();
    assertThat(s.reason()).isEqualTo(RobotsPolicy.DISALLOWED);
    assertThat(s.minInterval()).isZero();
    assertThat(RobotsPolicy.AGENT).isEqualTo("pacer");
  }

  @Test
  void aCrawlDelayWidensTheIntervalUpToTheCapAndSkipsTheHostAboveIt() {
    Settlement slow = settle(200, "User-agent: *\nCrawl-delay: 2.5\n");
    assertThat(slow.minInterval()).isEqualTo(Duration.ofMillis(2500));
    assertThat(slow.verdict()).isEqualTo("HTTP 200: allow all, Crawl-delay 2.5 s");
    assertThat(slow.skip().test("http://example.org/a")).isFalse();
    assertThat(settle(200, "User-agent: *\nCrawl-delay: 30\n").minInterval())
        .isEqualTo(Duration.ofSeconds(30));

    // Above the cap, and far above the parser's own (300 s), which would disallow all silently.
    for (String delay : new String[] {"31", "3600"}) {
      Settlement over = settle(200, "User-agent: *\nCrawl-delay: " + delay + "\n");
      assertThat(over.skip().test("http://example.org/a")).isTrue();
      assertThat(over.minInterval()).isZero();
      assertThat(over.verdict())
          .isEqualTo(
              "Crawl-delay " + delay + " s, above --max-crawl-delay" + " 30 s: host skipped");
      assertThat(over.reason())
          .isEqualTo("robots.txt Crawl-delay " + delay + " s is above" + " --max-crawl-delay 30 s");
    }
  }

  @Test
  void unauthorisedOrForbiddenDisallowsAllAndAnyOtherClientErrorAllowsAll() {
    for (int status : new int[] {401, 403}) {
      Settlement s = settle(status, "");
      assertThat(s.skip().test("http://example.org/a")).as("HTTP %s", status).isTrue();
      assertThat(s.verdict()).isEqualTo("HTTP " + status + ": disallow all");
    }
    for (int status : new int[] {400, 404, 410, 301}) {
      Settlement s = settle(status, "");
      assertThat(s.skip().test("http://example.org/a")).as("HTTP %s", status).isFalse();
      assertThat(s.verdict()).isEqualTo("HTTP " + status + ": allow all");
    }
  }

  @Test
  void throttlesAndServerErrorsSettleNothing() {
    for (int status : new int[] {429, 500, 502, 503, 504}) {
      assertThat(RobotsPolicy.settles(status)).as("HTTP %s", status).isFalse();
    }
    for (int status : new int[] {200, 301, 401, 403, 404, 410}) {
      assertThat(RobotsPolicy.settles(status)).as("HTTP %s", status).isTrue();
    }
  }

  @Test
  void anEmptyRobotsTxtAllowsAll() {
    Settlement s = settle(200, "");
    assertThat(s.skip().test("http://example.org/anything")).isFalse();
    assertThat(s.verdict()).isEqualTo("HTTP 200: allow all");
  }
}
