package dev.pacer.postgres;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * A PostgreSQL server (zonky's binaries) on a fixed port and data directory that a test can stop
 * the hard way (SIGQUIT to the postmaster, which is what {@code pg_ctl stop -m immediate} sends: no
 * checkpoint, every backend killed, as in a crash) and start again on the same port and data, with
 * crash recovery. The signal is sent directly because pg_ctl refuses to run as root, which CI is.
 */
public final class RestartablePostgres implements AutoCloseable {

  private final Path dataDirectory;
  private final int port;
  private EmbeddedPostgres server;
  private long postmasterPid;

  public RestartablePostgres() throws IOException {
    this(Map.of());
  }

  /** A server whose first run has {@code settings} on top of zonky's. */
  public RestartablePostgres(Map<String, String> settings) throws IOException {
    this.dataDirectory = Files.createTempDirectory("pacer-restartable-pg");
    try (ServerSocket s = new ServerSocket(0)) {
      this.port = s.getLocalPort();
    }
    start(settings);
  }

  public int port() {
    return port;
  }

  public String jdbcUrl() {
    return "jdbc:postgresql://127.0.0.1:" + port + "/postgres?user=postgres";
  }

  /** Runs {@code sql} on a connection of its own. */
  public void execute(String sql) throws SQLException {
    try (Connection c = DriverManager.getConnection(jdbcUrl());
        Statement s = c.createStatement()) {
      s.execute(sql);
    }
  }

  public synchronized void start() throws IOException {
    start(Map.of());
  }

  /** Starts the server with {@code settings} on top of zonky's, for this run of it only. */
  public synchronized void start(Map<String, String> settings) throws IOException {
    EmbeddedPostgres.Builder builder =
        EmbeddedPostgres.builder()
            .setDataDirectory(dataDirectory)
            .setCleanDataDirectory(false)
            .setPort(port);
    settings.forEach(builder::setServerConfig);
    server = builder.start();
    postmasterPid =
        Long.parseLong(Files.readAllLines(dataDirectory.resolve("postmaster.pid")).get(0).trim());
  }

  /** Stops the server at once, as a crash would: an immediate shutdown. */
  public synchronized void stopImmediately() throws Exception {
    stop("-QUIT");
  }

  /**
   * Stops the server as {@code pg_ctl stop} does by default (a fast shutdown): sessions are ended
   * and the server checkpoints before it exits, so every commit is kept, asynchronous ones too.
   */
  public synchronized void stopFast() throws Exception {
    stop("-INT");
  }

  private void stop(String signal) throws Exception {
    Process kill =
        new ProcessBuilder("kill", signal, Long.toString(postmasterPid))
            .redirectErrorStream(true)
            .start();
    String output = new String(kill.getInputStream().readAllBytes());
    if (!kill.waitFor(10, TimeUnit.SECONDS) || kill.exitValue() != 0) {
      throw new IOException("kill " + signal + " " + postmasterPid + " failed: " + output);
    }
    ProcessHandle postmaster = ProcessHandle.of(postmasterPid).orElse(null);
    if (postmaster != null) {
      postmaster.onExit().get(30, TimeUnit.SECONDS);
    }
    // Releases zonky's lock on the data directory (its own stop finds no server, which is fine);
    // the directory is kept because it was opened with setCleanDataDirectory(false).
    server.close();
    server = null;
  }

  @Override
  public synchronized void close() {
    try {
      if (server != null) {
        server.close();
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
