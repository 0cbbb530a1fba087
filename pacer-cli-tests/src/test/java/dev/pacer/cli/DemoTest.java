package dev.pacer.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.postgres.TestDatabase;
import dev.pacer.testing.FleetBounds;
import dev.pacer.testing.Timeline;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A short {@code pacer demo}: worker JVMs, the self-enforcing destination (a token bucket at 7/s
 * that answers 429 once it is empty), figures and a PNG. Judged at the destination, from the
 * arrivals its servers stamped (the CSV the demo writes beside its PNG, {@code DemoServer}), with
 * the fleet bounds ({@link FleetBounds}) computed here, not from the figures the demo prints.
 * Fleet-wide pacing holds the ceiling and delivers it; per-process pacing, the same run with each
 * process alone at 7/s, breaks the window. {@code --hosts} holds and delivers every host's ceiling;
 * the same run at {@code --rate 5}, judged against the ceilings of {@code --rate 4} (the twin: 1.25
 * x per host for the fastest hosts, 1.5 x for the 2/s ones), breaks the aggregate.
 */
class DemoTest {

  private static final int RATE = 7;

  /** The ceilings of {@code demo --hosts 6 --rate 4}: the rate, half and a quarter of it, twice. */
  private static final double[] HOST_CEILINGS = {4, 2, 1, 4, 2, 1};

  @TempDir Path dir;

  /** {@link System#nanoTime()} just before the demo's run. */
  private long started;

  /** One request as the demo's destination stamped it, from the demo's CSV. */
  record Arrival(String host, long nanos, String worker, int status) {}

  @Test
  void aShortDemoHoldsTheCeilingAndWritesItsTimeline() throws Exception {
    Cli.Result demo = demo();

    assertThat(demo.code()).as(demo.err()).isEqualTo(0);
    assertThat(demo.out()).contains("\"done\":28", "Pacing: fleet-wide", "28 of 28 items done");
    List<Arrival> arrivals = arrivals(demo);
    assertThat(arrivals).as("one arrival per item").hasSize(28);
    assertThat(arrivals).as("paced traffic is never refused").allMatch(a -> a.status() == 200);
    FleetBounds bounds = FleetBounds.at(RATE, "demo");
    bounds.assertHeld(timeline(arrivals), steady(arrivals));
    bounds.assertDelivered(timeline(arrivals), deliverable(RATE, arrivals));
    Path png = Path.of(find(demo.out(), "Timeline \\(PNG\\): (\\S+)"));
    assertThat(png).startsWith(dir);
    assertThat(Files.size(png)).isGreaterThan(5_000);
  }

  /**
   * The same demo paced per process: three processes at 7/s each, which the destination refuses,
   * and a busiest window that {@link #aShortDemoHoldsTheCeilingAndWritesItsTimeline} would fail.
   * Its aggregate is no twin: the backoff after the 429s (x16 per process) drags it below the
   * ceiling.
   */
  @Test
  void perProcessPacingDrawsRefusalsTheFleetNeverDoes() throws Exception {
    Cli.Result demo = demo("--per-process");

    assertThat(demo.code()).as(demo.err()).isEqualTo(0);
    assertThat(demo.out()).contains("Pacing: per process");
    List<Arrival> arrivals = arrivals(demo);
    assertThat(arrivals).as("refused").anyMatch(a -> a.status() == 429);
    FleetBounds.at(RATE, "demo --per-process").assertWindowBroke(timeline(arrivals));
  }

  /**
   * Six hosts on loopback addresses at 4, 2, 1, 4, 2 and 1/s (the fourth light), paced per host by
   * two worker JVMs: at every host's door its busiest 1-s window holds its ceiling + 1, and each
   * host with a steady part holds its aggregate over it and delivers its ceiling, its turns given
   * up as late counted ({@link GivenUpTurns}); every item is done once and never refused, and the
   * PNG has a lane per host.
   */
  @Test
  void aManyHostDemoHoldsEveryHostsCeilingAndDrawsALanePerHost() throws Exception {
    Cli.Result demo = demo("--hosts", "6", "--rate", "4", "--processes", "2", "--threads", "3");

    assertThat(demo.code()).as(demo.err()).isEqualTo(0);
    // 16, 8 and 4 items at 4, 2 and 1/s for 4 s, 3 for the light host, then 8 and 4.
    assertThat(demo.out()).contains("Pacing: per host", "Items done: 43 of 43");
    List<Arrival> arrivals = arrivals(demo);
    assertThat(arrivals).as("one arrival per item").hasSize(43);
    assertThat(arrivals).as("paced traffic is never refused").allMatch(a -> a.status() == 200);
    Map<String, List<Arrival>> byHost = byHost(arrivals);
    assertThat(byHost).hasSize(HOST_CEILINGS.length);
    int judged = 0;
    for (int i = 0; i < HOST_CEILINGS.length; i++) {
      String host = "127.0.0." + (i + 2);
      List<Arrival> at = byHost.get(host);
      System.out.printf(
          "demo --hosts, %s: arrivals at ms %s; sent (ms, lateness ms) %s%n",
          host, offsets(at), sent(find(demo.out(), "\"job\":\"([^\"]+)\""), host));
      FleetBounds bounds = FleetBounds.at(HOST_CEILINGS[i], "demo --hosts, " + host);
      Timeline steady = steady(at);
      if (steady.size() >= 3) {
        bounds.assertHeld(timeline(at), steady);
        // The demo stamps arrivals from its own start, which this JVM knows only roughly: a host's
        // turns given up as late count wherever in the run they fell.
        bounds.assertDeliveredBesideGivenUp(
            timeline(at), deliverable(HOST_CEILINGS[i], at), GivenUpTurns.in(demo.err()).of(host));
        judged++;
      } else {
        assertThat(timeline(at).peakOneSecondWindow())
            .as("busiest 1-s window at %s: %s", host, timeline(at))
            .isLessThanOrEqualTo(bounds.mostInAWindow());
      }
    }
    assertThat(judged)
        .as("hosts with a steady part of 3 arrivals or more")
        .isGreaterThanOrEqualTo(3);
    Path png = Path.of(find(demo.out(), "Timeline \\(PNG\\): (\\S+)"));
    assertThat(png).startsWith(dir);
    java.awt.image.BufferedImage image = javax.imageio.ImageIO.read(png.toFile());
    assertThat(image.getHeight()).isEqualTo(dev.pacer.cli.demo.HostLanesPlot.height(6));
  }

  /**
   * The twin of {@link #aManyHostDemoHoldsEveryHostsCeilingAndDrawsALanePerHost}: the same demo
   * paced at {@code --rate 5}, judged against the ceilings of {@code --rate 4}, is a fleet that
   * paces its 4/s hosts at 1.25 x and its 2/s hosts at 1.5 x their ceilings. A window of the
   * ceiling + 1 may admit that; the aggregate over the steady part may not.
   */
  @Test
  void aManyHostDemoAboveItsHostsCeilingsBreaksTheAggregate() throws Exception {
    Cli.Result demo = demo("--hosts", "6", "--rate", "5", "--processes", "2", "--threads", "3");

    assertThat(demo.code()).as(demo.err()).isEqualTo(0);
    Map<String, List<Arrival>> byHost = byHost(arrivals(demo));
    for (int i : new int[] {0, 1, 4}) {
      String host = "127.0.0." + (i + 2);
      FleetBounds.at(HOST_CEILINGS[i], "demo --hosts --rate 5 against --rate 4, " + host)
          .assertAggregateBroke(steady(byHost.get(host)));
    }
  }

  /**
   * Runs the demo. {@link #arrivals} places its stamps, timed from its servers' start, on this
   * JVM's {@link System#nanoTime()} from the instant just before the run: early by the demo's
   * set-up, which only shifts the span that {@link FleetBounds} checks for wall-clock steps.
   */
  private Cli.Result demo(String... extra) {
    String[] args = {
      "demo",
      "--seconds",
      "4",
      "--db",
      TestDatabase.jdbcUrl(),
      "--data-dir",
      dir.toString(),
      "--max-load",
      "1000",
      "--no-progress"
    };
    String[] all = java.util.Arrays.copyOf(args, args.length + extra.length);
    System.arraycopy(extra, 0, all, args.length, extra.length);
    started = System.nanoTime();
    Cli.Result demo = Cli.run(all);
    System.out.println(demo.out());
    return demo;
  }

  /** The arrivals the demo's destinations stamped, from the CSV it names. */
  private List<Arrival> arrivals(Cli.Result demo) throws Exception {
    Path csv = Path.of(find(demo.out(), "Arrivals \\(CSV\\): (\\S+)"));
    assertThat(csv).startsWith(dir);
    List<String> lines = Files.readAllLines(csv);
    assertThat(lines.get(0)).isEqualTo("host,nanos,worker,status");
    List<Arrival> arrivals = new ArrayList<>();
    for (String line : lines.subList(1, lines.size())) {
      String[] f = line.split(",");
      arrivals.add(new Arrival(f[0], started + Long.parseLong(f[1]), f[2], Integer.parseInt(f[3])));
    }
    return arrivals;
  }

  private static Map<String, List<Arrival>> byHost(List<Arrival> arrivals) {
    return arrivals.stream()
        .collect(Collectors.groupingBy(Arrival::host, TreeMap::new, Collectors.toList()));
  }

  private static Timeline timeline(List<Arrival> arrivals) {
    return new Timeline(arrivals.stream().map(Arrival::nanos).toList());
  }

  /** The steady part: the arrivals after the first second, which holds the cold first requests. */
  private static Timeline steady(List<Arrival> arrivals) {
    return timeline(arrivals).after(1);
  }

  /** The rate all of {@code arrivals} span if every turn was taken ({@link DeliverableRate}). */
  private static double deliverable(double ceiling, List<Arrival> arrivals) {
    return DeliverableRate.of(ceiling, arrivals, Arrival::nanos, Arrival::worker);
  }

  /** Offsets in ms from the first of {@code arrivals}. */
  private static String offsets(List<Arrival> arrivals) {
    long first = arrivals.get(0).nanos();
    return arrivals.stream()
        .map(a -> Long.toString((a.nanos() - first) / 1_000_000))
        .collect(Collectors.joining(" "));
  }

  /** When the job's requests to {@code host} were handed to the client, from the request log. */
  private static String sent(String job, String host) throws Exception {
    StringBuilder out = new StringBuilder();
    try (java.sql.Connection c = TestDatabase.connect();
        java.sql.PreparedStatement s =
            c.prepareStatement(
                "SELECT (extract(epoch FROM sent_at - min(sent_at) OVER ()) * 1000)::bigint,"
                    + " lateness_us / 1000 FROM pacer_request WHERE job = ? AND destination = ?"
                    + " ORDER BY sent_at")) {
      s.setString(1, job);
      s.setString(2, host);
      try (java.sql.ResultSet r = s.executeQuery()) {
        while (r.next()) {
          out.append(r.getLong(1)).append(" (").append(r.getLong(2)).append(") ");
        }
      }
    }
    return out.toString();
  }

  private static String find(String text, String regex) {
    Matcher m = Pattern.compile(regex).matcher(text);
    assertThat(m.find()).as("%s in:%n%s", regex, text).isTrue();
    return m.group(1);
  }
}
