package dev.pacer.cli.demo;

import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import javax.imageio.ImageIO;

/** Writes a plot's image so that {@code png} is either the old file or the whole new one. */
final class Png {

  private Png() {}

  /** Writes {@code image} to a temporary file beside {@code png}, then moves it over. */
  static void write(BufferedImage image, Path png, String tempPrefix) throws IOException {
    Files.createDirectories(png.toAbsolutePath().getParent());
    Path temp = Files.createTempFile(png.toAbsolutePath().getParent(), tempPrefix, ".png");
    try {
      ImageIO.write(image, "png", temp.toFile());
      Files.move(temp, png, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    } finally {
      Files.deleteIfExists(temp);
    }
  }
}
