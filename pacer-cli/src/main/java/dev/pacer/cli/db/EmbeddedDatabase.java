package dev.pacer.cli.db;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.lang.ProcessBuilder.Redirect;
import java.net.ServerSocket;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Properties;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The PostgreSQL that Pacer runs for itself when no {@code --db} is given: zonky's binaries from
 * Maven, one server per data directory (default {@code ~/.pacer}), shared by every invocation on
 * the machine.
 *
 * <p>The server outlives the invocation that started it: it runs detached (started by {@code
 * pg_ctl}, in its own session, so a Ctrl-C in the terminal does not reach it), and the next
 * invocation finds it through {@code postmaster.pid} and a {@code SELECT 1} instead of starting a
 * second one. Two invocations starting at once serialise on a file lock, so exactly one starts it.
 * Nothing stops it but {@code pacer db stop}: one invocation ending never pulls the database from
 * under another.
 *
 * <p>Layout of the data directory: {@code pgdata/} (the cluster), {@code postgres.log} (server
 * log), {@code start.lock} (the start lock), {@code port} (the port, reused when the server is
 * started again so that running workers find it). The server listens on 127.0.0.1 only, with trust
 * authentication for the {@code postgres} user: it is a local single-user tool's database.
 */
public final class EmbeddedDatabase {

  private static final Logger log = LoggerFactory.getLogger(EmbeddedDatabase.class);

  private final Path dir;

  public EmbeddedDatabase(Path dir) {
    this.dir = dir.toAbsolutePath().normalize();
  }

  /** {@code ~/.pacer}, or {@code $PACER_HOME} when set. */
  public static Path defaultDirectory() {
    String home = System.getenv("PACER_HOME");
    if (home != null && !home.isBlank()) {
      return Path.of(home);
    }
    return Path.of(System.getProperty("user.home"), ".pacer");
  }

  public Path directory() {
    return dir;
  }

  public Path pgData() {
    return dir.resolve("pgdata");
  }

  /** The JDBC URL of a server on {@code port}. No secret in it: trust authentication. */
  public static String jdbcUrl(int port) {
    return "jdbc:postgresql://127.0.0.1:" + port + "/postgres?user=postgres";
  }

  /**
   * The URL of the running server of this directory, starting it first if none answers.
   *
   * @throws IOException if it cannot be started
   */
  public String ensureRunning() throws IOException {
    Files.createDirectories(dir);
    try (FileChannel channel = FileChannel.open(dir.resolve("start.lock"),
            java.nio.file.StandardOpenOption.CREATE, java.nio.file.StandardOpenOption.WRITE)) {
      FileLock lock = channel.lock();
      try {
        OptionalInt running = runningPort();
        if (running.isPresent()) {
          log.debug("Using the running embedded PostgreSQL on port {}", running.getAsInt());
          return jdbcUrl(running.getAsInt());
        }
        return start();
      } finally {
        lock.release();
      }
    }
  }

  /** The port of a server of this directory that answers {@code SELECT 1}, if any. */
  public OptionalInt runningPort() {
    Optional<long[]> pidAndPort = readPostmasterPid();
    if (pidAndPort.isEmpty()) {
      return OptionalInt.empty();
    }
    long pid = pidAndPort.get()[0];
    int port = (int) pidAndPort.get()[1];
    if (ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false) && answers(port)) {
      return OptionalInt.of(port);
    }
    return OptionalInt.empty();
  }

  /**
   * Stops the server of this directory (fast shutdown: open sessions are ended).
   *
   * @return false if none was running
   */
  public boolean stop() throws IOException, InterruptedException {
    Optional<long[]> pidAndPort = readPostmasterPid();
    if (pidAndPort.isEmpty()) {
      return false;
    }
    long pid = pidAndPort.get()[0];
    Optional<ProcessHandle> postmaster = ProcessHandle.of(pid).filter(ProcessHandle::isAlive);
    if (postmaster.isEmpty()) {
      return false;
    }
    // SIGINT is PostgreSQL's "fast" shutdown; SIGTERM would wait for every client to leave.
    Process kill = new ProcessBuilder("kill", "-INT", Long.toString(pid))
        .redirectErrorStream(true).start();
    kill.getInputStream().readAllBytes();
    if (kill.waitFor() != 0) {
      throw new IOException("could not signal the embedded PostgreSQL (pid " + pid + ")");
    }
    long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
    while (postmaster.get().isAlive()) {
      if (System.nanoTime() > deadline) {
        throw new IOException("the embedded PostgreSQL (pid " + pid + ") did not stop within 60 s");
      }
      Thread.sleep(100);
    }
    return true;
  }

  private String start() throws IOException {
    int port = port();
    Path logFile = dir.resolve("postgres.log");
    log.info("Starting the embedded PostgreSQL in {} on port {} (log: {})", pgData(), port, logFile);
    // Never closed on purpose: the server must outlive this JVM (see the class comment).
    EmbeddedPostgres.builder()
        .setDataDirectory(pgData())
        .setCleanDataDirectory(false)
        .setRegisterShutdownHook(false)
        .setPort(port)
        .setPGStartupWait(Duration.ofSeconds(90))
        .setServerConfig("listen_addresses", "127.0.0.1")
        .setServerConfig("max_connections", "300")
        // zonky starts test servers with fsync off; this one keeps jobs across runs, so fsync is
        // on. synchronous_commit stays off: a crash may forget the last few hundred milliseconds
        // of recorded outcomes, whose items are then fetched again, never lost.
        .setServerConfig("fsync", "on")
        .setOutputRedirector(Redirect.appendTo(logFile.toFile()))
        .setErrorRedirector(Redirect.appendTo(logFile.toFile()))
        .start();
    // zonky keeps a file lock on pgdata/epg-lock for this JVM's life, which would stop any other
    // process from starting the server again after a stop while this one runs. Starts are already
    // serialised by start.lock, so the file is unlinked: the lock stays on the unlinked file.
    Files.deleteIfExists(pgData().resolve("epg-lock"));
    return jdbcUrl(port);
  }

  private Optional<long[]> readPostmasterPid() {
    Path pidFile = pgData().resolve("postmaster.pid");
    try {
      List<String> lines = Files.readAllLines(pidFile, StandardCharsets.UTF_8);
      if (lines.size() < 4) {
        return Optional.empty();
      }
      return Optional.of(new long[] {
          Long.parseLong(lines.get(0).trim()), Long.parseLong(lines.get(3).trim())});
    } catch (IOException | NumberFormatException e) {
      return Optional.empty();
    }
  }

  private static boolean answers(int port) {
    Properties props = new Properties();
    props.setProperty("connectTimeout", "5");
    props.setProperty("socketTimeout", "5");
    try (Connection c = DriverManager.getConnection(jdbcUrl(port), props)) {
      return c.isValid(5);
    } catch (SQLException e) {
      return false;
    }
  }

  /**
   * The port this directory's server used before, if it is free, so that a restarted server is
   * found again by the workers that were using it (they hold its URL); else a free one, recorded.
   */
  private int port() throws IOException {
    Path recorded = dir.resolve("port");
    if (Files.exists(recorded)) {
      try {
        int previous = Integer.parseInt(Files.readString(recorded).trim());
        try (ServerSocket probe = new ServerSocket(previous, 1,
            java.net.InetAddress.getByName("127.0.0.1"))) {
          return probe.getLocalPort();
        }
      } catch (IOException | NumberFormatException e) {
        log.info("The embedded PostgreSQL's previous port is not available ({}); choosing another",
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

  /** For messages: where the data directory is. */
  @Override
  public String toString() {
    return "embedded PostgreSQL in " + dir;
  }
}
