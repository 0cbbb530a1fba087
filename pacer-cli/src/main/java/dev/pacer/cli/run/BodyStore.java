package dev.pacer.cli.run;

import dev.pacer.cli.db.JobStore;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;

/**
 * Where fetched bodies go: {@code OUT/<job>/<first two hex digits of the key>/<key>}, the key being
 * the SHA-256 of the URL (the item's key in PostgreSQL, where the URL and the path are recorded).
 * Each body is written to a temporary file in the same directory and renamed into place, so a
 * body file is either absent or whole.
 */
public final class BodyStore {

  private final Path root;

  public BodyStore(Path out, String job) {
    this.root = out.resolve(job);
  }

  public Path pathOf(String key) {
    return root.resolve(key.substring(0, 2)).resolve(key);
  }

  /** Writes the body atomically and returns its path. */
  public Path write(JobStore.Item item, byte[] body) throws IOException {
    Path target = pathOf(item.key());
    Files.createDirectories(target.getParent());
    Path temp = Files.createTempFile(target.getParent(), "." + item.key(), ".part");
    try {
      Files.write(temp, body);
      Files.move(temp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    } finally {
      Files.deleteIfExists(temp);
    }
    return target;
  }
}
