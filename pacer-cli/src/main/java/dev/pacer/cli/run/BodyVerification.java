package dev.pacer.cli.run;

import dev.pacer.cli.db.ItemStore;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * What a run does first after an unclean stop: the items recorded done whose bodies no durable
 * point was seen to cover ({@link DurablePoints}) have their bodies checked against their records,
 * size and SHA-256: a body file, or a WARC response record's payload ({@link WarcBodies}), as the
 * item's location says. A whole body is forced, with its directory, and its item marked durable; a
 * missing or damaged one (a power cut took it, or someone truncated it) returns its item to the
 * job, to be fetched again. So an item recorded done has its body whole on disk, or is fetched
 * again.
 *
 * <p>Only items recorded longer ago than a lease are checked: a live worker marks its items within
 * about a second, and one on another machine writes bodies this process cannot see; a lease is how
 * long the job waits before it calls a worker dead.
 */
public final class BodyVerification {

  /** A WARC location: {@code SEGMENT#OFFSET}. */
  private static final Pattern WARC_LOCATION = Pattern.compile(".*\\.warc\\.gz#[0-9]+");

  /** What a verification found: bodies whole (kept), and missing or damaged (fetched again). */
  public record Verified(int whole, int fetchedAgain) {
    public boolean any() {
      return whole + fetchedAgain > 0;
    }
  }

  private BodyVerification() {}

  /** Verifies the job's unmarked done items recorded more than {@code olderThanMillis} ago. */
  public static Verified run(ItemStore items, String job, long olderThanMillis)
      throws SQLException, IOException {
    List<ItemStore.Unverified> whole = new ArrayList<>();
    List<ItemStore.Unverified> damaged = new ArrayList<>();
    Set<Path> files = new LinkedHashSet<>();
    for (ItemStore.Unverified u : items.notDurable(job, olderThanMillis)) {
      if (isWhole(u)) {
        whole.add(u);
        files.add(fileOf(u.bodyPath()));
      } else {
        damaged.add(u);
      }
    }
    Set<Path> directories = new LinkedHashSet<>();
    for (Path file : files) {
      force(file);
      directories.add(file.toAbsolutePath().getParent());
    }
    for (Path directory : directories) {
      force(directory);
    }
    return new Verified(items.markVerified(job, whole), items.fetchAgain(job, damaged));
  }

  /** Whether the body is there, of the recorded size and SHA-256. */
  static boolean isWhole(ItemStore.Unverified u) throws IOException {
    if (u.bodyPath() == null || u.sha256() == null) {
      return false;
    }
    return isWarc(u.bodyPath())
        ? WarcBodies.isWhole(u.bodyPath(), u.bytes(), u.sha256())
        : BodyStore.isWhole(u.bodyPath(), u.bytes(), u.sha256());
  }

  private static boolean isWarc(String location) {
    return WARC_LOCATION.matcher(location).matches();
  }

  private static Path fileOf(String location) {
    return isWarc(location) ? WarcBodies.segmentOf(location) : Path.of(location);
  }

  private static void force(Path path) throws IOException {
    try (FileChannel c = FileChannel.open(path, StandardOpenOption.READ)) {
      c.force(true);
    }
  }
}
