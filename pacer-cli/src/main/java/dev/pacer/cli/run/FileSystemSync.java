package dev.pacer.cli.run;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Collection;
import java.util.LinkedHashSet;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One durable point for a group of files written unforced under one directory: {@code syncfs} of
 * the file system holding it, through {@code sync -f DIR} (coreutils 8.24 and later: Java has no
 * {@code syncfs}), which writes back every dirty page and inode of that file system and flushes the
 * device once, however many files the group holds. Where {@code sync -f} is missing or fails, each
 * file is forced, with its directory and the directory above (where a body's directory is made),
 * which costs a device flush each but keeps the promise.
 *
 * <p>Why not force each file: on this project's machine forcing a group's files and directories
 * cost 2 to 4 times one {@code syncfs} of the group, and the gap widens with the group
 * (docs/cli.md, "Durable in groups", has the figures and how they were measured). Since Linux 5.8
 * {@code syncfs} reports a write-back error of the file system, which fails the point here.
 */
final class FileSystemSync {

  private static final Logger log = LoggerFactory.getLogger(FileSystemSync.class);

  /** A sync that takes longer than this is given up on and the group forced file by file. */
  private static final long SYNC_TIMEOUT_SECONDS = 120;

  private final Path directory;

  /** Set once {@code sync -f} has failed: every later point forces file by file. */
  private final AtomicBoolean forceFiles = new AtomicBoolean();

  /**
   * @param directory a directory of the file system the files are written to
   */
  FileSystemSync(Path directory) {
    this.directory = directory;
  }

  /**
   * Makes durable every file written under the directory so far, {@code files} among them (which
   * only the fallback reads).
   *
   * @throws IOException if the files could not be made durable: the point has not passed
   */
  void sync(Collection<Path> files) throws IOException, InterruptedException {
    if (!forceFiles.get()) {
      String failure = syncFs();
      if (failure == null) {
        return;
      }
      if (forceFiles.compareAndSet(false, true)) {
        log.warn(
            "sync -f {} failed ({}); forcing each body file and its directories instead",
            directory,
            failure);
      }
    }
    Set<Path> directories = new LinkedHashSet<>();
    for (Path file : files) {
      force(file);
      Path parent = file.toAbsolutePath().getParent();
      directories.add(parent);
      if (parent.getParent() != null) {
        directories.add(parent.getParent());
      }
    }
    for (Path d : directories) {
      force(d);
    }
  }

  /** Runs {@code sync -f}; answers null if it succeeded, else why not. */
  private String syncFs() throws InterruptedException {
    try {
      Files.createDirectories(directory);
      Process sync =
          new ProcessBuilder("sync", "-f", directory.toString())
              .redirectErrorStream(true)
              .redirectOutput(ProcessBuilder.Redirect.DISCARD)
              .start();
      if (!sync.waitFor(SYNC_TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
        sync.destroyForcibly();
        return "no answer in " + SYNC_TIMEOUT_SECONDS + " s";
      }
      return sync.exitValue() == 0 ? null : "exit status " + sync.exitValue();
    } catch (IOException e) {
      return e.toString();
    }
  }

  private static void force(Path path) throws IOException {
    try (FileChannel c = FileChannel.open(path, StandardOpenOption.READ)) {
      c.force(true);
    }
  }
}
