package dev.pacer.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.postgres.TestDatabase;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A short {@code pacer demo}: worker JVMs, the self-enforcing destination (a token bucket at 7/s
 * that answers 429 once it is empty), figures and a PNG. Fleet-wide pacing stays under the
 * destination's ceiling; per-process pacing, the same run with each process alone at 7/s, does
 * not.
 */
class DemoTest {

  private static final int RATE = 7;

  @TempDir Path dir;

  @Test
  void aShortDemoHoldsTheCeilingAndWritesItsTimeline() throws Exception {
    Cli.Result demo = demo();

    assertThat(demo.code()).as(demo.err()).isEqualTo(0);
    assertThat(demo.out()).contains("\"done\":28", "Pacing: fleet-wide", "28 of 28 items done");
    assertThat(peak(demo)).as(demo.out()).isLessThanOrEqualTo(RATE + 1);
    assertThat(aggregate(demo)).as(demo.out())
        .isLessThanOrEqualTo(RATE * (1 + TestDestination.RATE_TOLERANCE));
    assertThat(refused(demo)).as("paced traffic is never refused: %s", demo.out()).isZero();
    Path png = Path.of(find(demo.out(), "Timeline \\(PNG\\): (\\S+)"));
    assertThat(png).startsWith(dir);
    assertThat(Files.size(png)).isGreaterThan(5_000);
  }

  /**
   * The same demo paced per process: three processes at 7/s each, which the destination refuses,
   * and a busiest window that {@link #aShortDemoHoldsTheCeilingAndWritesItsTimeline} would fail.
   */
  @Test
  void perProcessPacingDrawsRefusalsTheFleetNeverDoes() throws Exception {
    Cli.Result demo = demo("--per-process");

    assertThat(demo.code()).as(demo.err()).isEqualTo(0);
    assertThat(demo.out()).contains("Pacing: per process");
    assertThat(refused(demo)).as(demo.out()).isPositive();
    assertThat(peak(demo)).as(demo.out()).isGreaterThan(RATE + 1);
  }

  /**
   * Six hosts on loopback addresses at 4, 2, 1, 4, 2 and 1/s (the fourth light), paced per host by
   * two worker JVMs: every host's busiest 1-s window at its door holds its ceiling + 1, every item
   * is done, the hosts with a backlog are fetched at no less than half their ceiling, and the PNG
   * has a lane per host.
   */
  @Test
  void aManyHostDemoHoldsEveryHostsCeilingAndDrawsALanePerHost() throws Exception {
    Cli.Result demo = demo("--hosts", "6", "--rate", "4", "--processes", "2", "--threads", "3");

    assertThat(demo.code()).as(demo.err()).isEqualTo(0);
    // 16, 8 and 4 items at 4, 2 and 1/s for 4 s, 3 for the light host, then 8 and 4.
    assertThat(demo.out()).contains("Pacing: per host",
        "Hosts within their ceiling + 1 in every 1-s window: 6 of 6", "Items done: 43 of 43");
    double slowest = Double.parseDouble(find(demo.out(),
        "Slowest host against its ceiling: \\S+ at ([0-9.]+) x its ceiling"));
    assertThat(slowest).as(demo.out()).isGreaterThanOrEqualTo(0.5);
    Path png = Path.of(find(demo.out(), "Timeline \\(PNG\\): (\\S+)"));
    assertThat(png).startsWith(dir);
    java.awt.image.BufferedImage image = javax.imageio.ImageIO.read(png.toFile());
    assertThat(image.getHeight()).isEqualTo(dev.pacer.cli.demo.HostLanesPlot.height(6));
  }

  private Cli.Result demo(String... extra) throws SQLException {
    String[] args = {"demo", "--seconds", "4", "--db", TestDatabase.jdbcUrl(),
        "--data-dir", dir.toString(), "--max-load", "1000", "--no-progress"};
    String[] all = java.util.Arrays.copyOf(args, args.length + extra.length);
    System.arraycopy(extra, 0, all, args.length, extra.length);
    Cli.Result demo = Cli.run(all);
    System.out.println(demo.out());
    System.out.println("recorded done (database clock, a proxy for the arrivals the demo counts): "
        + TestDestination.describe(recordedDone(find(demo.out(), "\"job\":\"([^\"]+)\""))));
    return demo;
  }

  /** When each item of the job was recorded done: the demo's own arrivals stay in the demo. */
  private static List<TestDestination.Arrival> recordedDone(String job) throws SQLException {
    List<TestDestination.Arrival> done = new ArrayList<>();
    try (Connection c = TestDatabase.connect();
        PreparedStatement s = c.prepareStatement("SELECT url, extract(epoch FROM finished_at)"
            + " FROM pacer_item WHERE job = ? AND state = 'done'")) {
      s.setString(1, job);
      try (ResultSet r = s.executeQuery()) {
        while (r.next()) {
          done.add(new TestDestination.Arrival(
              r.getBigDecimal(2).movePointRight(9).longValue(), r.getString(1), "?", 200));
        }
      }
    }
    return done;
  }

  private static int peak(Cli.Result demo) {
    return Integer.parseInt(find(demo.out(), "Busiest 1-s window: (\\d+) requests"));
  }

  private static double aggregate(Cli.Result demo) {
    return Double.parseDouble(find(demo.out(),
        "Aggregate rate at the destination: ([0-9.]+) requests/s"));
  }

  private static int refused(Cli.Result demo) {
    return Integer.parseInt(find(demo.out(), "429 answers from the destination: (\\d+)"));
  }

  private static String find(String text, String regex) {
    Matcher m = Pattern.compile(regex).matcher(text);
    assertThat(m.find()).as("%s in:%n%s", regex, text).isTrue();
    return m.group(1);
  }
}
