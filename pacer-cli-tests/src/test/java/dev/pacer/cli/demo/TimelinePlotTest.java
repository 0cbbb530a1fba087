package dev.pacer.cli.demo;

import static org.assertj.core.api.Assertions.assertThat;

import java.awt.image.BufferedImage;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class TimelinePlotTest {

  @TempDir Path dir;

  @Test
  void writesAPngWithTheCeilingLine() throws Exception {
    System.setProperty("java.awt.headless", "true");
    List<DemoServer.Arrival> arrivals = new ArrayList<>();
    for (int i = 0; i < 60; i++) {
      arrivals.add(
          new DemoServer.Arrival(
              i * 100_000_000L, i % 2 == 0 ? "101" : "102", i % 10 == 0 ? 429 : 200));
    }
    Path png = dir.resolve("timeline.png");
    TimelinePlot.write(arrivals, 7.0, "test", png);

    BufferedImage image = ImageIO.read(png.toFile());
    assertThat(image.getWidth()).isEqualTo(TimelinePlot.WIDTH);
    assertThat(image.getHeight()).isEqualTo(TimelinePlot.HEIGHT);
    int ceilingPixels = 0;
    for (int x = 0; x < image.getWidth(); x++) {
      for (int y = 0; y < image.getHeight(); y++) {
        if (image.getRGB(x, y) == TimelinePlot.CEILING.getRGB()) {
          ceilingPixels++;
        }
      }
    }
    assertThat(ceilingPixels).as("pixels of the dashed ceiling line").isGreaterThan(300);
    assertThat(TimelinePlot.perSecond(arrivals, 0, 6, a -> true))
        .containsExactly(10, 10, 10, 10, 10, 10);
    assertThat(TimelinePlot.perSecond(arrivals, 0, 6, a -> a.status() == 429)).containsOnly(1);
  }
}
