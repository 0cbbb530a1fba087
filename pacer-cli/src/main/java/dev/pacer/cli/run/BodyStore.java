package dev.pacer.cli.run;

import dev.pacer.ThrottledException;
import dev.pacer.cli.db.ItemStore;
import dev.pacer.jdkhttp.fetch.DestinationFetcher;
import dev.pacer.jdkhttp.fetch.FetchFailedException;
import dev.pacer.jdkhttp.fetch.FetchResponse;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Where fetched bodies go: {@code OUT/<job>/<first two hex digits of the key>/<key>}, the key being
 * the SHA-256 of the URL (the item's key in PostgreSQL, where the URL and the path are recorded).
 *
 * <p>A body streams into a temporary {@code .part} file in the same directory (never whole in
 * memory); {@link #commit} renames it into place, so a body file is either absent or whole once
 * written, and answers its size and SHA-256 for the item's record. How it becomes durable depends
 * on the run:
 *
 * <ul>
 *   <li>by default nothing here forces it: the worker's next {@link DurablePoints durable point}
 *       covers every body written since the last, about once a second, and the item, recorded done
 *       at once, is marked durable when that point has passed. One point for many bodies costs one
 *       device flush, where forcing each body costs one per body.
 *   <li>with {@code --fsync-each} the fetcher forces the part file and {@link #commit} the
 *       directory after the rename, so the item is recorded durable.
 * </ul>
 */
public final class BodyStore implements Bodies {

  private final Path root;
  private final boolean fsyncEach;
  private final FileSystemSync sync;

  /**
   * The body directories this store has made: each is made once per run, where making it before
   * every body cost an exception per item from {@link Files#createDirectories}.
   */
  private final Set<Path> made = ConcurrentHashMap.newKeySet();

  public BodyStore(Path out, String job, boolean fsyncEach) {
    this.root = out.resolve(job);
    this.fsyncEach = fsyncEach;
    this.sync = new FileSystemSync(out);
  }

  @Override
  public boolean forcesEach() {
    return fsyncEach;
  }

  public Path pathOf(String key) {
    return root.resolve(key.substring(0, 2)).resolve(key);
  }

  /**
   * The temporary file, beside the item's body file, for its body to stream into; the fetcher
   * creates it. It is named by the item's lease token, so two leases of one item (a lapsed lease
   * and the next) never write the same file.
   */
  @Override
  public Path newPart(ItemStore.Item item) throws IOException {
    Path directory = pathOf(item.key()).getParent();
    if (!made.contains(directory)) {
      Files.createDirectories(directory);
      made.add(directory);
    }
    return directory.resolve("." + item.key() + "." + item.token() + ".part");
  }

  /** Fetches {@code uri}'s body into {@code part}: forced there only with {@code --fsync-each}. */
  @Override
  public FetchResponse fetch(DestinationFetcher fetcher, URI uri, Path part)
      throws InterruptedException, ThrottledException, FetchFailedException {
    return fsyncEach ? fetcher.fetchTo(uri, part) : fetcher.fetchToUnforced(uri, part);
  }

  /** Moves a complete part file into place and answers the body's path, size and digest. */
  @Override
  public Stored commit(ItemStore.Item item, Path part, FetchResponse response) throws IOException {
    Path target = pathOf(item.key());
    try {
      Files.move(part, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    } catch (IOException | RuntimeException e) {
      // Only a move that failed leaves the part file behind.
      discard(part);
      throw e;
    }
    if (fsyncEach) {
      try (FileChannel directory = FileChannel.open(target.getParent(), StandardOpenOption.READ)) {
        directory.force(true);
      }
    }
    BodyDigest digest = digest(target);
    return new Stored(target.toString(), digest.size(), digest.sha256());
  }

  @Override
  public void makeDurable(Collection<String> locations) throws IOException, InterruptedException {
    List<Path> files = new ArrayList<>(locations.size());
    locations.forEach(l -> files.add(Path.of(l)));
    sync.sync(files);
  }

  @Override
  public void close() {}

  /** Whether the body file at {@code location} is there, of the recorded size and SHA-256. */
  static boolean isWhole(String location, long bytes, String sha256) throws IOException {
    Path file = Path.of(location);
    return Files.isRegularFile(file) && Files.size(file) == bytes && sha256(file).equals(sha256);
  }

  @Override
  public void discard(Path part) {
    try {
      Files.deleteIfExists(part);
    } catch (IOException ignored) {
      // A leftover .part file is never mistaken for a body: only commit names one.
    }
  }

  /**
   * The SHA-256 of a file's content, in lower-case hex. Read back just after the body was written,
   * it comes from the page cache: no device read.
   */
  public static String sha256(Path file) throws IOException {
    return digest(file).sha256();
  }

  /** The size and SHA-256 of a file's content, read once. */
  static BodyDigest digest(Path file) throws IOException {
    try (InputStream in = Files.newInputStream(file)) {
      return BodyDigest.of(in);
    }
  }
}
