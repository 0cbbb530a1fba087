package dev.pacer.cli.run;

import dev.pacer.cli.db.ItemStore;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Where fetched bodies go: {@code OUT/<job>/<first two hex digits of the key>/<key>}, the key being
 * the SHA-256 of the URL (the item's key in PostgreSQL, where the URL and the path are recorded).
 *
 * <p>A body streams into a temporary {@code .part} file in the same directory (never whole in
 * memory), which the fetcher forces to disk; {@link #commit} renames it into place and forces the
 * directory, so a body file recorded as done is whole and survives a power cut, and a body file is
 * either absent or whole.
 */
public final class BodyStore {

  private final Path root;

  /**
   * The body directories this store has made: each is made once per run, where making it before
   * every body cost an exception per item from {@link Files#createDirectories}.
   */
  private final Set<Path> made = ConcurrentHashMap.newKeySet();

  public BodyStore(Path out, String job) {
    this.root = out.resolve(job);
  }

  public Path pathOf(String key) {
    return root.resolve(key.substring(0, 2)).resolve(key);
  }

  /**
   * The temporary file, beside the item's body file, for its body to stream into; the fetcher
   * creates it. It is named by the item's lease token, so two leases of one item (a lapsed lease
   * and the next) never write the same file.
   */
  public Path newPart(ItemStore.Item item) throws IOException {
    Path directory = pathOf(item.key()).getParent();
    if (!made.contains(directory)) {
      Files.createDirectories(directory);
      made.add(directory);
    }
    return directory.resolve("." + item.key() + "." + item.token() + ".part");
  }

  /** Moves a complete part file into place, durably, and returns the body's path. */
  public Path commit(ItemStore.Item item, Path part) throws IOException {
    Path target = pathOf(item.key());
    try {
      Files.move(part, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    } catch (IOException | RuntimeException e) {
      // Only a move that failed leaves the part file behind.
      discard(part);
      throw e;
    }
    try (FileChannel directory = FileChannel.open(target.getParent(), StandardOpenOption.READ)) {
      directory.force(true);
    }
    return target;
  }

  /** Deletes a part file whose fetch failed. */
  public void discard(Path part) {
    try {
      Files.deleteIfExists(part);
    } catch (IOException ignored) {
      // A leftover .part file is never mistaken for a body: only commit names one.
    }
  }
}
