package dev.pacer.cli.db;

import io.zonky.test.db.postgres.embedded.DefaultPostgresBinaryResolver;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import io.zonky.test.db.postgres.embedded.PgBinaryResolver;
import io.zonky.test.db.postgres.util.LinuxUtils;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.lang.ProcessBuilder.Redirect;
import java.net.ServerSocket;
import java.net.URLDecoder;
import java.net.URLEncoder;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.nio.file.attribute.UserPrincipal;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Properties;
import java.util.Set;
import java.util.stream.Collectors;
import org.postgresql.util.PasswordUtil;
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
 * and key, {@code server.crt} and {@code server.key}), {@code postgres.log} (server
 * log), {@code start.lock} (the start lock), {@code port} (the port, reused when the server is
 * started again so that running workers find it), {@code postgres-password} (the secret), {@code
 * pg-binaries/} (zonky's binaries, unpacked here rather than in a shared temporary directory that
 * another account could fill first) and {@code pg-scratch/} (zonky's working directory, kept empty).
 *
 * <p>Safe on a shared host: the directory is the owner's alone (0700; an existing one is tightened,
 * one owned by another account refused), the server listens on 127.0.0.1 and on a Unix socket in
 * that directory, and every connection, local or TCP, must prove the secret with scram-sha-256.
 * The secret is random, kept in a 0600 file, and reaches the server only as a SCRAM verifier on a
 * single-user backend's standard input, never on a command line or in a log. pgjdbc has no Unix
 * socket transport of its own (it needs junixsocket's native library for one), and the JDK's
 * Unix-domain channels cannot back the {@code java.net.Socket} whose read timeout Pacer's outage
 * handling relies on, so Pacer itself connects over loopback TCP; the socket is for {@code psql -h
 * DIR}.
 *
 * <p>A port is no proof of whose server answers on it: once the server stops or crashes, any
 * account may bind the port that workers reconnect to and ask them for a cleartext password. So
 * the TCP listener speaks TLS only ({@code hostssl}), with a self-signed certificate made for the
 * cluster ({@link ServerCertificate}, in {@code pgdata/}), and every client Pacer connects, its
 * own check for a running server included, verifies it ({@code sslmode=verify-full} against that
 * certificate alone) before anything else is sent, and logs in only by SCRAM bound to the TLS
 * channel ({@code channelBinding=require}: pgjdbc refuses a cleartext or MD5 request).
 */
public final class EmbeddedDatabase {

  private static final Logger log = LoggerFactory.getLogger(EmbeddedDatabase.class);

  /**
   * Every line scram-sha-256: no trust, no peer, for any address or the socket; over TCP, TLS only
   * (the client verifies the server before it proves the secret).
   */
  static final String PG_HBA = "# Written by pacer: every connection proves the secret in"
      + " postgres-password, over TCP inside TLS.\n"
      + "local all all scram-sha-256\n"
      + "hostssl all all 127.0.0.1/32 scram-sha-256\n"
      + "hostssl all all ::1/128 scram-sha-256\n";

  private static final Set<PosixFilePermission> OWNER_ONLY_DIRECTORY =
      PosixFilePermissions.fromString("rwx------");
  private static final Set<PosixFilePermission> OWNER_ONLY_FILE =
      PosixFilePermissions.fromString("rw-------");
  /** A Unix socket path longer than this (sun_path, less the terminator) cannot be bound. */
  private static final int MAX_SOCKET_PATH = 107;

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

  /** The file holding the server's secret: 0600, in the 0700 directory. */
  public Path secretFile() {
    return dir.resolve("postgres-password");
  }

  /**
   * The server's certificate, the only one its clients trust ({@code server.crt}, PostgreSQL's
   * default name, in the cluster); its key is {@code server.key} beside it.
   */
  public Path certificateFile() {
    return pgData().resolve("server.crt");
  }

  /**
   * The JDBC URL of this directory's server on {@code port}, with its secret: never print it
   * unredacted (it goes to worker processes in their environment). It carries the TLS settings
   * too, so that every connection made with it, in any process, first verifies the server.
   */
  public String jdbcUrl(int port) throws IOException {
    return "jdbc:postgresql://127.0.0.1:" + port + "/postgres?user=postgres&"
        + verifiedTls().entrySet().stream().map(e -> e.getKey() + "=" + queryValue(e.getValue()))
            .collect(Collectors.joining("&"))
        + "&password=" + secret();
  }

  /**
   * pgjdbc's settings that make a connection verify this server before it sends anything of the
   * secret: TLS against {@link #certificateFile()} alone, its names checked, and a SCRAM login
   * bound to that channel (a request for a cleartext or MD5 password is refused).
   */
  private Map<String, String> verifiedTls() {
    Map<String, String> settings = new LinkedHashMap<>();
    settings.put("sslmode", "verify-full");
    settings.put("sslrootcert", certificateFile().toString());
    settings.put("channelBinding", "require");
    return settings;
  }

  /** A URL parameter's value as pgjdbc decodes it ({@link URLDecoder}); a path's slashes kept. */
  private static String queryValue(String value) {
    return URLEncoder.encode(value, StandardCharsets.UTF_8).replace("%2F", "/");
  }

  /**
   * The URL of the running server of this directory, starting it first if none answers.
   *
   * @throws IOException if it cannot be started, or the directory is not safe to use
   */
  public String ensureRunning() throws IOException {
    secureDirectory();
    try (FileChannel channel = FileChannel.open(dir.resolve("start.lock"),
            java.nio.file.StandardOpenOption.CREATE, java.nio.file.StandardOpenOption.WRITE)) {
      FileLock lock = channel.lock();
      try {
        boolean secretIsNew = ensureSecret();
        OptionalInt running = secretIsNew ? OptionalInt.empty() : runningPort();
        if (running.isPresent()) {
          log.debug("Using the running embedded PostgreSQL on port {}", running.getAsInt());
          return jdbcUrl(running.getAsInt());
        }
        Optional<Long> unauthenticated = runningPostmaster();
        if (unauthenticated.isPresent()) {
          throw new IOException("the embedded PostgreSQL in " + dir + " (pid "
              + unauthenticated.get() + ") is running but does not accept the secret in "
              + secretFile() + " over TLS with its certificate " + certificateFile()
              + " (an older pacer started it): stop it with 'pacer db stop --data-dir " + dir
              + "', and the next start migrates it");
        }
        return start(secretIsNew);
      } finally {
        lock.release();
      }
    }
  }

  /**
   * The port of a server of this directory that answers {@code SELECT 1}, if any. Whatever
   * listens on the port {@code postmaster.pid} names must first prove, by TLS, that it holds
   * this cluster's key: a stale file's port may be anyone's.
   */
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

  /** What {@link #stop()} did. */
  public enum StopOutcome { STOPPED, NOT_RUNNING, STALE_PID_FILE }

  /** What {@link #stop()} did, and for a stale PID file, why nothing was signalled. */
  public record StopResult(StopOutcome outcome, String detail) {}

  /**
   * Stops the server of this directory (fast shutdown: open sessions are ended). The PID in
   * {@code postmaster.pid} is signalled only if that process is this directory's postmaster: a
   * {@code postgres} executable started with {@code -D} naming this data directory. A stale file,
   * left by a crash, may name a PID that now belongs to anything else.
   */
  public StopResult stop() throws IOException, InterruptedException {
    Optional<long[]> pidAndPort = readPostmasterPid();
    if (pidAndPort.isEmpty()) {
      return new StopResult(StopOutcome.NOT_RUNNING, "no postmaster.pid");
    }
    long pid = pidAndPort.get()[0];
    Optional<ProcessHandle> process = ProcessHandle.of(pid).filter(ProcessHandle::isAlive);
    if (process.isEmpty()) {
      return new StopResult(StopOutcome.STALE_PID_FILE,
          "postmaster.pid names pid " + pid + ", which is not running");
    }
    Optional<String> notOurs = notThisPostmaster(process.get().info());
    if (notOurs.isPresent()) {
      return new StopResult(StopOutcome.STALE_PID_FILE,
          "postmaster.pid names pid " + pid + ", which " + notOurs.get());
    }
    // SIGINT is PostgreSQL's "fast" shutdown; SIGTERM would wait for every client to leave.
    Process kill = new ProcessBuilder("kill", "-INT", Long.toString(pid))
        .redirectErrorStream(true).start();
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
  private Optional<Long> runningPostmaster() {
    return readPostmasterPid().map(p -> p[0])
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
      if (args[i].equals("-D") && sameFile(Path.of(args[i + 1]), pgData())) {
        return Optional.empty();
      }
    }
    return Optional.of("is a postgres serving another data directory than " + pgData());
  }

  private static boolean sameFile(Path a, Path b) {
    try {
      return Files.isSameFile(a, b);
    } catch (IOException e) {
      return false;
    }
  }

  /**
   * Creates the directory owner-only, or checks an existing one: it must be this account's, and
   * anything wider than 0700 is tightened (it is Pacer's own directory, and nothing in it is for
   * anyone else).
   */
  private void secureDirectory() throws IOException {
    Files.createDirectories(dir, PosixFilePermissions.asFileAttribute(OWNER_ONLY_DIRECTORY));
    UserPrincipal owner = Files.getOwner(dir);
    UserPrincipal me = dir.getFileSystem().getUserPrincipalLookupService()
        .lookupPrincipalByName(System.getProperty("user.name"));
    if (!owner.equals(me)) {
      throw new IOException(dir + " belongs to " + owner.getName() + ", not to "
          + me.getName() + "; the embedded PostgreSQL keeps its secret there, so it must be"
          + " yours alone: choose another --data-dir");
    }
    Set<PosixFilePermission> permissions = Files.getPosixFilePermissions(dir);
    if (!permissions.equals(OWNER_ONLY_DIRECTORY)) {
      Files.setPosixFilePermissions(dir, OWNER_ONLY_DIRECTORY);
      log.info("Tightened {} from {} to rwx------ (it holds the embedded PostgreSQL's secret)",
          dir, PosixFilePermissions.toString(permissions));
    }
  }

  /**
   * Makes the secret file if there is none (a new random secret, written whole by a rename) and
   * keeps it 0600; true if it was made now. Called under the start lock.
   */
  private boolean ensureSecret() throws IOException {
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

  private String secret() throws IOException {
    Path file = secretFile();
    if (!Files.isRegularFile(file, LinkOption.NOFOLLOW_LINKS)) {
      throw new IOException("no secret file " + file + ": start the server with pacer db start");
    }
    return Files.readString(file, StandardCharsets.US_ASCII).trim();
  }

  private String start(boolean secretIsNew) throws IOException {
    int port = port();
    Path logFile = dir.resolve("postgres.log");
    String secret = secret();
    log.info("Starting the embedded PostgreSQL in {} on port {} (log: {})", pgData(), port, logFile);
    Path binaries = dir.resolve("pg-binaries");
    RecordingResolver resolver = new RecordingResolver(binaries);
    EmbeddedPostgres.Builder builder;
    // zonky's builder reads its working directory from this property, then creates it and deletes
    // old data directories it finds there (after stopping their postmasters): pointed at a
    // directory of its own under ours, not the shared temporary one another account could fill.
    synchronized (EmbeddedDatabase.class) {
      String previous = System.getProperty("ot.epg.working-dir");
      System.setProperty("ot.epg.working-dir", dir.resolve("pg-scratch").toString());
      try {
        builder = EmbeddedPostgres.builder();
      } finally {
        if (previous == null) {
          System.clearProperty("ot.epg.working-dir");
        } else {
          System.setProperty("ot.epg.working-dir", previous);
        }
      }
    }
    // Never closed on purpose: the server must outlive this JVM (see the class comment).
    try {
      builder
          .setOverrideWorkingDirectory(binaries.toFile())
          .setPgBinaryResolver(resolver)
          .setDataDirectory(pgData())
          .setCleanDataDirectory(false)
          .setRegisterShutdownHook(false)
          .setPort(port)
          .setPGStartupWait(Duration.ofSeconds(90))
          .setDataDirectoryCustomizer(data -> {
            ensureCertificate(data.toPath());
            requireSecret(resolver, data.toPath(), secret, secretIsNew, logFile);
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
      verifiedTls().forEach(builder::setConnectConfig); // zonky's own readiness check too
      builder.start();
    } catch (UncheckedIOException e) {
      throw e.getCause();
    }
    // zonky keeps a file lock on pgdata/epg-lock for this JVM's life, which would stop any other
    // process from starting the server again after a stop while this one runs. Starts are already
    // serialised by start.lock, so the file is unlinked: the lock stays on the unlinked file.
    Files.deleteIfExists(pgData().resolve("epg-lock"));
    return jdbcUrl(port);
  }

  /**
   * This directory for the server's Unix socket, when its path can be bound and passed through
   * pg_ctl's shell unquoted; else none ({@code ''}): Pacer itself connects over TCP.
   */
  private String socketDirectory(int port) {
    String path = dir.toString();
    boolean fits = (path + "/.s.PGSQL." + port).length() <= MAX_SOCKET_PATH;
    return fits && path.matches("[A-Za-z0-9/._+-]+") ? path : "''";
  }

  /**
   * Before the server starts: a cluster without its certificate and key gets new ones (the key
   * written 0600 first, then the certificate, each whole by a rename: a cluster with a certificate
   * has its key).
   */
  private static void ensureCertificate(Path data) {
    Path certificate = data.resolve("server.crt");
    if (Files.isRegularFile(certificate, LinkOption.NOFOLLOW_LINKS)) {
      return;
    }
    log.info("Making the embedded PostgreSQL's TLS certificate in {}", data);
    try {
      ServerCertificate.Pem pem = ServerCertificate.generate(Instant.now());
      writeOwnerOnly(data.resolve("server.key"), pem.privateKey());
      writeOwnerOnly(certificate, pem.certificate());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (GeneralSecurityException e) {
      throw new UncheckedIOException(new IOException("this JVM cannot make an EC P-256"
          + " certificate for the embedded PostgreSQL: " + e.getMessage(), e));
    }
  }

  /** Writes {@code file} whole (by a rename), readable by its owner only. */
  private static void writeOwnerOnly(Path file, String text) throws IOException {
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
   * Before the server starts: a cluster whose {@code pg_hba.conf} is not Pacer's (new from
   * zonky's initdb, which trusts everyone, or made by an older Pacer) or whose secret is new gets
   * the secret as the {@code postgres} role's password, then the scram-only {@code pg_hba.conf}.
   * In that order, so an interruption leaves a cluster that is migrated again at the next start.
   */
  private static void requireSecret(RecordingResolver resolver, Path data, String secret,
      boolean secretIsNew, Path logFile) {
    try {
      Path hba = data.resolve("pg_hba.conf");
      boolean ours = Files.exists(hba) && Files.readString(hba).equals(PG_HBA);
      if (ours && !secretIsNew) {
        return;
      }
      log.info("Setting the embedded PostgreSQL's password and scram-sha-256 authentication in {}",
          data);
      setPassword(resolver.postgres(), data, secret, logFile);
      Files.writeString(hba, PG_HBA);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new UncheckedIOException(new IOException("interrupted while setting the password", e));
    }
  }

  /**
   * A single-user backend (no listener, the server is down) runs {@code ALTER ROLE} with a SCRAM
   * verifier of the secret read from its standard input, so the secret itself appears in no
   * command line, no statement and no log.
   */
  private static void setPassword(Path postgres, Path data, String secret, Path logFile)
      throws IOException, InterruptedException {
    List<String> command = new ArrayList<>();
    // Under root the server refuses to run; zonky runs it in a user namespace, and so does this.
    if (LinuxUtils.isUnshareAvailable()) {
      command.addAll(List.of("unshare", "-U"));
    }
    command.addAll(List.of(postgres.toString(), "--single", "-D", data.toString(), "-F",
        "-c", "exit_on_error=on", "postgres"));
    Process backend = new ProcessBuilder(command)
        .redirectOutput(Redirect.appendTo(logFile.toFile()))
        .redirectError(Redirect.appendTo(logFile.toFile()))
        .start();
    try (var stdin = backend.getOutputStream()) {
      String verifier = PasswordUtil.encodeScramSha256(secret.toCharArray());
      stdin.write(("ALTER ROLE postgres PASSWORD '" + verifier + "';\n")
          .getBytes(StandardCharsets.US_ASCII));
    }
    if (!backend.waitFor(120, java.util.concurrent.TimeUnit.SECONDS)) {
      backend.destroyForcibly();
      throw new IOException("setting the password in single-user mode did not finish in 120 s");
    }
    if (backend.exitValue() != 0) {
      throw new IOException("setting the password in single-user mode failed (exit "
          + backend.exitValue() + ")");
    }
  }

  /**
   * zonky's default binaries, remembering where zonky unpacks them ({@code PG-} and the archive's
   * MD5 under the override directory) so that the single-user backend runs the same ones.
   */
  private static final class RecordingResolver implements PgBinaryResolver {
    private final Path binaries;
    private volatile Path unpacked;

    RecordingResolver(Path binaries) {
      this.binaries = binaries;
    }

    @Override
    public InputStream getPgBinary(String system, String machineHardware) throws IOException {
      byte[] archive;
      try (InputStream in = DefaultPostgresBinaryResolver.INSTANCE.getPgBinary(system, machineHardware)) {
        if (in == null) {
          return null;
        }
        archive = in.readAllBytes();
      }
      try {
        unpacked = binaries.resolve("PG-"
            + HexFormat.of().formatHex(MessageDigest.getInstance("MD5").digest(archive)));
      } catch (NoSuchAlgorithmException e) {
        throw new IOException("no MD5 in this JVM, which zonky needs too", e);
      }
      return new ByteArrayInputStream(archive);
    }

    Path postgres() throws IOException {
      Path postgres = unpacked == null ? null : unpacked.resolve("bin").resolve("postgres");
      if (postgres == null || !Files.isExecutable(postgres)) {
        throw new IOException("the PostgreSQL binaries were not unpacked where expected: "
            + postgres);
      }
      return postgres;
    }
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

  private boolean answers(int port) {
    Properties props = new Properties();
    props.setProperty("connectTimeout", "5");
    props.setProperty("socketTimeout", "5");
    try (Connection c = DriverManager.getConnection(jdbcUrl(port), props)) {
      return c.isValid(5);
    } catch (SQLException | IOException e) {
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
