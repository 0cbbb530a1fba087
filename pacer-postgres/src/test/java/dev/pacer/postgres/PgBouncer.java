package dev.pacer.postgres;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.Arrays;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;

/**
 * A real PgBouncer (Debian's binary) in transaction mode, on a port of its own, in front of a
 * PostgreSQL on loopback: what a team behind Supavisor, Neon's pooler or a PgBouncer of its own
 * gives Pacer, the pooler's URL as it is. Each transaction may run on any of the pool's server
 * connections; a small pool makes clients share them from their first transaction.
 *
 * <p>The binary is found on the {@code PATH} or at {@code /usr/sbin/pgbouncer} ({@code .ci/run}
 * installs it). A machine without it fails the test that needs it, with the reason, unless the
 * system property {@value #SKIP_PROPERTY} is {@code true}: then the test is skipped, for a
 * developer's machine only.
 *
 * <p>Authentication is {@code trust} (the user must still be in the auth file). PgBouncer refuses
 * to run as root, which CI is; then it drops to {@code nobody}, and its directory is writable by
 * all.
 */
public final class PgBouncer implements AutoCloseable {

  public static final String SKIP_PROPERTY = "pacer.pgbouncer.skip";

  /** PgBouncer's own default. */
  public static final Duration DEFAULT_SERVER_LOGIN_RETRY = Duration.ofSeconds(15);

  private static final Duration START_TIMEOUT = Duration.ofSeconds(15);

  private final Path binary;
  private final Path directory;
  private final Path config;
  private final Path log;
  private final int port;
  private Process process;

  /**
   * Starts a PgBouncer in transaction mode in front of the PostgreSQL on {@code serverPort} (user
   * {@code postgres}, database {@code postgres}), with {@code poolSize} server connections.
   */
  public static PgBouncer transactionMode(int serverPort, int poolSize) throws IOException {
    return transactionMode(serverPort, poolSize, DEFAULT_SERVER_LOGIN_RETRY);
  }

  /**
   * As {@link #transactionMode(int, int)}, with {@code server_login_retry} set: after a failed
   * login to the server, PgBouncer tries the next only this long after it, and meanwhile turns its
   * clients away ({@code 08P01}, "server login has been failing"), even once the server is back.
   */
  public static PgBouncer transactionMode(int serverPort, int poolSize, Duration serverLoginRetry)
      throws IOException {
    PgBouncer bouncer = new PgBouncer(findBinary(), serverPort, poolSize, serverLoginRetry);
    bouncer.start();
    return bouncer;
  }

  private PgBouncer(Path binary, int serverPort, int poolSize, Duration serverLoginRetry)
      throws IOException {
    this.binary = binary;
    this.directory =
        Files.createTempDirectory(
            "pacer-pgbouncer",
            PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwxrwxrwx")));
    Files.setPosixFilePermissions(directory, PosixFilePermissions.fromString("rwxrwxrwx"));
    try (ServerSocket s = new ServerSocket(0)) {
      this.port = s.getLocalPort();
    }
    Path users = directory.resolve("userlist.txt");
    Files.writeString(users, "\"postgres\" \"\"\n");
    this.config = directory.resolve("pgbouncer.ini");
    this.log = directory.resolve("pgbouncer.log");
    boolean root = "root".equals(System.getProperty("user.name"));
    Files.writeString(
        config,
        String.join(
            "\n",
            "[databases]",
            "postgres = host=127.0.0.1 port=" + serverPort + " dbname=postgres user=postgres",
            "[pgbouncer]",
            "listen_addr = 127.0.0.1",
            "listen_port = " + port,
            "unix_socket_dir =",
            "auth_type = trust",
            "auth_file = " + users,
            "pool_mode = transaction",
            "default_pool_size = " + poolSize,
            "max_client_conn = 200",
            "server_login_retry = " + serverLoginRetry.toMillis() / 1000.0,
            // pgjdbc sends it at start-up; PgBouncer refuses start-up parameters it does not know.
            "ignore_startup_parameters = extra_float_digits",
            root ? "user = nobody" : "",
            ""));
  }

  private static Path findBinary() {
    Optional<Path> found =
        Arrays.stream(System.getenv().getOrDefault("PATH", "").split(":"))
            .filter(dir -> !dir.isEmpty())
            .map(dir -> Path.of(dir, "pgbouncer"))
            .filter(Files::isExecutable)
            .findFirst()
            .or(() -> Optional.of(Path.of("/usr/sbin/pgbouncer")).filter(Files::isExecutable));
    if (found.isEmpty()) {
      String reason =
          "pgbouncer is not on the PATH nor at /usr/sbin/pgbouncer: install Debian's"
              + " pgbouncer package (.ci/run does)";
      Assumptions.assumeFalse(
          Boolean.getBoolean(SKIP_PROPERTY),
          reason + "; skipped, as -D" + SKIP_PROPERTY + "=true asks");
      throw new IllegalStateException(
          reason
              + ", or skip these tests on a developer's machine"
              + " with -D"
              + SKIP_PROPERTY
              + "=true");
    }
    return found.get();
  }

  public int port() {
    return port;
  }

  /** The pooler's URL, as a user would be given it: no pooler-specific parameters. */
  public String jdbcUrl() {
    return "jdbc:postgresql://127.0.0.1:" + port + "/postgres?user=postgres";
  }

  /** Starts PgBouncer (again, after {@link #stop}) on the same port and settings. */
  public synchronized void start() throws IOException {
    process =
        new ProcessBuilder(binary.toString(), config.toString())
            .redirectErrorStream(true)
            .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()))
            .start();
    long deadline = System.nanoTime() + START_TIMEOUT.toNanos();
    while (true) {
      try (Socket probe = new Socket()) {
        probe.connect(new InetSocketAddress("127.0.0.1", port), 200);
        return;
      } catch (IOException notYet) {
        if (!process.isAlive() || System.nanoTime() > deadline) {
          process.destroyForcibly();
          throw new IOException(
              "pgbouncer did not start listening on " + port + ": " + Files.readString(log));
        }
        try {
          Thread.sleep(20);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new IOException("interrupted while pgbouncer started", e);
        }
      }
    }
  }

  /**
   * Stops PgBouncer at once (SIGTERM: its fast exit), dropping every client and server connection.
   */
  public synchronized void stop() throws Exception {
    if (process == null) {
      return;
    }
    process.destroy();
    if (!process.waitFor(10, TimeUnit.SECONDS)) {
      process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
    }
    process = null;
  }

  /** What PgBouncer logged so far: for a failing test's message. */
  public String log() throws IOException {
    return Files.readString(log);
  }

  @Override
  public void close() throws Exception {
    stop();
  }
}
