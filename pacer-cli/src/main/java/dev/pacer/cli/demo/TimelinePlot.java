package dev.pacer.cli.demo;

import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.awt.Graphics2D;
import java.awt.RenderingHints;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

/**
 * A PNG timeline of a run as the destination saw it: requests per second (1-s bins) for each worker
 * process (thin coloured lines) and for all of them together (thick black line), the ceiling as a
 * dashed red line, and the 429 answers per second as red bars. Plain Java2D.
 */
public final class TimelinePlot {

  public static final int WIDTH = 1000;
  public static final int HEIGHT = 520;

  /** The ceiling line's colour (tests look for it). */
  public static final Color CEILING = new Color(220, 30, 30);

  private static final Color[] PALETTE = {
    new Color(31, 119, 180), new Color(255, 127, 14), new Color(44, 160, 44),
    new Color(148, 103, 189), new Color(140, 86, 75), new Color(227, 119, 194),
    new Color(127, 127, 127), new Color(188, 189, 34), new Color(23, 190, 207)
  };
  private static final int LEFT = 70;
  private static final int RIGHT = 190;
  private static final int TOP = 50;
  private static final int BOTTOM = 60;

  private TimelinePlot() {}

  /** Per-second counts, index = second since the first arrival. */
  static int[] perSecond(
      List<DemoServer.Arrival> arrivals,
      long origin,
      int seconds,
      java.util.function.Predicate<DemoServer.Arrival> which) {
    int[] bins = new int[seconds];
    for (DemoServer.Arrival a : arrivals) {
      if (which.test(a)) {
        int bin = (int) ((a.nanos() - origin) / 1_000_000_000L);
        if (bin >= 0 && bin < seconds) {
          bins[bin]++;
        }
      }
    }
    return bins;
  }

  public static void write(
      List<DemoServer.Arrival> arrivals, double ceiling, String title, Path png)
      throws IOException {
    if (arrivals.isEmpty()) {
      throw new IllegalArgumentException("no arrivals to plot");
    }
    long origin = arrivals.get(0).nanos();
    long last = arrivals.get(arrivals.size() - 1).nanos();
    int seconds = (int) ((last - origin) / 1_000_000_000L) + 1;
    Map<String, int[]> perWorker = new TreeMap<>();
    for (DemoServer.Arrival a : arrivals) {
      perWorker.computeIfAbsent(
          a.worker(), w -> perSecond(arrivals, origin, seconds, x -> x.worker().equals(w)));
    }
    int[] all = perSecond(arrivals, origin, seconds, a -> true);
    int[] refused = perSecond(arrivals, origin, seconds, a -> a.status() == 429);
    int peak = 0;
    for (int v : all) {
      peak = Math.max(peak, v);
    }
    double yMax = Math.max(peak, ceiling) * 1.15 + 1;

    BufferedImage image = new BufferedImage(WIDTH, HEIGHT, BufferedImage.TYPE_INT_RGB);
    Graphics2D g = image.createGraphics();
    g.setRenderingHint(RenderingHints.KEY_ANTIALIASING, RenderingHints.VALUE_ANTIALIAS_ON);
    g.setColor(Color.WHITE);
    g.fillRect(0, 0, WIDTH, HEIGHT);
    int plotW = WIDTH - LEFT - RIGHT;
    int plotH = HEIGHT - TOP - BOTTOM;
    Axis x = v -> LEFT + (int) Math.round(v / Math.max(1, seconds) * plotW);
    Axis y = v -> TOP + plotH - (int) Math.round(v / yMax * plotH);
    drawFrame(g, title, seconds, yMax, x, y);
    List<String> labels = drawSeries(g, perWorker, all, refused, ceiling, x, y);
    drawLegend(g, ceiling, labels);
    g.dispose();
    Png.write(image, png, ".timeline");
  }

  /** The grid, the axes and their labels, and the title. */
  private static void drawFrame(
      Graphics2D g, String title, int seconds, double yMax, Axis x, Axis y) {
    int plotW = WIDTH - LEFT - RIGHT;
    int plotH = HEIGHT - TOP - BOTTOM;
    g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 12));
    int yStep = Math.max(1, (int) Math.ceil(yMax / 10));
    for (int v = 0; v <= yMax; v += yStep) {
      g.setColor(new Color(235, 235, 235));
      g.drawLine(LEFT, y.at(v), LEFT + plotW, y.at(v));
      g.setColor(Color.DARK_GRAY);
      g.drawString(Integer.toString(v), LEFT - 30, y.at(v) + 4);
    }
    int xStep = Math.max(1, seconds / 10);
    for (int s = 0; s <= seconds; s += xStep) {
      g.setColor(Color.DARK_GRAY);
      g.drawString(s + " s", x.at(s) - 8, TOP + plotH + 18);
    }
    g.setColor(Color.BLACK);
    g.drawRect(LEFT, TOP, plotW, plotH);
    g.drawString("seconds since the first request", LEFT + plotW / 2 - 90, HEIGHT - 20);
    g.rotate(-Math.PI / 2);
    g.drawString("requests per second at the destination", -(TOP + plotH / 2 + 110), 20);
    g.rotate(Math.PI / 2);
    g.setFont(new Font(Font.SANS_SERIF, Font.BOLD, 15));
    g.drawString(title, LEFT, 30);
  }

  /**
   * The 429s as bars, a line per process, the aggregate and the ceiling; returns the processes'
   * labels, in the order of their colours.
   */
  private static List<String> drawSeries(
      Graphics2D g,
      Map<String, int[]> perWorker,
      int[] all,
      int[] refused,
      double ceiling,
      Axis x,
      Axis y) {
    int plotW = WIDTH - LEFT - RIGHT;
    // 429s as bars
    g.setColor(new Color(255, 170, 170));
    for (int s = 0; s < refused.length; s++) {
      if (refused[s] > 0) {
        g.fillRect(
            x.at(s) + 1,
            y.at(refused[s]),
            Math.max(1, x.at(s + 1) - x.at(s) - 2),
            y.at(0) - y.at(refused[s]));
      }
    }
    // per process
    int i = 0;
    List<String> labels = new ArrayList<>();
    for (Map.Entry<String, int[]> e : perWorker.entrySet()) {
      g.setColor(PALETTE[i % PALETTE.length]);
      g.setStroke(new BasicStroke(1.6f));
      series(g, e.getValue(), x, y);
      labels.add("worker pid " + e.getKey());
      i++;
    }
    // aggregate
    g.setColor(Color.BLACK);
    g.setStroke(new BasicStroke(3f));
    series(g, all, x, y);
    // ceiling
    g.setColor(CEILING);
    g.setStroke(
        new BasicStroke(
            2.5f, BasicStroke.CAP_BUTT, BasicStroke.JOIN_MITER, 10f, new float[] {10f, 6f}, 0f));
    g.drawLine(LEFT, y.at(ceiling), LEFT + plotW, y.at(ceiling));
    return labels;
  }

  private static void drawLegend(Graphics2D g, double ceiling, List<String> labels) {
    g.setStroke(new BasicStroke(2f));
    g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 12));
    int ly = TOP + 10;
    legend(g, Color.BLACK, "all processes", ly);
    legend(g, CEILING, String.format(Locale.ROOT, "ceiling %.1f/s", ceiling), ly += 20);
    legend(g, new Color(255, 170, 170), "answered 429", ly += 20);
    for (int k = 0; k < labels.size(); k++) {
      legend(g, PALETTE[k % PALETTE.length], labels.get(k), ly += 20);
    }
  }

  private interface Axis {
    int at(double value);
  }

  private static void series(Graphics2D g, int[] bins, Axis x, Axis y) {
    for (int s = 1; s < bins.length; s++) {
      g.drawLine(x.at(s - 0.5), y.at(bins[s - 1]), x.at(s + 0.5), y.at(bins[s]));
    }
    if (bins.length == 1) {
      g.drawLine(x.at(0), y.at(bins[0]), x.at(1), y.at(bins[0]));
    }
  }

  private static void legend(Graphics2D g, Color color, String label, int yPos) {
    int x0 = WIDTH - RIGHT + 15;
    g.setColor(color);
    g.fillRect(x0, yPos - 8, 18, 8);
    g.setColor(Color.BLACK);
    g.drawString(label, x0 + 25, yPos);
  }
}
