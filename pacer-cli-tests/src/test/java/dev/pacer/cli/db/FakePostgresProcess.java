package dev.pacer.cli.db;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A running {@link FakePostgres}, started from a directory of its own that every account can read,
 * optionally through a command that runs it as another account ({@code runuser -u nobody --}); and
 * the events it printed.
 */
final class FakePostgresProcess implements AutoCloseable {

  private final Process process;
  private final Path events;

  private FakePostgresProcess(Process process, Path events) {
    this.process = process;
    this.events = events;
  }

  /**
   * Copies {@link FakePostgres}'s class file under {@code dir} (its package's folders), and makes
   * an attacker's own certificate and key for 127.0.0.1 there ({@code own.crt}, {@code own.key}),
   * all readable by every account.
   */
  static void install(Path dir) throws Exception {
    Path classFile = dir.resolve(FakePostgres.class.getName().replace('.', '/') + ".class");
    Files.createDirectories(classFile.getParent());
    try (InputStream in = FakePostgres.class.getResourceAsStream("FakePostgres.class")) {
      Files.copy(in, classFile);
    }
    for (Path p = classFile.getParent(); p.startsWith(dir); p = p.getParent()) {
      openToAll(p);
    }
    openToAll(classFile);
    ServerCertificate.Pem own = ServerCertificate.generate(Instant.now());
    Files.writeString(dir.resolve("own.crt"), own.certificate());
    Files.writeString(dir.resolve("own.key"), own.privateKey());
    openToAll(dir.resolve("own.crt"));
    openToAll(dir.resolve("own.key"));
  }

  static void openToAll(Path path) throws IOException {
    Files.setPosixFilePermissions(
        path, PosixFilePermissions.fromString(Files.isDirectory(path) ? "rwxr-xr-x" : "rw-r--r--"));
  }

  /**
   * Starts the fake on {@code port} from the classes {@link #install} put in {@code dir}; with a
   * certificate and its key (PEM files), it accepts TLS. Returns once it listens.
   */
  static FakePostgresProcess start(
      List<String> asAccount, Path dir, Path events, int port, String... certificateAndKey)
      throws Exception {
    List<String> command = new ArrayList<>(asAccount);
    command.addAll(
        List.of(
            Path.of(System.getProperty("java.home"), "bin", "java").toString(),
            "-XX:TieredStopAtLevel=1",
            "-cp",
            dir.toString(),
            FakePostgres.class.getName(),
            Integer.toString(port)));
    command.addAll(List.of(certificateAndKey));
    Process process =
        new ProcessBuilder(command)
            .redirectErrorStream(true)
            .redirectOutput(events.toFile())
            .start();
    FakePostgresProcess fake = new FakePostgresProcess(process, events);
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    while (!fake.heard().contains("listening")) {
      if (!process.isAlive() || System.nanoTime() > deadline) {
        fake.close();
        throw new IllegalStateException("the fake server did not start: " + fake.heard());
      }
      Thread.sleep(20);
    }
    return fake;
  }

  /** The process the test started (the account-switching command, when there is one). */
  long pid() {
    return process.pid();
  }

  /** The events printed so far, one a line. */
  List<String> heard() throws IOException {
    return Files.readAllLines(events);
  }

  /**
   * The events once every connection the fake accepted has printed its last line, or after 30 s.
   */
  List<String> heardWhenIdle() throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (true) {
      List<String> lines = heard();
      long opened = lines.stream().filter(l -> l.equals("connection")).count();
      long closed = lines.stream().filter(l -> l.startsWith("closed")).count();
      if (opened == closed || System.nanoTime() > deadline) {
        return lines;
      }
      Thread.sleep(20);
    }
  }

  /** Closes the fake's standard input, which ends it. */
  @Override
  public void close() throws Exception {
    process.getOutputStream().close();
    if (!process.waitFor(30, TimeUnit.SECONDS)) {
      process.destroyForcibly();
    }
  }
}
