package dev.pacer.cli.run;

import java.io.IOException;
import java.io.InputStream;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * A body's size and SHA-256 (lower-case hex), as recorded with its item and checked after an
 * unclean stop, whether the body is a file of its own or a WARC record.
 */
record BodyDigest(long size, String sha256) {

  /** The size and digest of what {@code in} holds to its end. */
  static BodyDigest of(InputStream in) throws IOException {
    MessageDigest digest;
    try {
      digest = MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("every Java platform has SHA-256", e);
    }
    // Small: one is made per body, and most bodies are a few kilobytes.
    byte[] buffer = new byte[8 * 1024];
    long size = 0;
    for (int n; (n = in.read(buffer)) > 0; ) {
      digest.update(buffer, 0, n);
      size += n;
    }
    return new BodyDigest(size, HexFormat.of().formatHex(digest.digest()));
  }
}
