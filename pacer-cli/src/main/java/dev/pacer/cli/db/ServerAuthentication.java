package dev.pacer.cli.db;

import io.zonky.test.db.postgres.util.LinuxUtils;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.ProcessBuilder.Redirect;
import java.net.URLDecoder;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.postgresql.util.PasswordUtil;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * How the embedded PostgreSQL and its clients prove themselves to each other (see {@link
 * EmbeddedDatabase}): the server by TLS with the cluster's own certificate, the clients by the
 * secret, with scram-sha-256 bound to that channel. Sets the secret and the scram-only {@code
 * pg_hba.conf} in a cluster before its server starts, and makes the certificate.
 */
final class ServerAuthentication {

  /** The embedded database's logger: its parts log as it does. */
  private static final Logger log = LoggerFactory.getLogger(EmbeddedDatabase.class);

  /**
   * Every line scram-sha-256: no trust, no peer, for any address or the socket; over TCP, TLS only
   * (the client verifies the server before it proves the secret).
   */
  static final String PG_HBA =
      "# Written by pacer: every connection proves the secret in"
          + " postgres-password, over TCP inside TLS.\n"
          + "local all all scram-sha-256\n"
          + "hostssl all all 127.0.0.1/32 scram-sha-256\n"
          + "hostssl all all ::1/128 scram-sha-256\n";

  private final DataDirectory directory;

  ServerAuthentication(DataDirectory directory) {
    this.directory = directory;
  }

  /**
   * The JDBC URL of this directory's server on {@code port}, with its secret: never print it
   * unredacted (it goes to worker processes in their environment). It carries the TLS settings too,
   * so that every connection made with it, in any process, first verifies the server.
   */
  String jdbcUrl(int port) throws IOException {
    return "jdbc:postgresql://127.0.0.1:"
        + port
        + "/postgres?user=postgres&"
        + verifiedTls().entrySet().stream()
            .map(e -> e.getKey() + "=" + queryValue(e.getValue()))
            .collect(Collectors.joining("&"))
        + "&password="
        + directory.secret();
  }

  /**
   * pgjdbc's settings that make a connection verify this server before it sends anything of the
   * secret: TLS against {@link DataDirectory#certificateFile()} alone, its names checked, and a
   * SCRAM login bound to that channel (a request for a cleartext or MD5 password is refused).
   */
  Map<String, String> verifiedTls() {
    Map<String, String> settings = new LinkedHashMap<>();
    settings.put("sslmode", "verify-full");
    settings.put("sslrootcert", directory.certificateFile().toString());
    settings.put("channelBinding", "require");
    return settings;
  }

  /** A URL parameter's value as pgjdbc decodes it ({@link URLDecoder}); a path's slashes kept. */
  private static String queryValue(String value) {
    return URLEncoder.encode(value, StandardCharsets.UTF_8).replace("%2F", "/");
  }

  /**
   * Before the server starts: a cluster without its certificate and key gets new ones (the key
   * written 0600 first, then the certificate, each whole by a rename: a cluster with a certificate
   * has its key).
   */
  static void ensureCertificate(Path data) {
    Path certificate = data.resolve("server.crt");
    if (Files.isRegularFile(certificate, LinkOption.NOFOLLOW_LINKS)) {
      return;
    }
    log.info("Making the embedded PostgreSQL's TLS certificate in {}", data);
    try {
      ServerCertificate.Pem pem = ServerCertificate.generate(Instant.now());
      DataDirectory.writeOwnerOnly(data.resolve("server.key"), pem.privateKey());
      DataDirectory.writeOwnerOnly(certificate, pem.certificate());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (GeneralSecurityException e) {
      throw new UncheckedIOException(
          new IOException(
              "this JVM cannot make an EC P-256"
                  + " certificate for the embedded PostgreSQL: "
                  + e.getMessage(),
              e));
    }
  }

  /**
   * Before the server starts: a cluster whose {@code pg_hba.conf} is not Pacer's (new from zonky's
   * initdb, which trusts everyone, or made by an older Pacer) or whose secret is new gets the
   * secret as the {@code postgres} role's password, then the scram-only {@code pg_hba.conf}. In
   * that order, so an interruption leaves a cluster that is migrated again at the next start.
   */
  static void requireSecret(
      RecordingResolver resolver, Path data, String secret, boolean secretIsNew, Path logFile) {
    try {
      Path hba = data.resolve("pg_hba.conf");
      boolean ours = Files.exists(hba) && Files.readString(hba).equals(PG_HBA);
      if (ours && !secretIsNew) {
        return;
      }
      log.info(
          "Setting the embedded PostgreSQL's password and scram-sha-256 authentication in {}",
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
   * verifier of the secret read from its standard input, so the secret itself appears in no command
   * line, no statement and no log.
   */
  private static void setPassword(Path postgres, Path data, String secret, Path logFile)
      throws IOException, InterruptedException {
    List<String> command = new ArrayList<>();
    // Under root the server refuses to run; zonky runs it in a user namespace, and so does this.
    if (LinuxUtils.isUnshareAvailable()) {
      command.addAll(List.of("unshare", "-U"));
    }
    command.addAll(
        List.of(
            postgres.toString(),
            "--single",
            "-D",
            data.toString(),
            "-F",
            "-c",
            "exit_on_error=on",
            "postgres"));
    Process backend =
        new ProcessBuilder(command)
            .redirectOutput(Redirect.appendTo(logFile.toFile()))
            .redirectError(Redirect.appendTo(logFile.toFile()))
            .start();
    try (var stdin = backend.getOutputStream()) {
      String verifier = PasswordUtil.encodeScramSha256(secret.toCharArray());
      stdin.write(
          ("ALTER ROLE postgres PASSWORD '" + verifier + "';\n")
              .getBytes(StandardCharsets.US_ASCII));
    }
    if (!backend.waitFor(120, java.util.concurrent.TimeUnit.SECONDS)) {
      backend.destroyForcibly();
      throw new IOException("setting the password in single-user mode did not finish in 120 s");
    }
    if (backend.exitValue() != 0) {
      throw new IOException(
          "setting the password in single-user mode failed (exit " + backend.exitValue() + ")");
    }
  }
}
