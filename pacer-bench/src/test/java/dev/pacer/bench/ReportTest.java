package dev.pacer.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The generated part of {@code benchmarks.md}, character for character, from a run whose every
 * figure is set by hand and differs from the others: every section is written, and a missing figure
 * ("–"), a stopped run, a killed run and a run with no frontier claims each show once. The expected
 * text is {@code report-golden.md} beside this class; a change to the report's wording or layout
 * changes that file in the same commit.
 */
class ReportTest {

  /** Each contender's figure at one process, in {@link Contender} order. */
  private static final double[] BASE = {5_656, 5_480, 3_130, 2_999, 2_474};

  /** How each contender's figure grows with the processes: the exponent of their count. */
  private static final double[] SCALE = {0.6, 0.55, 0.12, -0.05, 0.08};

  /** Each contender's figure at the server's default commit mode ÷ at its own. */
  private static final double[] AT_DEFAULT_COMMIT = {0.97, 0.71, 0.66, 0.59, 0.72};

  @Test
  void rendersEverySectionAsTheGoldenText() throws IOException {
    assertThat(Report.render(everyFigure())).isEqualTo(golden());
  }

  private static String golden() throws IOException {
    try (InputStream in = ReportTest.class.getResourceAsStream("report-golden.md")) {
      assertThat(in).as("report-golden.md on the test class path").isNotNull();
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
  }

  /** A full run's settings, and a figure for every measurement. */
  private static Results everyFigure() {
    BenchSettings settings = BenchSettings.full();
    Results r = new Results(settings, "2026-12-06T21:15:29Z");
    r.machine =
        new Machine(
            2,
            8_321_499_136L,
            "Example CPU @ 2.10GHz",
            "Linux 6.1.0 (amd64)",
            "OpenJDK 64-Bit Server VM 17.0.13+11 (Eclipse Adoptium)",
            "PostgreSQL 16.4",
            "on",
            "on",
            true,
            new double[] {0.51, 0.42, 0.33},
            new double[] {1.91, 1.22, 0.75});
    for (int p : settings.processCounts()) {
      r.recordPgbench(p, 6_437 * Math.pow(p, 0.7));
      for (Contender c : Contender.values()) {
        for (boolean on : new boolean[] {false, true}) {
          // The naive transaction at the server default is missing at the most processes.
          if (c != Contender.NAIVE_ADVISORY || !on || p != 8) {
            int i = c.ordinal();
            double perSecond = BASE[i] * Math.pow(p, SCALE[i]) * (on ? AT_DEFAULT_COMMIT[i] : 1);
            r.recordThroughput(new Results.Series(c, on, 1), p, perSecond);
          }
        }
      }
      r.recordThroughput(
          new Results.Series(Contender.PACER, false, settings.spreadKeys()),
          p,
          5_610 * Math.pow(p, 0.65));
      r.recordHotKeyLeased(p, 41_230 * Math.pow(p, 0.45));
    }
    // Two rounds at one point: the report shows their median.
    r.recordThroughput(new Results.Series(Contender.PACER, false, 1), 2, 9_102.5);
    int n = r.comparisonProcesses();
    r.recordClientCpu(new Results.Series(Contender.PACER, false, 1), n, 61.23);
    r.recordClientCpu(new Results.Series(Contender.BUCKET4J_SELECT_FOR_UPDATE, false, 1), n, 88.4);
    r.recordClientCpu(new Results.Series(Contender.BUCKET4J_ADVISORY_LOCK, false, 1), n, 97.06);
    r.latency =
        new Latency.Result(
            93.176,
            282.356,
            155.33,
            424.631,
            117.358,
            348.503,
            List.of(new Latency.Step("the statement before", 160.2, 430.1)),
            10_000);
    r.pacerAccuracy = Accuracy.of(4, 16, 200, grid(1_001, 5_000, 900));
    r.perProcessAccuracy = Accuracy.of(4, 16, 200, grid(4_001, 1_250, 300));
    r.overhead = new Overhead.Result(new double[] {1.0012, 1.0031, 1.0007, 1.0049, 1.002});
    r.leases =
        new LeaseBench.Result(
            new LeaseBench.Point(
                "leases of up to 64 turns",
                Accuracy.of(4, 16, 100_000, grid(40_001, 25, 20)),
                3_121,
                412,
                37,
                1_234_567_000L),
            new LeaseBench.Point(
                "without leases",
                Accuracy.of(4, 16, 100_000, grid(20_001, 50, 30)),
                9_877,
                0,
                211,
                2_345_678_000L));
    r.fetch =
        new FetchThroughput.Result(
            5_000,
            32,
            Map.of(
                FetchThroughput.Side.PACER_FILES,
                List.of(2_850.2, 2_890.4, 2_931.9),
                FetchThroughput.Side.PACER_WARC,
                List.of(2_711.0, 2_760.5, 2_802.3),
                FetchThroughput.Side.BARE,
                List.of(3_398.1, 3_410.7, 3_460.3),
                FetchThroughput.Side.BARE_FORCED,
                List.of(1_201.4, 1_250.9, 1_262.0)));
    r.enqueue =
        new EnqueueScale.Result(
            1_000_000, 10_000, 12.34, 1_000_000, 0, 48_234_567, 301_234_567, 61_234_567);
    r.frontier = frontier(settings.frontier());
    r.claimCost =
        List.of(
            new ClaimCost.Point(1_000, 10_000, 2_000, 0.41, 0.93, 4.12, 0),
            new ClaimCost.Point(10_000, 100_000, 2_000, 0.57, 1.21, 6.03, 2));
    r.hostHeap =
        new HostHeap.Result(
            settings.hostHeap(),
            List.of(
                new HostHeap.Point(0, 0, 30_000_000),
                new HostHeap.Point(1_000, 600, 31_200_000),
                new HostHeap.Point(10_000, 610, 31_500_000),
                new HostHeap.Point(100_000, 610, 31_900_000)));
    return r;
  }

  private static FrontierBench.Result frontier(FrontierBench.Load load) {
    int items = load.items();
    FrontierRun turn =
        new FrontierRun(
            "turn",
            true,
            131.2,
            125.8,
            items,
            1,
            0,
            windows(248, 245, 240),
            8_123,
            3,
            3,
            true,
            Double.NaN);
    FrontierRun fifo =
        new FrontierRun(
            "fifo",
            false,
            210.5,
            198.3,
            900,
            1,
            0,
            windows(120, 131, 97),
            0,
            0,
            0,
            false,
            Double.NaN);
    FrontierRun killed =
        new FrontierRun(
            "sigkill",
            true,
            140.9,
            133.04,
            items + 12,
            2,
            1,
            windows(244, 201, 238),
            6_012,
            1,
            2,
            false,
            41.7);
    return new FrontierBench.Result(load, items, 123.4, turn, fifo, killed);
  }

  /** 10-s windows with these arrivals, each judged against a base of 250 less its position. */
  private static List<FrontierRun.WindowFigure> windows(long... delivered) {
    FrontierRun.WindowFigure[] w = new FrontierRun.WindowFigure[delivered.length];
    for (int i = 0; i < w.length; i++) {
      w[i] = new FrontierRun.WindowFigure(delivered[i], 250.0 - 0.5 * i);
    }
    return List.of(w);
  }

  /** {@code count} epoch microseconds {@code interval} apart, each late by a fixed spread. */
  private static long[] grid(int count, long interval, long spread) {
    long[] micros = new long[count];
    for (int i = 0; i < count; i++) {
      micros[i] = 1_700_000_000_000_000L + i * interval + (i * 7_919L) % spread;
    }
    return micros;
  }
}
