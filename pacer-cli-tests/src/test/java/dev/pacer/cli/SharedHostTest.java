package dev.pacer.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.pacer.cli.db.EmbeddedDatabase;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.Properties;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The embedded PostgreSQL on a host shared with other accounts: its directory is the owner's alone,
 * every connection must prove the secret, a cluster initialised with trust is migrated, and {@code
 * db stop} signals only this directory's postmaster.
 */
class SharedHostTest {

  @TempDir Path dir;

  private Path home() {
    return dir.resolve("pacer-home");
  }

  @AfterEach
  void stopDatabase() {
    Cli.run("db", "stop", "--data-dir", home().toString());
  }

  @Test
  void aConnectionWithoutTheSecretIsRefused() throws Exception {
    // Other accounts may pass through the test's own directory: only Pacer's modes protect.
    Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxr-xr-x"));
    Files.createDirectories(home());
    Files.setPosixFilePermissions(home(), PosixFilePermissions.fromString("rwxr-xr-x"));

    Cli.Result started = Cli.run("db", "start", "--data-dir", home().toString());
    assertThat(started.code()).as(started.err()).isZero();
    Path secretFile = home().resolve("postgres-password");
    String secret = Files.readString(secretFile).trim();
    assertThat(started.out()).contains("password=***").doesNotContain(secret);
    assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(home())))
        .as("an existing wider directory is tightened")
        .isEqualTo("rwx------");
    assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(secretFile)))
        .isEqualTo("rw-------");
    assertThat(secret).hasSize(43);
    try (var binaries = Files.list(home().resolve("pg-binaries"))) {
      assertThat(binaries.filter(p -> Files.isExecutable(p.resolve("bin/postgres"))))
          .as("binaries unpacked under the data directory")
          .isNotEmpty();
    }
    int port = port(started.out());

    assertRefused(port, null);
    assertRefused(port, "not-the-secret");
    try (Connection c = connect(port, secret)) {
      assertThat(c.isValid(5)).isTrue();
    }
    Properties withoutTls = new Properties();
    withoutTls.setProperty("user", "postgres");
    withoutTls.setProperty("password", secret);
    withoutTls.setProperty("sslmode", "disable");
    assertThatThrownBy(
            () ->
                DriverManager.getConnection(
                        "jdbc:postgresql://127.0.0.1:" + port + "/postgres", withoutTls)
                    .close())
        .as("over TCP, the secret only inside TLS")
        .isInstanceOf(SQLException.class)
        .hasMessageContaining("no encryption");

    assumeTrue(
        isRoot() && Files.isExecutable(Path.of("/usr/sbin/runuser")),
        "reading as another account needs root and runuser");
    Process other =
        new ProcessBuilder("/usr/sbin/runuser", "-u", "nobody", "--", "cat", secretFile.toString())
            .redirectErrorStream(true)
            .start();
    String said = new String(other.getInputStream().readAllBytes());
    assertThat(other.waitFor()).as(said).isNotZero();
    assertThat(said).contains("Permission denied").doesNotContain(secret);
  }

  @Test
  void aClusterInitialisedWithTrustIsMigrated() throws Exception {
    Path pgData = home().resolve("pgdata");
    Files.createDirectories(home());
    try (EmbeddedPostgres old =
        EmbeddedPostgres.builder().setDataDirectory(pgData).setCleanDataDirectory(false).start()) {
      try (Connection c = old.getPostgresDatabase().getConnection()) {
        assertThat(c.isValid(5)).as("trust: no password needed").isTrue();
      }
    }
    Files.deleteIfExists(pgData.resolve("epg-lock"));

    Cli.Result started = Cli.run("db", "start", "--data-dir", home().toString());
    assertThat(started.code()).as(started.err()).isZero();
    int port = port(started.out());
    assertRefused(port, null);
    String secret = Files.readString(home().resolve("postgres-password")).trim();
    try (Connection c = connect(port, secret)) {
      assertThat(c.isValid(5)).isTrue();
    }
    assertThat(Files.readString(pgData.resolve("pg_hba.conf")))
        .doesNotContain("trust")
        .contains("scram-sha-256")
        .contains("hostssl")
        .doesNotContainPattern("(?m)^host ");
  }

  @Test
  void stopSignalsOnlyThisDirectorysPostmaster() throws Exception {
    Path pgData = Files.createDirectories(home().resolve("pgdata"));
    Process bystander = new ProcessBuilder("sleep", "60").start();
    try {
      Files.writeString(
          pgData.resolve("postmaster.pid"),
          bystander.pid() + "\n" + pgData + "\n1700000000\n5432\n/tmp\n127.0.0.1\n0 0\nready\n");
      Cli.Result stop = Cli.run("db", "stop", "--data-dir", home().toString());
      assertThat(stop.code()).as(stop.err()).isZero();
      assertThat(stop.out())
          .contains("pid " + bystander.pid())
          .contains("'sleep', not postgres")
          .contains("Nothing was signalled");
      assertThat(bystander.isAlive()).as("the process the stale file names").isTrue();
    } finally {
      bystander.destroyForcibly();
    }
  }

  @Test
  void aDirectoryOfAnotherAccountIsRefused() throws Exception {
    assumeTrue(isRoot(), "giving a directory to another account needs root");
    Files.createDirectories(home());
    new ProcessBuilder("chown", "nobody", home().toString()).inheritIO().start().waitFor();
    Cli.Result started = Cli.run("db", "start", "--data-dir", home().toString());
    assertThat(started.code()).isEqualTo(2);
    assertThat(started.err()).contains(home().toString()).contains("belongs to nobody");
    assertThat(home().resolve("postgres-password")).doesNotExist();
    assertThatThrownBy(() -> new EmbeddedDatabase(home()).ensureRunning())
        .hasMessageContaining("belongs to nobody");
  }

  private static boolean isRoot() {
    return "root".equals(System.getProperty("user.name"));
  }

  private void assertRefused(int port, String password) {
    assertThatThrownBy(() -> connect(port, password).close())
        .as("password %s", password == null ? "none" : "wrong")
        .isInstanceOf(SQLException.class)
        .hasMessageContaining("password");
  }

  /** As Pacer connects: TLS, verifying the server's certificate. */
  private Connection connect(int port, String password) throws SQLException {
    Properties props = new Properties();
    props.setProperty("user", "postgres");
    props.setProperty("sslmode", "verify-full");
    props.setProperty("sslrootcert", home().resolve("pgdata/server.crt").toString());
    if (password != null) {
      props.setProperty("password", password);
    }
    return DriverManager.getConnection("jdbc:postgresql://127.0.0.1:" + port + "/postgres", props);
  }

  private static int port(String out) {
    Matcher m = Pattern.compile("jdbc:postgresql://127\\.0\\.0\\.1:(\\d+)/").matcher(out);
    assertThat(m.find()).as(out).isTrue();
    return Integer.parseInt(m.group(1));
  }
}
