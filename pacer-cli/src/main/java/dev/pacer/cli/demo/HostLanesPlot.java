package dev.pacer.cli.demo;

import java.awt.Color;
import java.awt.Font;
import java.awt.GradientPaint;
import java.awt.Graphics2D;
import java.awt.RenderingHints;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;

/**
 * A PNG of a many-host run as each host saw it: one lane per host, time across. A lane's upper half
 * has a tick per request that reached the host (red if it answered 429), so the spacing of its
 * turns shows; its lower half is a heat strip of the requests in each second against the host's own
 * ceiling, from pale (none) to dark blue (at the ceiling), and {@linkplain #OVER red} where a
 * second held more than the ceiling + 1. On the left each lane names its host and ceiling; on the
 * right, its busiest sliding 1-s window against the ceiling + 1, in green if kept. Plain Java2D.
 */
public final class HostLanesPlot {

  /** One host: its ceiling and its arrivals, in time order, timed from the run's shared origin. */
  public record Lane(String host, double ceiling, List<DemoServer.Arrival> arrivals) {}

  public static final int WIDTH = 1100;

  /** A second above the ceiling + 1 (tests look for it). */
  public static final Color OVER = new Color(220, 30, 30);

  /** A second with no request. */
  static final Color EMPTY = new Color(242, 242, 242);

  private static final Color PALE = new Color(198, 219, 239);
  private static final Color FULL = new Color(8, 69, 148);

  static final int LEFT = 190;
  static final int RIGHT = 200;
  static final int TOP = 60;
  private static final int BOTTOM = 80;

  /** Lanes share about this many pixels, each between {@link #MIN_LANE} and {@link #MAX_LANE}. */
  private static final int LANES_HEIGHT = 720;

  private static final int MIN_LANE = 4;
  private static final int MAX_LANE = 26;

  private HostLanesPlot() {}

  /** A lane's height in pixels for {@code lanes} lanes. */
  static int laneHeight(int lanes) {
    return Math.max(MIN_LANE, Math.min(MAX_LANE, LANES_HEIGHT / Math.max(1, lanes)));
  }

  /** The image's height for {@code lanes} lanes. */
  public static int height(int lanes) {
    return TOP + lanes * laneHeight(lanes) + BOTTOM;
  }

  /**
   * The colour of a second with {@code count} requests at a host whose ceiling is {@code ceiling}.
   */
  static Color cell(int count, double ceiling) {
    if (count == 0) {
      return EMPTY;
    }
    if (count > Math.floor(ceiling) + 1) {
      return OVER;
    }
    double f = Math.min(1, count / ceiling);
    return new Color(
        mix(PALE.getRed(), FULL.getRed(), f),
        mix(PALE.getGreen(), FULL.getGreen(), f),
        mix(PALE.getBlue(), FULL.getBlue(), f));
  }

  private static int mix(int from, int to, double f) {
    return (int) Math.round(from + (to - from) * f);
  }

  public static void write(List<Lane> lanes, String title, Path png) throws IOException {
    long origin = Long.MAX_VALUE;
    long last = Long.MIN_VALUE;
    for (Lane lane : lanes) {
      for (DemoServer.Arrival a : lane.arrivals()) {
        origin = Math.min(origin, a.nanos());
        last = Math.max(last, a.nanos());
      }
    }
    if (origin == Long.MAX_VALUE) {
      throw new IllegalArgumentException("no arrivals to plot");
    }
    int seconds = (int) ((last - origin) / 1_000_000_000L) + 1;
    int laneH = laneHeight(lanes.size());
    int height = height(lanes.size());
    int plotW = WIDTH - LEFT - RIGHT;
    Scale scale = new Scale(origin, seconds, laneH, (double) plotW / seconds);

    BufferedImage image = new BufferedImage(WIDTH, height, BufferedImage.TYPE_INT_RGB);
    Graphics2D g = image.createGraphics();
    g.setRenderingHint(
        RenderingHints.KEY_TEXT_ANTIALIASING, RenderingHints.VALUE_TEXT_ANTIALIAS_ON);
    g.setColor(Color.WHITE);
    g.fillRect(0, 0, WIDTH, height);
    g.setColor(Color.BLACK);
    g.setFont(new Font(Font.SANS_SERIF, Font.BOLD, 15));
    g.drawString(title, 12, 24);
    g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 12));
    g.drawString("host, ceiling", 12, TOP - 8);
    g.drawString("busiest 1 s / allowed", WIDTH - RIGHT + 10, TOP - 8);

    // Label every lane if it is tall enough for a line of text, else every k-th.
    int labelEvery = Math.max(1, (int) Math.ceil(13.0 / laneH));
    Font labelFont = new Font(Font.SANS_SERIF, Font.PLAIN, Math.min(12, Math.max(9, laneH - 2)));
    for (int i = 0; i < lanes.size(); i++) {
      drawLane(g, scale, lanes.get(i), TOP + i * laneH, i % labelEvery == 0 ? labelFont : null);
    }
    int plotBottom = TOP + lanes.size() * laneH;
    g.setColor(Color.GRAY);
    g.drawRect(LEFT - 1, TOP - 1, plotW + 1, plotBottom - TOP + 1);
    drawTimeAxis(g, scale, plotBottom);
    drawLegend(g, height - 22, laneH >= 12);
    g.dispose();
    Png.write(image, png, ".lanes");
  }

  /** The plot's time scale and its lanes' height, shared by every part drawn. */
  private record Scale(long t0, int seconds, int laneH, double pxPerSecond) {}

  /**
   * One lane at {@code top}: its heat strip, its ticks if it is tall enough, and its labels in
   * {@code labelFont} (none if null).
   */
  private static void drawLane(Graphics2D g, Scale scale, Lane lane, int top, Font labelFont) {
    int laneH = scale.laneH();
    int[] bins = new int[scale.seconds()];
    for (DemoServer.Arrival a : lane.arrivals()) {
      bins[(int) ((a.nanos() - scale.t0()) / 1_000_000_000L)]++;
    }
    boolean ticks = laneH >= 12;
    int stripTop = ticks ? top + laneH / 2 : top;
    int stripH = (ticks ? laneH - laneH / 2 : laneH) - 1;
    for (int s = 0; s < scale.seconds(); s++) {
      int x0 = LEFT + (int) Math.round(s * scale.pxPerSecond());
      int x1 = LEFT + (int) Math.round((s + 1) * scale.pxPerSecond());
      g.setColor(cell(bins[s], lane.ceiling()));
      g.fillRect(x0, stripTop, Math.max(1, x1 - x0 - 1), Math.max(1, stripH));
    }
    if (ticks) {
      for (DemoServer.Arrival a : lane.arrivals()) {
        int x = LEFT + (int) Math.round((a.nanos() - scale.t0()) / 1e9 * scale.pxPerSecond());
        g.setColor(a.status() == 429 ? OVER : Color.BLACK);
        g.drawLine(x, top + 2, x, top + laneH / 2 - 1);
      }
    }
    int busiest = DemoServer.busiestOneSecond(lane.arrivals());
    boolean kept = busiest <= Math.floor(lane.ceiling()) + 1;
    if (labelFont != null) {
      int baseline = top + Math.min(laneH, 13) - 2 + Math.max(0, (laneH - 13) / 2);
      g.setFont(labelFont);
      g.setColor(Color.BLACK);
      g.drawString(lane.host() + "  " + rate(lane.ceiling()) + "/s", 12, baseline);
      g.setColor(kept ? new Color(20, 120, 40) : OVER);
      g.drawString(
          busiest
              + " / "
              + (long) (Math.floor(lane.ceiling()) + 1)
              + (kept ? "  kept" : "  EXCEEDED"),
          WIDTH - RIGHT + 10,
          baseline);
    }
  }

  private static void drawTimeAxis(Graphics2D g, Scale scale, int plotBottom) {
    int plotW = WIDTH - LEFT - RIGHT;
    g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 12));
    g.setColor(Color.DARK_GRAY);
    int step = Math.max(1, (int) Math.ceil(scale.seconds() / 12.0));
    for (int s = 0; s <= scale.seconds(); s += step) {
      int x = LEFT + (int) Math.round(s * scale.pxPerSecond());
      g.drawLine(x, plotBottom, x, plotBottom + 4);
      g.drawString(s + " s", x - 8, plotBottom + 17);
    }
    g.drawString("seconds since the first request", LEFT + plotW / 2 - 90, plotBottom + 34);
  }

  /**
   * The strip's scale, the red, and the ticks if the lanes have them, laid out by the text's
   * measured widths.
   */
  private static void drawLegend(Graphics2D g, int ly, boolean ticks) {
    Legend legend = new Legend(g, LEFT, ly);
    legend.text("requests in that second:");
    legend.swatch(EMPTY, "none");
    g.setPaint(new GradientPaint(legend.x, 0, PALE, legend.x + 90, 0, FULL));
    g.fillRect(legend.x, ly - 10, 90, 12);
    legend.x += 96;
    legend.text("up to the host's ceiling");
    legend.swatch(OVER, "above ceiling + 1");
    if (ticks) {
      g.setColor(Color.BLACK);
      g.drawLine(legend.x, ly - 10, legend.x, ly + 2);
      g.drawLine(legend.x + 4, ly - 10, legend.x + 4, ly + 2);
      legend.x += 10;
      legend.text("a tick per request (red: 429)");
    }
  }

  /** A row of legend entries, left to right. */
  private static final class Legend {
    private final Graphics2D g;
    private final int y;
    int x;

    Legend(Graphics2D g, int x, int y) {
      this.g = g;
      this.x = x;
      this.y = y;
    }

    void text(String label) {
      g.setColor(Color.BLACK);
      g.drawString(label, x, y);
      x += g.getFontMetrics().stringWidth(label) + 14;
    }

    void swatch(Color color, String label) {
      g.setColor(color);
      g.fillRect(x, y - 10, 16, 12);
      x += 20;
      text(label);
    }
  }

  /** 7, 3.5, 1.75. */
  static String rate(double value) {
    String s = String.format(Locale.ROOT, "%.2f", value);
    return s.replaceAll("0+$", "").replaceAll("\\.$", "");
  }
}
