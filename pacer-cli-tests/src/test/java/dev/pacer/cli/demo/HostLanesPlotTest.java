package dev.pacer.cli.demo;

import static org.assertj.core.api.Assertions.assertThat;

import java.awt.image.BufferedImage;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class HostLanesPlotTest {

  @TempDir Path dir;

  /**
   * Two hosts at 2/s over 5 s: one paced, one that got 5 requests in its third second. Only the
   * second's lane has red, and only in that second.
   */
  @Test
  void aSecondAboveTheCeilingPlusOneIsRedInItsHostsLaneAlone() throws Exception {
    System.setProperty("java.awt.headless", "true");
    List<DemoServer.Arrival> paced = new ArrayList<>();
    List<DemoServer.Arrival> burst = new ArrayList<>();
    for (int i = 0; i < 10; i++) {
      paced.add(new DemoServer.Arrival(i * 500_000_000L, "1", 200));
    }
    for (int i = 0; i < 5; i++) {
      burst.add(new DemoServer.Arrival(2_000_000_000L + i * 100_000_000L, "1", i < 4 ? 200 : 429));
    }
    burst.add(new DemoServer.Arrival(4_900_000_000L, "1", 200));
    Path png = dir.resolve("lanes.png");
    HostLanesPlot.write(
        List.of(
            new HostLanesPlot.Lane("127.0.0.2", 2, paced),
            new HostLanesPlot.Lane("127.0.0.3", 2, burst)),
        "test",
        png);

    BufferedImage image = ImageIO.read(png.toFile());
    assertThat(image.getWidth()).isEqualTo(HostLanesPlot.WIDTH);
    assertThat(image.getHeight()).isEqualTo(HostLanesPlot.height(2));
    int lane = HostLanesPlot.laneHeight(2);
    int plotW = HostLanesPlot.WIDTH - HostLanesPlot.LEFT - HostLanesPlot.RIGHT;
    // Five seconds across the plot: the third is [2/5, 3/5) of its width.
    assertThat(red(image, 0, lane, 0, plotW)).as("red in the paced lane").isZero();
    assertThat(red(image, 1, lane, 0, plotW * 2 / 5 - 2)).as("red before the burst").isZero();
    assertThat(red(image, 1, lane, plotW * 3 / 5 + 2, plotW)).as("red after the burst").isZero();
    assertThat(red(image, 1, lane, plotW * 2 / 5 + 2, plotW * 3 / 5 - 2))
        .as("red in the burst's second")
        .isGreaterThan(200);
    assertThat(HostLanesPlot.cell(0, 2)).isEqualTo(HostLanesPlot.EMPTY);
    assertThat(HostLanesPlot.cell(3, 2)).isNotEqualTo(HostLanesPlot.OVER);
    assertThat(HostLanesPlot.cell(4, 2)).isEqualTo(HostLanesPlot.OVER);
  }

  /** Pixels of the ceiling's red in lane {@code index}, between x offsets in the plot. */
  private static int red(BufferedImage image, int index, int lane, int fromX, int toX) {
    int count = 0;
    for (int y = HostLanesPlot.TOP + index * lane;
        y < HostLanesPlot.TOP + (index + 1) * lane;
        y++) {
      for (int x = HostLanesPlot.LEFT + fromX; x < HostLanesPlot.LEFT + toX; x++) {
        if (image.getRGB(x, y) == HostLanesPlot.OVER.getRGB()) {
          count++;
        }
      }
    }
    return count;
  }
}
