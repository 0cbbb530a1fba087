package dev.pacer.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.awt.image.BufferedImage;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The whole benchmark, every measurement, on tiny settings against an embedded PostgreSQL with real
 * worker JVMs and the real pgbench: it must run through and write every output. The figures of so
 * short a run are not judged here, only that each was measured and is plausible.
 */
class BenchSmokeTest {

  /**
   * The fields runs of different versions are compared by, each with the range a measured value can
   * plausibly take (a keyed field's every value). Json writes NaN and infinities as null, which is
   * not a number and fails here.
   */
  static final Map<String, double[]> REQUIRED_NUMBERS = new LinkedHashMap<>();

  static {
    REQUIRED_NUMBERS.put("select1_p50_us", new double[] {1, 1e6});
    REQUIRED_NUMBERS.put("reserve_p50_us", new double[] {1, 1e6});
    REQUIRED_NUMBERS.put("reserve_p99_us", new double[] {1, 1e7});
    // A reservation is a round trip and a write: never cheaper than SELECT 1 on the same
    // connection.
    REQUIRED_NUMBERS.put("reserve_to_select1_ratio", new double[] {1, 100});
    REQUIRED_NUMBERS.put("bare_upsert_p50_us", new double[] {1, 1e6});
    // Leases of turns: at most the ceiling delivered (a fraction of it on a busy machine), and
    // about one reservation statement a permit at most (a turn given up as late costs one).
    for (String lease : List.of("leases", "leases_off")) {
      REQUIRED_NUMBERS.put(lease + "_delivered_ratio", new double[] {1e-4, 1.1});
      REQUIRED_NUMBERS.put(lease + "_statements_per_permit", new double[] {1e-5, 2});
      // The embedded server's CPU time over the window, read from Linux's scheduler figures.
      REQUIRED_NUMBERS.put(lease + "_server_cpu_us_per_permit", new double[] {1e-3, 1e5});
    }
    // Pacer's statement is a write on the same table: never much cheaper than the bare upsert.
    REQUIRED_NUMBERS.put("reserve_to_bare_upsert_ratio", new double[] {0.5, 100});
    for (String perSecond :
        List.of(
            "hotkey_per_s",
            "hotkey_leased_per_s",
            "pgbench_same_statement_per_s",
            "bucket4j_select_for_update_per_s",
            "bucket4j_advisory_lock_per_s",
            "naive_advisory_per_s")) {
      REQUIRED_NUMBERS.put(perSecond, new double[] {1, 1e7});
    }
    REQUIRED_NUMBERS.put("accuracy_delivered_ratio", new double[] {0.5, 1.1});
    REQUIRED_NUMBERS.put("accuracy_ceiling_per_s", new double[] {1, 1e5});
    REQUIRED_NUMBERS.put("accuracy_peak_window", new double[] {1, 1e5});
    REQUIRED_NUMBERS.put("perprocess_delivered_ratio", new double[] {1.5, 100});
    REQUIRED_NUMBERS.put("overhead_8_at_7_ratio", new double[] {0.99, 1.5});
    REQUIRED_NUMBERS.put("fetch_pacer_per_s", new double[] {1, 1e6});
    REQUIRED_NUMBERS.put("fetch_bare_http_per_s", new double[] {1, 1e6});
    // Pacer does more per item than the bare loop (pacing, work state, durable bodies).
    REQUIRED_NUMBERS.put("fetch_to_bare_http_ratio", new double[] {0.01, 1.5});
    REQUIRED_NUMBERS.put("fetch_pacer_warc_per_s", new double[] {1, 1e6});
    REQUIRED_NUMBERS.put("fetch_bare_http_forced_per_s", new double[] {1, 1e6});
    REQUIRED_NUMBERS.put("fetch_warc_to_bare_http_ratio", new double[] {0.01, 1.5});
    REQUIRED_NUMBERS.put("enqueue_urls_per_s", new double[] {1, 1e8});
    REQUIRED_NUMBERS.put("enqueue_peak_heap_bytes", new double[] {1, 64 << 20});
    REQUIRED_NUMBERS.put("enqueue_peak_rss_bytes", new double[] {1, 1e10});
    REQUIRED_NUMBERS.put("frontier_capacity_per_s", new double[] {1, 1e6});
    REQUIRED_NUMBERS.put("frontier_finish_bound_s", new double[] {10, 1e4});
    REQUIRED_NUMBERS.put("elapsed_s", new double[] {0.1, 1e4});
    REQUIRED_NUMBERS.put("busiest_host_window", new double[] {1, 1e4});
    // The same hosts held at every checkpoint: the heap hardly moves.
    REQUIRED_NUMBERS.put("host_heap_ratio", new double[] {0.5, 2});
    REQUIRED_NUMBERS.put("host_heap_bytes_per_held_fetcher", new double[] {100, 1e6});
  }

  private static final Pattern NUMBER = Pattern.compile("-?[0-9]+(\\.[0-9]+)?([eE][+-]?[0-9]+)?");

  @TempDir Path out;

  @Test
  void tinyRunMeasuresEverythingAndWritesEveryOutput() throws Exception {
    System.setProperty("java.awt.headless", "true");
    BenchOptions options = BenchOptions.parse(new String[] {"--tiny", "--out", out.toString()});
    ByteArrayOutputStream log = new ByteArrayOutputStream();
    Results r = new BenchMain(options, new PrintStream(log, true, StandardCharsets.UTF_8)).run();

    String json = Files.readString(out.resolve("bench-results.json"));
    REQUIRED_NUMBERS.forEach(
        (field, range) -> {
          List<Double> values = numbers(json, field);
          assertThat(values).as(field).isNotEmpty();
          assertThat(values).as(field).allSatisfy(v -> assertThat(v).isBetween(range[0], range[1]));
        });
    double ceiling = numbers(json, "accuracy_ceiling_per_s").get(0);
    // A window holds the ceiling + 1 only while lateness differs by less than an interval.
    assertThat(numbers(json, "accuracy_peak_window").get(0))
        .as(
            "busiest 1-s window of Pacer's fleet at %.0f/s (interval %.1f ms); lateness p50 %s ms,"
                + " p99 %s ms, max %s ms",
            ceiling,
            1000 / ceiling,
            numbers(json, "accuracy_lateness_p50_ms").get(0),
            numbers(json, "accuracy_lateness_p99_ms").get(0),
            numbers(json, "accuracy_lateness_max_ms").get(0))
        .isLessThanOrEqualTo(Math.floor(ceiling) + 1);
    assertThat(numbers(json, "cores").get(0)).isBetween(1.0, 4096.0);
    assertThat(json)
        .contains(
            "\"machine\":",
            "\"cores\":",
            "\"memory_bytes\":",
            "\"postgresql_version\": \"PostgreSQL",
            "\"jvm\":");

    for (int n : r.settings.processCounts()) {
      assertThat(r.hotKey().get(n)).as("Pacer hot key at %d", n).isPositive();
      assertThat(r.hotKeyLeased.get(n)).as("Pacer hot key with leases at %d", n).isPositive();
      assertThat(r.pgbench.get(n)).as("pgbench at %d", n).isPositive();
      for (Contender peer :
          new Contender[] {
            Contender.BUCKET4J_SELECT_FOR_UPDATE,
            Contender.BUCKET4J_ADVISORY_LOCK,
            Contender.NAIVE_ADVISORY
          }) {
        assertThat(r.series(peer, false, 1).get(n)).as("%s off at %d", peer, n).isPositive();
        assertThat(r.series(peer, true, 1).get(n)).as("%s on at %d", peer, n).isPositive();
      }
    }
    assertThat(r.latency.select1P50()).isPositive();
    assertThat(r.latency.reserveP50()).isPositive();
    // Even a tiny run tells a fleet-wide ceiling from per-process pacing.
    assertThat(r.pacerAccuracy.deliveredRatio()).isBetween(0.5, 1.1);
    assertThat(r.perProcessAccuracy.deliveredRatio())
        .isGreaterThan(1.5 * r.pacerAccuracy.deliveredRatio());
    assertThat(r.overhead.median()).isBetween(0.99, 1.5);
    assertThat(r.enqueue.added()).as("every URL of the list is new").isEqualTo(r.enqueue.urls());
    assertThat(r.enqueue.addedAgain()).as("the same list again").isZero();
    assertThat(r.claimCost).extracting(ClaimCost.Point::hosts).containsExactly(10, 50);
    assertThat(r.hostHeap.points())
        .extracting(HostHeap.Point::hosts)
        .containsExactly(0, 1_000, 2_000, 5_000);
    assertThat(r.hostHeap.points())
        .as("fetchers held: the last minute's hosts")
        .allSatisfy(p -> assertThat(p.fetchersHeld()).isLessThanOrEqualTo(61 * 10));
    assertThat(r.claimCost)
        .allSatisfy(
            p -> {
              assertThat(p.withoutItem())
                  .as("claims without an item at %d hosts", p.hosts())
                  .isZero();
              assertThat(p.p50Millis()).isPositive().isLessThanOrEqualTo(p.p99Millis());
            });

    String md = Files.readString(out.resolve("benchmarks.md"));
    assertThat(md)
        .contains(
            Report.BEGIN,
            Report.END,
            "### Targets",
            "| processes |",
            "### pacer fetch against a bare HTTP loop",
            "### Enqueue",
            "### Per-host claim cost",
            "### Per-host state",
            Charts.THROUGHPUT,
            Charts.ACCURACY);
    for (String png :
        List.of(Charts.THROUGHPUT, Charts.COMMIT_MODE, Charts.LATENCY, Charts.ACCURACY)) {
      BufferedImage image = ImageIO.read(out.resolve(png).toFile());
      assertThat(image).as(png).isNotNull();
      assertThat(image.getWidth()).isGreaterThan(100);
    }
  }

  /**
   * The value of {@code "field":} in the JSON, or every value of a flat object there; each must be
   * a JSON number (a null or a string fails the test).
   */
  static List<Double> numbers(String json, String field) {
    String key = "\"" + field + "\":";
    int at = json.indexOf(key);
    assertThat(at).as("field %s", field).isNotNegative();
    String rest = json.substring(at + key.length()).strip();
    List<String> tokens = new ArrayList<>();
    if (rest.startsWith("{")) {
      for (String entry : rest.substring(1, rest.indexOf('}')).split(",")) {
        tokens.add(entry.substring(entry.indexOf(':') + 1).strip());
      }
    } else {
      tokens.add(rest.split("[,}\\n]", 2)[0].strip());
    }
    List<Double> values = new ArrayList<>();
    for (String token : tokens) {
      assertThat(token).as("%s is a number", field).matches(NUMBER);
      double v = Double.parseDouble(token);
      assertThat(Double.isFinite(v)).as("%s is finite: %s", field, token).isTrue();
      values.add(v);
    }
    return values;
  }

  @Test
  void theJsonCheckRefusesNullsAndStrings() {
    String json =
        "{\"a\": null,\n"
            + "\"b\": \"12\",\n"
            + "\"c\": {\"1\": 5, \"2\": null},\n"
            + "\"d\": {\"1\": 5, \"2\": 7.5}}";
    for (String field : List.of("a", "b", "c")) {
      assertThatThrownBy(() -> numbers(json, field)).as(field).isInstanceOf(AssertionError.class);
    }
    assertThat(numbers(json, "d")).containsExactly(5.0, 7.5);
  }

  @Test
  void aNewRunReplacesOnlyTheGeneratedBlock() {
    String doc =
        "# Title\n\nprose before\n\n"
            + Report.BEGIN
            + "\nold figures\n"
            + Report.END
            + "\n\nprose after\n";
    assertThat(Report.merge(doc, "new figures\n"))
        .isEqualTo(
            "# Title\n\nprose before\n\n"
                + Report.BEGIN
                + "\nnew figures\n"
                + Report.END
                + "\n\nprose after\n");
    assertThat(Report.merge(null, "figures\n"))
        .startsWith("# Benchmarks")
        .contains(Report.BEGIN + "\nfigures\n" + Report.END);
  }
}
