package dev.pacer.cli.db;

import dev.pacer.cli.db.EmbeddedDatabase.StopOutcome;
import dev.pacer.cli.db.EmbeddedDatabase.StopResult;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.ProcessBuilder.Redirect;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Properties;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The embedded PostgreSQL's server process (see {@link EmbeddedDatabase}): started detached by
 * zonky's {@code pg_ctl}, found again through {@code postmaster.pid} and a verified {@code SELECT
 * 1}, and stopped only when {@code postmaster.pid} names this directory's postmaster.
 */
final class Postmaster {

  /** The embedded database's logger: its parts log as it does. */
  private static final Logger log = LoggerFactory.getLogger(EmbeddedDatabase.class);

  /** A Unix socket path longer than this (sun_path, less the terminator) cannot be bound. */
  private static final int MAX_SOCKET_PATH = 107;

  private final DataDirectory directory;
  private final ServerAuthentication authentication;

  Postmaster(DataDirectory directory, ServerAuthentication authentication) {
    this.directory = directory;
    this.authentication = authentication;
  }

  /**
   * The port of a server of this directory that answers {@code SELECT 1}, if any. Whatever listens
   * on the port {@code postmaster.pid} names must first prove, by TLS, that it holds this cluster's
   * key: a stale file's port may be anyone's.
   */
  OptionalInt runningPort() {
    Optional<long[]> pidAndPort = directory.readPostmasterPid();
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
   * Stops the server of this directory (fast shutdown: open sessions are ended). The PID in {@code
   * postmaster.pid} is signalled only if that process is this directory's postmaster: a {@code
   * postgres} executable started with {@code -D} naming this data directory. A stale file, left by
   * a crash, may name a PID that now belongs to anything else.
   */
  StopResult stop() throws IOException, InterruptedException {
    Optional<long[]> pidAndPort = directory.readPostmasterPid();
    if (pidAndPort.isEmpty()) {
      return new StopResult(StopOutcome.NOT_RUNNING, "no postmaster.pid");
    }
    long pid = pidAndPort.get()[0];
    Optional<ProcessHandle> process = ProcessHandle.of(pid).filter(ProcessHandle::isAlive);
    if (process.isEmpty()) {
      return new StopResult(
          StopOutcome.STALE_PID_FILE, "postmaster.pid names pid " + pid + ", which is not running");
    }
    Optional<String> notOurs = notThisPostmaster(process.get().info());
    if (notOurs.isPresent()) {
      return new StopResult(
          StopOutcome.STALE_PID_FILE,
          "postmaster.pid names pid " + pid + ", which " + notOurs.get());
    }
    // SIGINT is PostgreSQL's "fast" shutdown; SIGTERM would wait for every client to leave.
    Process kill =
        new ProcessBuilder("kill", "-INT", Long.toString(pid)).redirectErrorStream(true).start();
    kill.getInputStream().readAllBytes();
    if (kill.waitFor() != 0) {
      throw new IOException("could not signal the embedded PostgreSQL (pid " + pid + ")");
    }
    long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
    while (process.get().isAlive()) {
      if (System.nanoTime() > deadline) {
        throw new IOException("the embedded PostgreSQL (pid " + pid + ") did not stop within 60 s");
      }
      Thread.sleep(100);
    }
    return new StopResult(StopOutcome.STOPPED, "pid " + pid);
  }

  /** The pid of this directory's live postmaster, whether or not it answers. */
  Optional<Long> runningPostmaster() {
    return directory
        .readPostmasterPid()
        .map(p -> p[0])
        .flatMap(ProcessHandle::of)
        .filter(ProcessHandle::isAlive)
        .filter(p -> notThisPostmaster(p.info()).isEmpty())
        .map(ProcessHandle::pid);
  }

  /**
   * Why a live process is not this directory's postmaster, or empty if it is. Its arguments come
   * from {@code /proc/PID/cmdline} on Linux; only the executable's name is quoted back, since
   * another program's arguments may hold its own secrets.
   */
  private Optional<String> notThisPostmaster(ProcessHandle.Info info) {
    Optional<Path> command = info.command().map(Path::of);
    String name = command.map(c -> String.valueOf(c.getFileName())).orElse("?");
    if (!name.equals("postgres")) {
      return Optional.of("runs '" + name + "', not postgres");
    }
    String[] args = info.arguments().orElse(new String[0]);
    for (int i = 0; i + 1 < args.length; i++) {
      if (args[i].equals("-D") && sameFile(Path.of(args[i + 1]), directory.pgData())) {
        return Optional.empty();
      }
    }
    return Optional.of("is a postgres serving another data directory than " + directory.pgData());
  }

  private static boolean sameFile(Path a, Path b) {
    try {
      return Files.isSameFile(a, b);
    } catch (IOException e) {
      return false;
    }
  }

  String start(boolean secretIsNew) throws IOException {
    int port = directory.port();
    Path logFile = directory.path().resolve("postgres.log");
    String secret = directory.secret();
    log.info(
        "Starting the embedded PostgreSQL in {} on port {} (log: {})",
        directory.pgData(),
        port,
        logFile);
    Path binaries = directory.path().resolve("pg-binaries");
    RecordingResolver resolver = new RecordingResolver(binaries);
    EmbeddedPostgres.Builder builder = zonkyBuilder();
    // Never closed on purpose: the server must outlive this JVM (see the class comment).
    try {
      builder
          .setOverrideWorkingDirectory(binaries.toFile())
          .setPgBinaryResolver(resolver)
          .setDataDirectory(directory.pgData())
          .setCleanDataDirectory(false)
          .setRegisterShutdownHook(false)
          .setPort(port)
          .setPGStartupWait(Duration.ofSeconds(90))
          .setDataDirectoryCustomizer(
              data -> {
                ServerAuthentication.ensureCertificate(data.toPath());
                ServerAuthentication.requireSecret(
                    resolver, data.toPath(), secret, secretIsNew, logFile);
              })
          .setConnectConfig("password", secret)
          .setServerConfig("listen_addresses", "127.0.0.1")
          .setServerConfig("ssl", "on")
          .setServerConfig("unix_socket_directories", socketDirectory(port))
          .setServerConfig("unix_socket_permissions", "0700")
          .setServerConfig("max_connections", "300")
          // zonky starts test servers with fsync off; this one keeps jobs across runs, so fsync is
          // on. synchronous_commit stays off: a crash may forget the last few hundred milliseconds
          // of recorded outcomes, whose items are then fetched again, never lost.
          .setServerConfig("fsync", "on")
          .setOutputRedirector(Redirect.appendTo(logFile.toFile()))
          .setErrorRedirector(Redirect.appendTo(logFile.toFile()));
      // zonky's own readiness check too
      authentication.verifiedTls().forEach(builder::setConnectConfig);
      builder.start();
    } catch (UncheckedIOException e) {
      throw e.getCause();
    }
    // zonky keeps a file lock on pgdata/epg-lock for this JVM's life, which would stop any other
    // process from starting the server again after a stop while this one runs. Starts are already
    // serialised by start.lock, so the file is unlinked: the lock stays on the unlinked file.
    Files.deleteIfExists(directory.pgData().resolve("epg-lock"));
    return authentication.jdbcUrl(port);
  }

  /**
   * zonky's builder reads its working directory from a system property, then creates it and deletes
   * old data directories it finds there (after stopping their postmasters): pointed at a directory
   * of its own under ours, not the shared temporary one another account could fill.
   */
  private EmbeddedPostgres.Builder zonkyBuilder() {
    synchronized (EmbeddedDatabase.class) {
      String previous = System.getProperty("ot.epg.working-dir");
      System.setProperty("ot.epg.working-dir", directory.path().resolve("pg-scratch").toString());
      try {
        return EmbeddedPostgres.builder();
      } finally {
        if (previous == null) {
          System.clearProperty("ot.epg.working-dir");
        } else {
          System.setProperty("ot.epg.working-dir", previous);
        }
      }
    }
  }

  private boolean answers(int port) {
    Properties props = new Properties();
    props.setProperty("connectTimeout", "5");
    props.setProperty("socketTimeout", "5");
    try (Connection c = DriverManager.getConnection(authentication.jdbcUrl(port), props)) {
      return c.isValid(5);
    } catch (SQLException | IOException e) {
      return false;
    }
  }

  /**
   * This directory for the server's Unix socket, when its path can be bound and passed through
   * pg_ctl's shell unquoted; else none ({@code ''}): Pacer itself connects over TCP.
   */
  private String socketDirectory(int port) {
    String path = directory.path().toString();
    boolean fits = (path + "/.s.PGSQL." + port).length() <= MAX_SOCKET_PATH;
    return fits && path.matches("[A-Za-z0-9/._+-]+") ? path : "''";
  }
}
