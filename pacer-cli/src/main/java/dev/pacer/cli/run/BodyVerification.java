package dev.pacer.cli.run;

import dev.pacer.cli.db.ItemStore;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;

/**
 * What a run does first after an unclean stop: the items recorded done whose bodies no durable
 * point was seen to cover ({@link DurablePoints}) have their body files checked against their
 * records, size and SHA-256. A whole body is made durable and its item marked so; a missing or
 * damaged one (a power cut took it, or someone truncated it) returns its item to the job, to be
 * fetched again. So an item recorded done has its body whole on disk, or is fetched again.
 *
 * <p>Only items recorded longer ago than a lease are checked: a live worker marks its items within
 * about a second, and one on another machine writes bodies this process cannot see; a lease is how
 * long the job waits before it calls a worker dead.
 */
public final class BodyVerification {

  /** What a verification found: bodies whole (kept), and missing or damaged (fetched again). */
  public record Verified(int whole, int fetchedAgain) {
    public boolean any() {
      return whole + fetchedAgain > 0;
    }
  }

  private BodyVerification() {}

  /** Verifies the job's unmarked done items recorded more than {@code olderThanMillis} ago. */
  public static Verified run(ItemStore items, String job, Path out, long olderThanMillis)
      throws SQLException, IOException, InterruptedException {
    List<ItemStore.Unverified> whole = new ArrayList<>();
    List<ItemStore.Unverified> damaged = new ArrayList<>();
    for (ItemStore.Unverified u : items.notDurable(job, olderThanMillis)) {
      (isWhole(u) ? whole : damaged).add(u);
    }
    if (!whole.isEmpty()) {
      List<Path> files = new ArrayList<>(whole.size());
      whole.forEach(u -> files.add(Path.of(u.bodyPath())));
      new FileSystemSync(out).sync(files);
    }
    return new Verified(items.markVerified(job, whole), items.fetchAgain(job, damaged));
  }

  /** Whether the body file is there, of the recorded size and SHA-256. */
  static boolean isWhole(ItemStore.Unverified u) throws IOException {
    if (u.bodyPath() == null || u.sha256() == null) {
      return false;
    }
    Path file = Path.of(u.bodyPath());
    if (!Files.isRegularFile(file) || Files.size(file) != u.bytes()) {
      return false;
    }
    return BodyStore.sha256(file).equals(u.sha256());
  }
}
