package dev.pacer.postgres;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;

/**
 * A physical streaming standby of a {@link RestartablePostgres}, for failover tests: a copy of the
 * primary's data directory made by {@code pg_basebackup -R} (which writes {@code standby.signal}
 * and the primary's address), served on a port of its own by the same zonky binaries, read-only and
 * replaying the primary's WAL as it streams until {@link #promote} makes it a primary. The
 * replication is asynchronous, PostgreSQL's default: a commit the primary acknowledged and had not
 * yet sent is not on the standby.
 *
 * <p>The primary needs {@link #PRIMARY_SETTINGS} and a replication entry in {@code pg_hba.conf};
 * zonky's initdb ({@code -A trust}) writes {@code host replication all 127.0.0.1/32 trust}.
 *
 * <p>{@code pg_basebackup} is not among zonky's binaries (initdb, pg_ctl, postgres). It is found as
 * pacer-bench finds pgbench: the newest under Debian's {@code /usr/lib/postgresql/<version>/bin}
 * (the postgresql package, which {@code .ci/run} installs), else one on the {@code PATH} that
 * answers {@code --version}; a newer pg_basebackup copies an older server. Without one the test
 * that needs it is skipped, saying so.
 */
public final class StreamingStandby implements AutoCloseable {

  /** What the primary must run with to be copied and streamed from. */
  public static final Map<String, String> PRIMARY_SETTINGS =
      Map.of("wal_level", "replica", "max_wal_senders", "4");

  private final RestartablePostgres primary;
  private final Path directory;
  private final int port;
  private final EmbeddedPostgres server;

  private StreamingStandby(
      RestartablePostgres primary, Path directory, int port, EmbeddedPostgres server) {
    this.primary = primary;
    this.directory = directory;
    this.port = port;
    this.server = server;
  }

  /** Copies {@code primary} with pg_basebackup and starts the copy as its streaming standby. */
  public static StreamingStandby of(RestartablePostgres primary) throws Exception {
    Path baseBackup = locateBaseBackup();
    Path directory = Files.createTempDirectory("pacer-standby-pg");
    Path data = directory.resolve("data");
    // -c fast: an immediate checkpoint on the primary, instead of waiting for a spread one.
    Process copy =
        new ProcessBuilder(
                baseBackup.toString(),
                "-h",
                "127.0.0.1",
                "-p",
                Integer.toString(primary.port()),
                "-U",
                "postgres",
                "-D",
                data.toString(),
                "-R",
                "-X",
                "stream",
                "-c",
                "fast",
                "--no-sync")
            .redirectErrorStream(true)
            .start();
    String output = new String(copy.getInputStream().readAllBytes());
    if (!copy.waitFor(60, TimeUnit.SECONDS) || copy.exitValue() != 0) {
      throw new IOException(baseBackup + " failed: " + output);
    }
    int port;
    try (ServerSocket s = new ServerSocket(0)) {
      port = s.getLocalPort();
    }
    // zonky runs no initdb in a directory that has a postgresql.conf, the one copied here.
    EmbeddedPostgres server =
        EmbeddedPostgres.builder()
            .setDataDirectory(data)
            .setCleanDataDirectory(false)
            .setPort(port)
            .start();
    StreamingStandby standby = new StreamingStandby(primary, directory, port, server);
    if (!standby.inRecovery()) {
      standby.close();
      throw new IllegalStateException("the copy of the primary started as a primary itself");
    }
    return standby;
  }

  public int port() {
    return port;
  }

  public String jdbcUrl() {
    return "jdbc:postgresql://127.0.0.1:" + port + "/postgres?user=postgres";
  }

  /** Waits until the standby has replayed everything the primary has written so far. */
  public void awaitReplayed(Duration within) throws SQLException, InterruptedException {
    String written;
    try (Connection c = DriverManager.getConnection(primary.jdbcUrl());
        Statement s = c.createStatement();
        ResultSet r = s.executeQuery("SELECT pg_current_wal_lsn()::text")) {
      r.next();
      written = r.getString(1);
    }
    long deadline = System.nanoTime() + within.toNanos();
    try (Connection c = DriverManager.getConnection(jdbcUrl());
        PreparedStatement s = c.prepareStatement("SELECT pg_last_wal_replay_lsn() >= ?::pg_lsn")) {
      s.setString(1, written);
      while (true) {
        try (ResultSet r = s.executeQuery()) {
          r.next();
          if (r.getBoolean(1)) {
            return;
          }
        }
        if (System.nanoTime() > deadline) {
          throw new IllegalStateException(
              "the standby had not replayed the primary's WAL up to "
                  + written
                  + " within "
                  + within);
        }
        Thread.sleep(20);
      }
    }
  }

  /** Promotes the standby to a primary and returns once it takes writes. */
  public void promote() throws SQLException {
    try (Connection c = DriverManager.getConnection(jdbcUrl());
        Statement s = c.createStatement();
        ResultSet r = s.executeQuery("SELECT pg_promote(true, 30)")) {
      r.next();
      if (!r.getBoolean(1)) {
        throw new IllegalStateException("the standby was not promoted within 30 s");
      }
    }
    if (inRecovery()) {
      throw new IllegalStateException("pg_promote returned, and the standby is still in recovery");
    }
  }

  private boolean inRecovery() throws SQLException {
    try (Connection c = DriverManager.getConnection(jdbcUrl());
        Statement s = c.createStatement();
        ResultSet r = s.executeQuery("SELECT pg_is_in_recovery()")) {
      r.next();
      return r.getBoolean(1);
    }
  }

  private static Path locateBaseBackup() throws IOException, InterruptedException {
    Path debian = Path.of("/usr/lib/postgresql");
    if (Files.isDirectory(debian)) {
      try (Stream<Path> versions = Files.list(debian)) {
        Optional<Path> found =
            versions
                .map(v -> v.resolve("bin/pg_basebackup"))
                .filter(Files::isExecutable)
                .max(Comparator.comparingInt(p -> majorVersion(p.getParent().getParent())));
        if (found.isPresent()) {
          return found.get();
        }
      }
    }
    List<String> path =
        Arrays.asList(System.getenv().getOrDefault("PATH", "").split(File.pathSeparator));
    for (String dir : path) {
      Path candidate = dir.isEmpty() ? null : Path.of(dir, "pg_basebackup");
      if (candidate != null && Files.isExecutable(candidate) && answers(candidate)) {
        return candidate;
      }
    }
    return Assumptions.abort(
        "pg_basebackup is neither under /usr/lib/postgresql/<version>/bin"
            + " nor on the PATH: install Debian's postgresql package (.ci/run does) to run the"
            + " failover tests");
  }

  private static boolean answers(Path binary) throws IOException, InterruptedException {
    Process p =
        new ProcessBuilder(binary.toString(), "--version").redirectErrorStream(true).start();
    p.getInputStream().readAllBytes();
    return p.waitFor() == 0;
  }

  private static int majorVersion(Path dir) {
    try {
      return Integer.parseInt(dir.getFileName().toString());
    } catch (NumberFormatException e) {
      return -1;
    }
  }

  /** Stops the server and deletes its data directory. */
  @Override
  public void close() {
    try {
      server.close();
      try (Stream<Path> files = Files.walk(directory)) {
        for (Path p : files.sorted(Comparator.reverseOrder()).toList()) {
          Files.delete(p);
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
