package dev.pacer.cli.db;

import io.zonky.test.db.postgres.embedded.DefaultPostgresBinaryResolver;
import io.zonky.test.db.postgres.embedded.PgBinaryResolver;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * zonky's default binaries, remembering where zonky unpacks them ({@code PG-} and the archive's MD5
 * under the override directory) so that the single-user backend runs the same ones.
 */
final class RecordingResolver implements PgBinaryResolver {
  private final Path binaries;
  private volatile Path unpacked;

  RecordingResolver(Path binaries) {
    this.binaries = binaries;
  }

  @Override
  public InputStream getPgBinary(String system, String machineHardware) throws IOException {
    byte[] archive;
    try (InputStream in =
        DefaultPostgresBinaryResolver.INSTANCE.getPgBinary(system, machineHardware)) {
      if (in == null) {
        return null;
      }
      archive = in.readAllBytes();
    }
    try {
      unpacked =
          binaries.resolve(
              "PG-" + HexFormat.of().formatHex(MessageDigest.getInstance("MD5").digest(archive)));
    } catch (NoSuchAlgorithmException e) {
      throw new IOException("no MD5 in this JVM, which zonky needs too", e);
    }
    return new ByteArrayInputStream(archive);
  }

  Path postgres() throws IOException {
    Path postgres = unpacked == null ? null : unpacked.resolve("bin").resolve("postgres");
    if (postgres == null || !Files.isExecutable(postgres)) {
      throw new IOException(
          "the PostgreSQL binaries were not unpacked where expected: " + postgres);
    }
    return postgres;
  }
}
