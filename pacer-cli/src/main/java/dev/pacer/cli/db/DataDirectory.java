package dev.pacer.cli.db;

import java.io.IOException;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.nio.file.attribute.UserPrincipal;
import java.security.SecureRandom;
import java.util.Base64;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The embedded PostgreSQL's data directory ({@link EmbeddedDatabase} describes its layout): the
 * owner's alone, holding the secret, the port kept from one start to the next, and the cluster with
 * its postmaster's PID file.
 */
final class DataDirectory {

  /** The embedded database's logger: its parts log as it does. */
  private static final Logger log = LoggerFactory.getLogger(EmbeddedDatabase.class);

  static final Set<PosixFilePermission> OWNER_ONLY_DIRECTORY =
      PosixFilePermissions.fromString("rwx------");
  static final Set<PosixFilePermission> OWNER_ONLY_FILE =
      PosixFilePermissions.fromString("rw-------");

  private final Path dir;

  DataDirectory(Path dir) {
    this.dir = dir;
  }

  Path path() {
    return dir;
  }

  Path pgData() {
    return dir.resolve("pgdata");
  }

  /** The file holding the server's secret: 0600, in the 0700 directory. */
  Path secretFile() {
    return dir.resolve("postgres-password");
  }

  /** The server's certificate, {@code server.crt} in the cluster; its key beside it. */
  Path certificateFile() {
    return pgData().resolve("server.crt");
  }

  /**
   * Creates the directory owner-only, or checks an existing one: it must be this account's, and
   * anything wider than 0700 is tightened (it is Pacer's own directory, and nothing in it is for
   * anyone else).
   */
  void secureDirectory() throws IOException {
    Files.createDirectories(dir, PosixFilePermissions.asFileAttribute(OWNER_ONLY_DIRECTORY));
    UserPrincipal owner = Files.getOwner(dir);
    UserPrincipal me =
        dir.getFileSystem()
            .getUserPrincipalLookupService()
            .lookupPrincipalByName(System.getProperty("user.name"));
    if (!owner.equals(me)) {
      throw new IOException(
          dir
              + " belongs to "
              + owner.getName()
              + ", not to "
              + me.getName()
              + "; the embedded PostgreSQL keeps its secret there, so it must be"
              + " yours alone: choose another --data-dir");
    }
    Set<PosixFilePermission> permissions = Files.getPosixFilePermissions(dir);
    if (!permissions.equals(OWNER_ONLY_DIRECTORY)) {
      Files.setPosixFilePermissions(dir, OWNER_ONLY_DIRECTORY);
      log.info(
          "Tightened {} from {} to rwx------ (it holds the embedded PostgreSQL's secret)",
          dir,
          PosixFilePermissions.toString(permissions));
    }
  }

  /**
   * Makes the secret file if there is none (a new random secret, written whole by a rename) and
   * keeps it 0600; true if it was made now. Called under the start lock.
   */
  boolean ensureSecret() throws IOException {
    Path file = secretFile();
    if (Files.exists(file, LinkOption.NOFOLLOW_LINKS)) {
      if (!Files.isRegularFile(file, LinkOption.NOFOLLOW_LINKS)) {
        throw new IOException(file + " is not a regular file; remove it and run pacer again");
      }
      if (!Files.getPosixFilePermissions(file).equals(OWNER_ONLY_FILE)) {
        Files.setPosixFilePermissions(file, OWNER_ONLY_FILE);
      }
      return false;
    }
    byte[] random = new byte[32];
    new SecureRandom().nextBytes(random);
    writeOwnerOnly(file, Base64.getUrlEncoder().withoutPadding().encodeToString(random) + "\n");
    return true;
  }

  String secret() throws IOException {
    Path file = secretFile();
    if (!Files.isRegularFile(file, LinkOption.NOFOLLOW_LINKS)) {
      throw new IOException("no secret file " + file + ": start the server with pacer db start");
    }
    return Files.readString(file, StandardCharsets.US_ASCII).trim();
  }

  /** Writes {@code file} whole (by a rename), readable by its owner only. */
  static void writeOwnerOnly(Path file, String text) throws IOException {
    Path partial = file.resolveSibling(file.getFileName() + ".part");
    Files.deleteIfExists(partial);
    try {
      Files.createFile(partial, PosixFilePermissions.asFileAttribute(OWNER_ONLY_FILE));
    } catch (FileAlreadyExistsException e) {
      throw new IOException(partial + " appeared while pacer was writing it", e);
    }
    Files.writeString(partial, text, StandardCharsets.US_ASCII);
    Files.move(partial, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
  }

  /**
   * The postmaster's PID and port, as its {@code postmaster.pid} names them (the first and fourth
   * lines), if the file is there and readable.
   */
  Optional<long[]> readPostmasterPid() {
    Path pidFile = pgData().resolve("postmaster.pid");
    try {
      List<String> lines = Files.readAllLines(pidFile, StandardCharsets.UTF_8);
      if (lines.size() < 4) {
        return Optional.empty();
      }
      return Optional.of(
          new long[] {Long.parseLong(lines.get(0).trim()), Long.parseLong(lines.get(3).trim())});
    } catch (IOException | NumberFormatException e) {
      return Optional.empty();
    }
  }

  /**
   * The port this directory's server used before, if it is free, so that a restarted server is
   * found again by the workers that were using it (they hold its URL); else a free one, recorded.
   */
  int port() throws IOException {
    Path recorded = dir.resolve("port");
    if (Files.exists(recorded)) {
      try {
        int previous = Integer.parseInt(Files.readString(recorded).trim());
        try (ServerSocket probe =
            new ServerSocket(previous, 1, java.net.InetAddress.getByName("127.0.0.1"))) {
          return probe.getLocalPort();
        }
      } catch (IOException | NumberFormatException e) {
        log.info(
            "The embedded PostgreSQL's previous port is not available ({}); choosing another",
            e.getMessage());
      }
    }
    int port;
    try (ServerSocket socket = new ServerSocket(0)) {
      port = socket.getLocalPort();
    }
    Files.writeString(recorded, port + "\n");
    return port;
  }
}
