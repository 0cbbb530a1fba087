package dev.pacer.cli.run;

import crawlercommons.robots.BaseRobotRules;
import crawlercommons.robots.SimpleRobotRules;
import crawlercommons.robots.SimpleRobotRulesParser;
import dev.pacer.cli.db.RobotsStore.Fetched;
import dev.pacer.cli.db.RobotsStore.Settlement;
import java.time.Duration;
import java.util.List;
import java.util.Locale;

/**
 * What a host's answer to {@code GET /robots.txt} means for its items under {@code pacer fetch
 * --per-host --robots}. The rules are read by crawler-commons' parser for the run's user agent (the
 * product token of {@link RunSettings#USER_AGENT}, {@value #AGENT}: a group naming {@code pacer} is
 * obeyed before {@code *}).
 *
 * <table>
 *   <caption>Answers and what they mean</caption>
 *   <tr><th>answer</th><th>meaning</th></tr>
 *   <tr><td>2xx</td><td>its rules: each item {@code Disallow}ed for {@value #AGENT} is skipped;
 *       a {@code Crawl-delay} widens the host's interval to at least that delay, and one longer
 *       than {@code --max-crawl-delay} skips the whole host</td></tr>
 *   <tr><td>401, 403</td><td>disallow all: every item skipped. RFC 9309 and Google read any 4xx as
 *       "no robots.txt, allow all"; a host that will not show its rules to this agent is taken as
 *       refusing it, as the older convention (and Pacer's lockout on a 403) has it</td></tr>
 *   <tr><td>other 4xx (404, 410, ...), a redirect not followed</td><td>allow all (RFC 9309:
 *       robots.txt unavailable). Redirects within the host are followed (each a turn); one to
 *       another host is not, since that host's ceiling is another's</td></tr>
 *   <tr><td>429, 503</td><td>the host's backoff, as for any request (its interval doubled for the
 *       fleet; a {@code Retry-After} pauses it); robots.txt is asked again later, up to {@code
 *       --max-throttles} times</td></tr>
 *   <tr><td>other 5xx, network error, deadline, a body over 512 KiB</td><td>asked again after 2
 *       s, up to {@code --max-attempts} times; then, as Google treats a 5xx (disallow all while it
 *       lasts), none of the host's items is fetched in this run: they are deferred, and the next
 *       run of the job asks for robots.txt again</td></tr>
 * </table>
 *
 * The parser's own cap on Crawl-delay (which silently disallows everything above 300 s) is lifted:
 * the cap is {@code --max-crawl-delay}'s, and a host above it is reported, not silently emptied.
 */
final class RobotsPolicy {

  /** The product token robots.txt groups are matched against. */
  static final String AGENT =
      RunSettings.USER_AGENT
          .substring(0, RunSettings.USER_AGENT.indexOf('/'))
          .toLowerCase(Locale.ROOT);

  /** The reason recorded on an item a robots.txt rule disallows. */
  static final String DISALLOWED = "disallowed by robots.txt";

  private final Duration maxCrawlDelay;

  RobotsPolicy(Duration maxCrawlDelay) {
    this.maxCrawlDelay = maxCrawlDelay;
  }

  /** Whether {@code status} is answered by a settlement (else: throttled, or asked again). */
  static boolean settles(int status) {
    return status / 100 == 2 || status / 100 == 3 || (status / 100 == 4 && status != 429);
  }

  /** What the answer {@code fetched}, to {@code robotsUrl}, means; see {@link #settles}. */
  Settlement settle(String robotsUrl, Fetched fetched) {
    int status = fetched.status();
    if (status == 401 || status == 403) {
      return new Settlement(
          "HTTP " + status + ": disallow all",
          url -> true,
          "robots.txt answered HTTP " + status + " (taken as disallow all)",
          Duration.ZERO);
    }
    if (status / 100 != 2) {
      return new Settlement("HTTP " + status + ": allow all", url -> false, "", Duration.ZERO);
    }
    SimpleRobotRulesParser parser = new SimpleRobotRulesParser(Long.MAX_VALUE, 5);
    SimpleRobotRules rules =
        parser.parseContent(robotsUrl, fetched.body(), "text/plain", List.of(AGENT));
    Duration delay =
        rules.getCrawlDelay() == BaseRobotRules.UNSET_CRAWL_DELAY || rules.getCrawlDelay() <= 0
            ? Duration.ZERO
            : Duration.ofMillis(rules.getCrawlDelay());
    String delayText = seconds(delay);
    if (delay.compareTo(maxCrawlDelay) > 0) {
      return new Settlement(
          "Crawl-delay "
              + delayText
              + " s, above --max-crawl-delay "
              + seconds(maxCrawlDelay)
              + " s: host skipped",
          url -> true,
          "robots.txt Crawl-delay "
              + delayText
              + " s is above --max-crawl-delay "
              + seconds(maxCrawlDelay)
              + " s",
          Duration.ZERO);
    }
    String verdict =
        "HTTP "
            + status
            + ": "
            + (rules.isAllowNone()
                ? "disallow all"
                : rules.isAllowAll() || rules.getRobotRules().isEmpty()
                    ? "allow all"
                    : rules.getRobotRules().size() + " rule(s) for " + AGENT)
            + (delay.isZero() ? "" : ", Crawl-delay " + delayText + " s");
    return new Settlement(verdict, url -> !rules.isAllowed(url), DISALLOWED, delay);
  }

  private static String seconds(Duration d) {
    return String.format(Locale.ROOT, "%.3f", d.toNanos() / 1e9).replaceAll("\\.?0+$", "");
  }
}
