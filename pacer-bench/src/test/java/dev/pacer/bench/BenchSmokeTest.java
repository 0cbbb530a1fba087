package dev.pacer.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.awt.image.BufferedImage;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The whole benchmark, every measurement, on tiny settings against an embedded PostgreSQL with
 * real worker JVMs and the real pgbench: it must run through and write every output. The figures
 * of so short a run are not judged here, only that each was measured and is plausible.
 */
class BenchSmokeTest {

  /** The field names of issue 4, which runs of different versions are compared by. */
  static final List<String> REQUIRED_FIELDS = List.of(
      "select1_p50_us", "reserve_p50_us", "reserve_p99_us", "reserve_to_select1_ratio",
      "hotkey_per_s", "pgbench_same_statement_per_s", "bucket4j_select_for_update_per_s",
      "bucket4j_advisory_lock_per_s", "naive_advisory_per_s", "accuracy_delivered_ratio",
      "accuracy_peak_window", "perprocess_delivered_ratio", "overhead_8_at_7_ratio", "machine");

  @TempDir Path out;

  @Test
  void tinyRunMeasuresEverythingAndWritesEveryOutput() throws Exception {
    System.setProperty("java.awt.headless", "true");
    BenchMain.Options options = BenchMain.parse(new String[] {"--tiny", "--out", out.toString()});
    ByteArrayOutputStream log = new ByteArrayOutputStream();
    Results r = new BenchMain(options, new PrintStream(log, true, StandardCharsets.UTF_8)).run();

    String json = Files.readString(out.resolve("bench-results.json"));
    for (String field : REQUIRED_FIELDS) {
      assertThat(json).contains("\"" + field + "\":");
    }
    assertThat(json).contains("\"cores\":", "\"memory_bytes\":", "\"postgresql_version\": \"PostgreSQL",
        "\"jvm\":");

    for (int n : r.settings.processCounts()) {
      assertThat(r.hotKey().get(n)).as("Pacer hot key at %d", n).isPositive();
      assertThat(r.pgbench.get(n)).as("pgbench at %d", n).isPositive();
      for (Contender peer : new Contender[] {Contender.BUCKET4J_SELECT_FOR_UPDATE,
          Contender.BUCKET4J_ADVISORY_LOCK, Contender.NAIVE_ADVISORY}) {
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

    String md = Files.readString(out.resolve("benchmarks.md"));
    assertThat(md).contains(Report.BEGIN, Report.END, "### Targets", "| processes |",
        Charts.THROUGHPUT, Charts.ACCURACY);
    for (String png : List.of(Charts.THROUGHPUT, Charts.COMMIT_MODE, Charts.LATENCY, Charts.ACCURACY)) {
      BufferedImage image = ImageIO.read(out.resolve(png).toFile());
      assertThat(image).as(png).isNotNull();
      assertThat(image.getWidth()).isGreaterThan(100);
    }
  }

  @Test
  void aNewRunReplacesOnlyTheGeneratedBlock() {
    String doc = "# Title\n\nprose before\n\n" + Report.BEGIN + "\nold figures\n" + Report.END
        + "\n\nprose after\n";
    assertThat(Report.merge(doc, "new figures\n"))
        .isEqualTo("# Title\n\nprose before\n\n" + Report.BEGIN + "\nnew figures\n" + Report.END
            + "\n\nprose after\n");
    assertThat(Report.merge(null, "figures\n"))
        .startsWith("# Benchmarks").contains(Report.BEGIN + "\nfigures\n" + Report.END);
  }
}
