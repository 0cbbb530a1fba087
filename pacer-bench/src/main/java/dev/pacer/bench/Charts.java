package dev.pacer.bench;

import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.awt.FontMetrics;
import java.awt.Graphics2D;
import java.awt.RenderingHints;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import javax.imageio.ImageIO;

/** The PNG charts beside {@code benchmarks.md}, drawn with plain Java2D. */
final class Charts {

  static final String THROUGHPUT = "bench-throughput.png";
  static final String COMMIT_MODE = "bench-commit-mode.png";
  static final String LATENCY = "bench-latency.png";
  static final String ACCURACY = "bench-accuracy.png";

  private static final int W = 960;
  private static final int H = 540;
  private static final int LEFT = 90;
  private static final int RIGHT = 30;
  private static final int TOP = 60;
  private static final int BOTTOM = 110;
  private static final Color[] PALETTE = {
    new Color(0x1f77b4), new Color(0x2ca02c), new Color(0x98df8a), new Color(0xd62728),
    new Color(0xff7f0e), new Color(0x9467bd), new Color(0x8c564b), new Color(0x7f7f7f)
  };

  private Charts() {}

  static void writeAll(Results r, Path dir) throws IOException {
    throughput(r, dir.resolve(THROUGHPUT));
    commitMode(r, dir.resolve(COMMIT_MODE));
    latency(r, dir.resolve(LATENCY));
    accuracy(r, dir.resolve(ACCURACY));
  }

  private static void throughput(Results r, Path file) throws IOException {
    List<String> groups = new ArrayList<>();
    for (int n : r.settings.processCounts()) {
      groups.add(n + (n == 1 ? " process" : " processes"));
    }
    Map<String, double[]> series = new LinkedHashMap<>();
    series.put("pgbench, same statement (clients)", values(r.pgbench, r.settings.processCounts()));
    series.put(
        "Pacer, hot key, one turn a statement", values(r.hotKey(), r.settings.processCounts()));
    series.put(
        "Pacer, " + r.settings.spreadKeys() + " keys",
        values(
            r.series(Contender.PACER, false, r.settings.spreadKeys()), r.settings.processCounts()));
    series.put(
        "Bucket4j select-for-update",
        values(
            r.series(Contender.BUCKET4J_SELECT_FOR_UPDATE, false, 1), r.settings.processCounts()));
    series.put(
        "Bucket4j advisory-lock",
        values(r.series(Contender.BUCKET4J_ADVISORY_LOCK, false, 1), r.settings.processCounts()));
    series.put(
        "naive advisory-lock transaction",
        values(r.series(Contender.NAIVE_ADVISORY, false, 1), r.settings.processCounts()));
    bars(
        file,
        "Reservations per second, one key (all with synchronous_commit = off)",
        "reservations / s",
        groups,
        series);
  }

  private static void commitMode(Results r, Path file) throws IOException {
    int n = r.commitModeProcesses().get(0);
    List<String> groups =
        List.of(
            "Pacer (own table)",
            "Pacer (key/value table)",
            "Bucket4j select-for-update",
            "Bucket4j advisory-lock",
            "naive transaction");
    Contender[] order = {
      Contender.PACER,
      Contender.PACER_KEY_VALUE,
      Contender.BUCKET4J_SELECT_FOR_UPDATE,
      Contender.BUCKET4J_ADVISORY_LOCK,
      Contender.NAIVE_ADVISORY
    };
    double[] off = new double[order.length];
    double[] on = new double[order.length];
    for (int i = 0; i < order.length; i++) {
      off[i] = r.series(order[i], false, 1).getOrDefault(n, Double.NaN);
      on[i] = r.series(order[i], true, 1).getOrDefault(n, Double.NaN);
    }
    Map<String, double[]> series = new LinkedHashMap<>();
    series.put("synchronous_commit = off (Pacer's default)", off);
    series.put("synchronous_commit = on (PostgreSQL's default)", on);
    bars(file, "Commit mode: one hot key, " + n + " processes", "reservations / s", groups, series);
  }

  private static void latency(Results r, Path file) throws IOException {
    Latency.Result l = r.latency;
    Map<String, double[]> series = new LinkedHashMap<>();
    series.put("SELECT 1", new double[] {l.select1P50(), l.select1P99()});
    series.put("bare one-row upsert", new double[] {l.bareUpsertP50(), l.bareUpsertP99()});
    series.put("Pacer reservation", new double[] {l.reserveP50(), l.reserveP99()});
    bars(
        file,
        String.format(
            Locale.ROOT,
            "Round trip from one thread (reservation p50 = %.2f x SELECT 1 p50)",
            l.ratio()),
        "microseconds",
        List.of("p50", "p99"),
        series);
  }

  private static void accuracy(Results r, Path file) throws IOException {
    BufferedImage img = canvas();
    Graphics2D g = graphics(img);
    Accuracy pacer = r.pacerAccuracy;
    Accuracy local = r.perProcessAccuracy;
    long step = 20_000;
    int[] a = pacer.slidingWindowCounts(step);
    int[] b = local.slidingWindowCounts(step);
    double yMax = niceCeiling(Math.max(max(a), max(b)) * 1.1);
    double xMax = Math.max(a.length, b.length) * step / 1e6;
    title(
        g,
        String.format(
            Locale.ROOT,
            "Acquisitions in the trailing 1-s window: %d processes x %d threads vs a %.0f/s"
                + " ceiling",
            pacer.processes(),
            pacer.threadsPerProcess(),
            pacer.ceiling()));
    axes(g, yMax, "acquisitions in last 1 s");
    xAxis(g, xMax, "seconds since the first acquisition");
    line(g, b, step, xMax, yMax, PALETTE[3]);
    line(g, a, step, xMax, yMax, PALETTE[0]);
    g.setColor(Color.BLACK);
    g.setStroke(
        new BasicStroke(
            1.5f, BasicStroke.CAP_BUTT, BasicStroke.JOIN_MITER, 10, new float[] {6, 4}, 0));
    int yc = y(pacer.ceiling(), yMax);
    g.drawLine(LEFT, yc, W - RIGHT, yc);
    g.setStroke(new BasicStroke(1));
    legend(
        g,
        List.of(
            String.format(
                Locale.ROOT,
                "Pacer (shared cursor): delivered %.3f x ceiling, peak %d",
                pacer.deliveredRatio(),
                pacer.peakWindow()),
            String.format(
                Locale.ROOT,
                "per-process pacing: delivered %.2f x ceiling, peak %d",
                local.deliveredRatio(),
                local.peakWindow()),
            "ceiling"),
        new Color[] {PALETTE[0], PALETTE[3], Color.BLACK});
    save(img, g, file);
  }

  private static void bars(
      Path file, String title, String yLabel, List<String> groups, Map<String, double[]> series)
      throws IOException {
    BufferedImage img = canvas();
    Graphics2D g = graphics(img);
    double top = 0;
    for (double[] v : series.values()) {
      for (double d : v) {
        if (!Double.isNaN(d)) {
          top = Math.max(top, d);
        }
      }
    }
    double yMax = niceCeiling(top * 1.12);
    title(g, title);
    axes(g, yMax, yLabel);
    int plotW = W - LEFT - RIGHT;
    int groupW = plotW / groups.size();
    int k = series.size();
    int barW = Math.max(4, (int) (groupW * 0.8 / k));
    g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 12));
    FontMetrics fm = g.getFontMetrics();
    for (int gi = 0; gi < groups.size(); gi++) {
      int x0 = LEFT + gi * groupW + (groupW - barW * k) / 2;
      int si = 0;
      for (double[] v : series.values()) {
        double d = v[gi];
        if (!Double.isNaN(d)) {
          int yTop = y(d, yMax);
          g.setColor(PALETTE[si % PALETTE.length]);
          g.fillRect(x0 + si * barW, yTop, barW - 2, H - BOTTOM - yTop);
          g.setColor(Color.DARK_GRAY);
          String label =
              d >= 100
                  ? String.format(Locale.ROOT, "%.0f", d)
                  : String.format(Locale.ROOT, "%.1f", d);
          if (fm.stringWidth(label) <= barW - 2) {
            g.drawString(label, x0 + si * barW + (barW - 2 - fm.stringWidth(label)) / 2, yTop - 3);
          }
        }
        si++;
      }
      g.setColor(Color.BLACK);
      String name = groups.get(gi);
      g.drawString(name, LEFT + gi * groupW + (groupW - fm.stringWidth(name)) / 2, H - BOTTOM + 18);
    }
    Color[] colors = new Color[k];
    for (int i = 0; i < k; i++) {
      colors[i] = PALETTE[i % PALETTE.length];
    }
    legend(g, new ArrayList<>(series.keySet()), colors);
    save(img, g, file);
  }

  private static double[] values(Map<Integer, Double> byCount, List<Integer> counts) {
    double[] v = new double[counts.size()];
    for (int i = 0; i < v.length; i++) {
      v[i] = byCount.getOrDefault(counts.get(i), Double.NaN);
    }
    return v;
  }

  private static BufferedImage canvas() {
    return new BufferedImage(W, H, BufferedImage.TYPE_INT_RGB);
  }

  private static Graphics2D graphics(BufferedImage img) {
    Graphics2D g = img.createGraphics();
    g.setRenderingHint(RenderingHints.KEY_ANTIALIASING, RenderingHints.VALUE_ANTIALIAS_ON);
    g.setRenderingHint(
        RenderingHints.KEY_TEXT_ANTIALIASING, RenderingHints.VALUE_TEXT_ANTIALIAS_ON);
    g.setColor(Color.WHITE);
    g.fillRect(0, 0, W, H);
    return g;
  }

  private static void title(Graphics2D g, String title) {
    g.setColor(Color.BLACK);
    g.setFont(new Font(Font.SANS_SERIF, Font.BOLD, 16));
    g.drawString(title, LEFT, 32);
  }

  private static void axes(Graphics2D g, double yMax, String yLabel) {
    g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 12));
    FontMetrics fm = g.getFontMetrics();
    double tick = yMax / 5;
    for (int i = 0; i <= 5; i++) {
      double v = tick * i;
      int yy = y(v, yMax);
      g.setColor(new Color(0xdddddd));
      g.drawLine(LEFT, yy, W - RIGHT, yy);
      g.setColor(Color.BLACK);
      String s =
          v >= 10 ? String.format(Locale.ROOT, "%,.0f", v) : String.format(Locale.ROOT, "%.1f", v);
      g.drawString(s, LEFT - 8 - fm.stringWidth(s), yy + 4);
    }
    g.drawLine(LEFT, TOP, LEFT, H - BOTTOM);
    g.drawLine(LEFT, H - BOTTOM, W - RIGHT, H - BOTTOM);
    Graphics2D rotated = (Graphics2D) g.create();
    rotated.rotate(-Math.PI / 2);
    rotated.drawString(yLabel, -(TOP + (H - TOP - BOTTOM) / 2 + fm.stringWidth(yLabel) / 2), 18);
    rotated.dispose();
  }

  private static void xAxis(Graphics2D g, double xMax, String label) {
    FontMetrics fm = g.getFontMetrics();
    int plotW = W - LEFT - RIGHT;
    double tick = Math.max(0.5, Math.ceil(xMax / 10 * 2) / 2);
    for (double v = 0; v <= xMax + 1e-9; v += tick) {
      int xx = LEFT + (int) (v / xMax * plotW);
      g.drawLine(xx, H - BOTTOM, xx, H - BOTTOM + 4);
      String s = String.format(Locale.ROOT, "%.1f", v);
      g.drawString(s, xx - fm.stringWidth(s) / 2, H - BOTTOM + 18);
    }
    g.drawString(label, LEFT + plotW / 2 - fm.stringWidth(label) / 2, H - BOTTOM + 36);
  }

  private static void line(
      Graphics2D g, int[] counts, long stepMicros, double xMax, double yMax, Color color) {
    int plotW = W - LEFT - RIGHT;
    g.setColor(color);
    g.setStroke(new BasicStroke(2));
    for (int i = 1; i < counts.length; i++) {
      int x1 = LEFT + (int) ((i - 1) * stepMicros / 1e6 / xMax * plotW);
      int x2 = LEFT + (int) (i * stepMicros / 1e6 / xMax * plotW);
      g.drawLine(x1, y(counts[i - 1], yMax), x2, y(counts[i], yMax));
    }
    g.setStroke(new BasicStroke(1));
  }

  private static void legend(Graphics2D g, List<String> names, Color[] colors) {
    g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 12));
    int x = LEFT;
    int yy = H - BOTTOM + 52;
    FontMetrics fm = g.getFontMetrics();
    for (int i = 0; i < names.size(); i++) {
      int w = 18 + fm.stringWidth(names.get(i)) + 22;
      if (x + w > W - RIGHT) {
        x = LEFT;
        yy += 20;
      }
      g.setColor(colors[i]);
      g.fillRect(x, yy - 10, 12, 12);
      g.setColor(Color.BLACK);
      g.drawString(names.get(i), x + 18, yy);
      x += w;
    }
  }

  private static int y(double v, double yMax) {
    return H - BOTTOM - (int) Math.round(v / yMax * (H - TOP - BOTTOM));
  }

  private static double niceCeiling(double v) {
    if (v <= 0) {
      return 1;
    }
    double magnitude = Math.pow(10, Math.floor(Math.log10(v)));
    for (double m : new double[] {1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10}) {
      if (m * magnitude >= v) {
        return m * magnitude;
      }
    }
    return 10 * magnitude;
  }

  private static int max(int[] a) {
    int m = 0;
    for (int v : a) {
      m = Math.max(m, v);
    }
    return m;
  }

  private static void save(BufferedImage img, Graphics2D g, Path file) throws IOException {
    g.dispose();
    ImageIO.write(img, "png", file.toFile());
  }
}
