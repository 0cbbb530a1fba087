package dev.pacer.cli.db;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.Path;
import java.util.Optional;
import java.util.OptionalInt;
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
 * <p>Layout of the data directory: {@code pgdata/} (the cluster, with the server's TLS certificate
 * and key, {@code server.crt} and {@code server.key}), {@code postgres.log} (server log), {@code
 * start.lock} (the start lock), {@code port} (the port, reused when the server is started again so
 * that running workers find it), {@code postgres-password} (the secret), {@code pg-binaries/}
 * (zonky's binaries, unpacked here rather than in a shared temporary directory that another account
 * could fill first) and {@code pg-scratch/} (zonky's working directory, kept empty).
 *
 * <p>Safe on a shared host: the directory is the owner's alone (0700; an existing one is tightened,
 * one owned by another account refused), the server listens on 127.0.0.1 and on a Unix socket in
 * that directory, and every connection, local or TCP, must prove the secret with scram-sha-256. The
 * secret is random, kept in a 0600 file, and reaches the server only as a SCRAM verifier on a
 * single-user backend's standard input, never on a command line or in a log. pgjdbc has no Unix
 * socket transport of its own (it needs junixsocket's native library for one), and the JDK's
 * Unix-domain channels cannot back the {@code java.net.Socket} whose read timeout Pacer's outage
 * handling relies on, so Pacer itself connects over loopback TCP; the socket is for {@code psql -h
 * DIR}.
 *
 * <p>A port is no proof of whose server answers on it: once the server stops or crashes, any
 * account may bind the port that workers reconnect to and ask them for a cleartext password. So the
 * TCP listener speaks TLS only ({@code hostssl}), with a self-signed certificate made for the
 * cluster ({@link ServerCertificate}, in {@code pgdata/}), and every client Pacer connects, its own
 * check for a running server included, verifies it ({@code sslmode=verify-full} against that
 * certificate alone) before anything else is sent, and logs in only by SCRAM bound to the TLS
 * channel ({@code channelBinding=require}: pgjdbc refuses a cleartext or MD5 request).
 *
 * <p>Its parts: {@link DataDirectory} (the directory, the secret, the port), {@link
 * ServerAuthentication} (TLS, the secret as the password, {@code pg_hba.conf}) and {@link
 * Postmaster} (starting, finding and stopping the server); this class takes the start lock.
 */
public final class EmbeddedDatabase {

  private static final Logger log = LoggerFactory.getLogger(EmbeddedDatabase.class);

  private final Path dir;
  private final DataDirectory directory;
  private final ServerAuthentication authentication;
  private final Postmaster postmaster;

  public EmbeddedDatabase(Path dir) {
    this.dir = dir.toAbsolutePath().normalize();
    this.directory = new DataDirectory(this.dir);
    this.authentication = new ServerAuthentication(directory);
    this.postmaster = new Postmaster(directory, authentication);
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
    return directory.pgData();
  }

  /** The file holding the server's secret: 0600, in the 0700 directory. */
  public Path secretFile() {
    return directory.secretFile();
  }

  /**
   * The server's certificate, the only one its clients trust ({@code server.crt}, PostgreSQL's
   * default name, in the cluster); its key is {@code server.key} beside it.
   */
  public Path certificateFile() {
    return directory.certificateFile();
  }

  /**
   * The JDBC URL of this directory's server on {@code port}, with its secret: never print it
   * unredacted (it goes to worker processes in their environment). It carries the TLS settings too,
   * so that every connection made with it, in any process, first verifies the server.
   */
  public String jdbcUrl(int port) throws IOException {
    return authentication.jdbcUrl(port);
  }

  /**
   * The URL of the running server of this directory, starting it first if none answers.
   *
   * @throws IOException if it cannot be started, or the directory is not safe to use
   */
  public String ensureRunning() throws IOException {
    directory.secureDirectory();
    try (FileChannel channel =
        FileChannel.open(
            dir.resolve("start.lock"),
            java.nio.file.StandardOpenOption.CREATE,
            java.nio.file.StandardOpenOption.WRITE)) {
      FileLock lock = channel.lock();
      try {
        boolean secretIsNew = directory.ensureSecret();
        OptionalInt running = secretIsNew ? OptionalInt.empty() : postmaster.runningPort();
        if (running.isPresent()) {
          log.debug("Using the running embedded PostgreSQL on port {}", running.getAsInt());
          return authentication.jdbcUrl(running.getAsInt());
        }
        Optional<Long> unauthenticated = postmaster.runningPostmaster();
        if (unauthenticated.isPresent()) {
          throw new IOException(
              "the embedded PostgreSQL in "
                  + dir
                  + " (pid "
                  + unauthenticated.get()
                  + ") is running but does not accept the secret in "
                  + secretFile()
                  + " over TLS with its certificate "
                  + certificateFile()
                  + " (an older pacer started it): stop it with 'pacer db stop --data-dir "
                  + dir
                  + "', and the next start migrates it");
        }
        return postmaster.start(secretIsNew);
      } finally {
        lock.release();
      }
    }
  }

  /**
   * The port of a server of this directory that answers {@code SELECT 1}, if any. Whatever listens
   * on the port {@code postmaster.pid} names must first prove, by TLS, that it holds this cluster's
   * key: a stale file's port may be anyone's.
   */
  public OptionalInt runningPort() {
    return postmaster.runningPort();
  }

  /** What {@link #stop()} did. */
  public enum StopOutcome {
    STOPPED,
    NOT_RUNNING,
    STALE_PID_FILE
  }

  /** What {@link #stop()} did, and for a stale PID file, why nothing was signalled. */
  public record StopResult(StopOutcome outcome, String detail) {}

  /**
   * Stops the server of this directory (fast shutdown: open sessions are ended). The PID in {@code
   * postmaster.pid} is signalled only if that process is this directory's postmaster: a {@code
   * postgres} executable started with {@code -D} naming this data directory. A stale file, left by
   * a crash, may name a PID that now belongs to anything else.
   */
  public StopResult stop() throws IOException, InterruptedException {
    return postmaster.stop();
  }

  /** For messages: where the data directory is. */
  @Override
  public String toString() {
    return "embedded PostgreSQL in " + dir;
  }
}
