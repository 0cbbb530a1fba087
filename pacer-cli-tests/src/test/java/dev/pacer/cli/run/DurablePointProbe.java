package dev.pacer.cli.run;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import java.util.Set;

/**
 * Measures what a durable point costs for a group of bodies written as {@link BodyStore} writes
 * them ({@code .part} file, renamed into a directory named by the key's first two hex digits),
 * three ways: each body forced with its directory as it is written; the group's files and
 * directories forced after the group; one {@code syncfs} of the output's file system ({@code sync
 * -f DIR}) after the group. Not a test: run it by hand, on the file system to be judged.
 *
 * <pre>
 * java -cp pacer-cli-tests/target/test-classes dev.pacer.cli.run.DurablePointProbe DIR [GROUP] [ROUNDS]
 * </pre>
 */
public final class DurablePointProbe {

  private static final int BODY_BYTES = 16 * 1024;

  private DurablePointProbe() {}

  public static void main(String[] args) throws Exception {
    Path root = Files.createDirectories(Path.of(args[0]));
    int group = args.length > 1 ? Integer.parseInt(args[1]) : 10;
    int rounds = args.length > 2 ? Integer.parseInt(args[2]) : 20;
    Random random = new Random(1);
    byte[] body = new byte[BODY_BYTES];
    random.nextBytes(body);
    double[][] ms = new double[3][rounds];
    for (int r = 0; r < rounds; r++) {
      for (int way = 0; way < 3; way++) {
        Path dir = Files.createDirectories(root.resolve("r" + r + "w" + way));
        ms[way][r] = round(dir, group, body, random, way);
      }
    }
    String[] names = {"force each body + dir", "force group files + dirs", "sync -f (syncfs)"};
    for (int way = 0; way < 3; way++) {
      double[] sorted = ms[way].clone();
      Arrays.sort(sorted);
      System.out.printf(
          Locale.ROOT,
          "%-26s group of %d x %d KiB: median %.1f ms (%.2f ms/body), p10 %.1f, p90 %.1f%n",
          names[way],
          group,
          BODY_BYTES / 1024,
          sorted[rounds / 2],
          sorted[rounds / 2] / group,
          sorted[rounds / 10],
          sorted[rounds * 9 / 10]);
    }
  }

  /** Writes a group one way and makes it durable; answers the milliseconds it took. */
  private static double round(Path dir, int group, byte[] body, Random random, int way)
      throws IOException, InterruptedException {
    long start = System.nanoTime();
    List<Path> files = new ArrayList<>();
    Set<Path> dirs = new HashSet<>();
    for (int i = 0; i < group; i++) {
      String key = String.format(Locale.ROOT, "%064x", random.nextLong() & Long.MAX_VALUE);
      key = Integer.toHexString(random.nextInt(256) | 0x100).substring(1) + key.substring(2);
      Path sub = Files.createDirectories(dir.resolve(key.substring(0, 2)));
      Path part = sub.resolve("." + key + ".part");
      try (FileChannel c =
          FileChannel.open(part, StandardOpenOption.CREATE, StandardOpenOption.WRITE)) {
        c.write(ByteBuffer.wrap(body));
        if (way == 0) {
          c.force(true);
        }
      }
      Path target = sub.resolve(key);
      Files.move(part, target, StandardCopyOption.ATOMIC_MOVE);
      if (way == 0) {
        force(sub);
      }
      files.add(target);
      dirs.add(sub);
    }
    if (way == 1) {
      for (Path f : files) {
        force(f);
      }
      for (Path d : dirs) {
        force(d);
      }
    } else if (way == 2) {
      Process sync = new ProcessBuilder("sync", "-f", dir.toString()).inheritIO().start();
      if (sync.waitFor() != 0) {
        throw new IOException("sync -f failed");
      }
    }
    return (System.nanoTime() - start) / 1e6;
  }

  private static void force(Path path) throws IOException {
    try (FileChannel c = FileChannel.open(path, StandardOpenOption.READ)) {
      c.force(true);
    }
  }
}
