package dev.pacer.cli.db;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.List;
import java.util.OptionalInt;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Once the embedded PostgreSQL has stopped, its port is anyone's, and every worker still holds its
 * URL. A server of another account listening there and asking for a cleartext password is never
 * sent the secret, by a worker's connection nor by the check for a running server that every
 * invocation makes; the worker's connection fails saying why.
 *
 * <p>The fake runs as {@code nobody} when the tests run as root (as on CI) and {@code runuser} is
 * there; otherwise as this account, which changes nothing on the client's side: a client cannot see
 * who owns the listening socket, only what it says.
 */
class ServerIdentityTest {

  @TempDir Path dir;

  private EmbeddedDatabase db;
  private String url;
  private int port;
  private Path fakeDir;
  private int fakes;

  @AfterEach
  void stopDatabase() throws Exception {
    if (db != null) {
      db.stop();
    }
  }

  @Test
  void aServerOfAnotherAccountOnTheFreedPortIsNeverSentTheSecret() throws Exception {
    db = new EmbeddedDatabase(dir.resolve("pacer-home"));
    url = db.ensureRunning();
    Matcher m = Pattern.compile("jdbc:postgresql://127\\.0\\.0\\.1:(\\d+)/").matcher(url);
    assertThat(m.find()).isTrue();
    port = Integer.parseInt(m.group(1));
    try (Connection c = new Database(url).open()) {
      assertThat(c.isValid(5)).as("the URL every worker holds reaches the real server").isTrue();
    }
    assertThat(db.stop().outcome()).isEqualTo(EmbeddedDatabase.StopOutcome.STOPPED);

    FakePostgresProcess.openToAll(dir);
    fakeDir = Files.createDirectories(dir.resolve("fake"));
    FakePostgresProcess.openToAll(fakeDir);
    FakePostgresProcess.install(fakeDir);

    assertNeverSentTheSecret("that declines TLS", "The server does not support SSL");
    assertNeverSentTheSecret(
        "with a certificate of its own for 127.0.0.1",
        "SSL error",
        fakeDir.resolve("own.crt"),
        fakeDir.resolve("own.key"));

    // As if the fake held the real server's key: only the login's channel binding is left.
    Path certificate = Files.copy(db.pgData().resolve("server.crt"), fakeDir.resolve("pacer.crt"));
    Path key = Files.copy(db.pgData().resolve("server.key"), fakeDir.resolve("pacer.key"));
    FakePostgresProcess.openToAll(certificate);
    FakePostgresProcess.openToAll(key);
    assertNeverSentTheSecret(
        "with the real server's certificate and key",
        "Channel binding is required",
        certificate,
        key);
  }

  private void assertNeverSentTheSecret(
      String fakeIs, String workerHears, Path... certificateAndKey) throws Exception {
    Path events = dir.resolve("fake-" + ++fakes + ".events");
    Path pidFile = db.pgData().resolve("postmaster.pid");
    try (FakePostgresProcess fake =
        FakePostgresProcess.start(
            anotherAccount(),
            fakeDir,
            events,
            port,
            List.of(certificateAndKey).stream().map(Path::toString).toArray(String[]::new))) {
      Database worker = new Database(url);
      Throwable refused = catchThrowable(() -> worker.open().close());
      long workerReached = connections(fake.heardWhenIdle());
      // A crash leaves postmaster.pid behind, and its pid may be anyone's by now.
      Files.writeString(
          pidFile,
          fake.pid()
              + "\n"
              + db.pgData()
              + "\n1700000000\n"
              + port
              + "\n"
              + db.directory()
              + "\n127.0.0.1\n0 0\nready\n");
      OptionalInt running = db.runningPort();

      // Earlier workers' outage probes may connect too, every 5 s: counts are at least, not exact.
      List<String> heard = fake.heardWhenIdle();
      assertThat(heard)
          .as("what the fake %s heard", fakeIs)
          .noneMatch(line -> line.startsWith("password"));
      assertThat(workerReached).as("the worker reached the fake %s", fakeIs).isPositive();
      assertThat(connections(heard))
          .as("the check for a running server reached the fake %s", fakeIs)
          .isGreaterThan(workerReached);
      assertThat(running).as("a running server, said of a fake %s", fakeIs).isEmpty();
      assertThat(refused)
          .as("a worker's connection to a fake %s", fakeIs)
          .isInstanceOf(SQLException.class);
      assertThat(worker.describe((SQLException) refused))
          .as("a fake %s", fakeIs)
          .contains(workerHears);
    } finally {
      Files.deleteIfExists(pidFile);
    }
  }

  private static long connections(List<String> heard) {
    return heard.stream().filter("connection"::equals).count();
  }

  /** {@code runuser -u nobody --} when this runs as root and has runuser; else nothing. */
  private static List<String> anotherAccount() {
    boolean root = "root".equals(System.getProperty("user.name"));
    return root && Files.isExecutable(Path.of("/usr/sbin/runuser"))
        ? List.of("/usr/sbin/runuser", "-u", "nobody", "--")
        : List.of();
  }
}
