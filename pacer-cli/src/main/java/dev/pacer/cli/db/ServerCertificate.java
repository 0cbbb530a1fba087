package dev.pacer.cli.db;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.SecureRandom;
import java.security.Signature;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.security.spec.ECGenParameterSpec;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.Base64;
import java.util.Date;

/**
 * A self-signed certificate for the embedded PostgreSQL, naming 127.0.0.1 and {@code localhost},
 * with its private key (EC P-256), both in PEM. The server presents it; Pacer's clients trust only
 * it ({@code sslmode=verify-full}, {@code sslrootcert}), so a process of another account listening
 * on the server's port cannot finish the TLS handshake, and never sees the secret.
 *
 * <p>The JDK makes the key pair and the signature; it has no public API to build a certificate, so
 * the certificate's DER is written here (RFC 5280, the fields a self-signed server certificate
 * needs and nothing else), then parsed back and its signature checked by the JDK before use. Expiry
 * is 9999-12-31 (RFC 5280's "no well-defined expiration"): the certificate lives as long as the
 * data directory, and whoever can replace it can also read the secret beside it.
 */
final class ServerCertificate {

  private static final String ECDSA_WITH_SHA256 = "1.2.840.10045.4.3.2";
  private static final String COMMON_NAME = "2.5.4.3";
  private static final String SUBJECT_ALT_NAME = "2.5.29.17";
  private static final byte[] LOOPBACK = {127, 0, 0, 1};

  private static final int INTEGER = 0x02;
  private static final int BIT_STRING = 0x03;
  private static final int OCTET_STRING = 0x04;
  private static final int OBJECT_IDENTIFIER = 0x06;
  private static final int UTF8_STRING = 0x0c;
  private static final int UTC_TIME = 0x17;
  private static final int GENERALIZED_TIME = 0x18;
  private static final int SEQUENCE = 0x30;
  private static final int SET = 0x31;
  private static final int EXPLICIT_0 = 0xa0;
  private static final int EXPLICIT_3 = 0xa3;
  private static final int SAN_DNS_NAME = 0x82;
  private static final int SAN_IP_ADDRESS = 0x87;

  /** The certificate and its key, PEM-encoded. */
  record Pem(String certificate, String privateKey) {}

  private ServerCertificate() {}

  /** A new key pair and a certificate for it, valid from a day ago (clock skew) for good. */
  static Pem generate(Instant now) throws GeneralSecurityException {
    KeyPairGenerator generator = KeyPairGenerator.getInstance("EC");
    generator.initialize(new ECGenParameterSpec("secp256r1"));
    KeyPair pair = generator.generateKeyPair();

    byte[] serial = new byte[16];
    new SecureRandom().nextBytes(serial);
    serial[0] = (byte) ((serial[0] & 0x7f) | 0x40); // positive, and no leading zero byte in DER
    byte[] algorithm = der(SEQUENCE, oid(ECDSA_WITH_SHA256));
    byte[] name = name();
    byte[] validity = validity(now);
    byte[] subjectAltName = subjectAltName();
    byte[] toBeSigned =
        der(
            SEQUENCE,
            der(EXPLICIT_0, der(INTEGER, new byte[] {2})), // version 3
            der(INTEGER, serial),
            algorithm,
            name,
            validity,
            name,
            pair.getPublic().getEncoded(), // already a SubjectPublicKeyInfo
            der(EXPLICIT_3, der(SEQUENCE, subjectAltName)));

    Signature signer = Signature.getInstance("SHA256withECDSA");
    signer.initSign(pair.getPrivate());
    signer.update(toBeSigned);
    byte[] signature = signer.sign(); // already DER: SEQUENCE { r, s }
    byte[] certificate =
        der(SEQUENCE, toBeSigned, algorithm, der(BIT_STRING, new byte[] {0}, signature));

    X509Certificate parsed =
        (X509Certificate)
            CertificateFactory.getInstance("X.509")
                .generateCertificate(new ByteArrayInputStream(certificate));
    parsed.verify(pair.getPublic());
    parsed.checkValidity(Date.from(now));
    return new Pem(
        pem("CERTIFICATE", certificate),
        pem(
            "PRIVATE KEY",
            pair.getPrivate().getEncoded())); // PKCS#8, which OpenSSL reads unencrypted
  }

  /** The certificate's issuer and subject, the same name. */
  private static byte[] name() {
    return der(
        SEQUENCE,
        der(
            SET,
            der(
                SEQUENCE,
                oid(COMMON_NAME),
                der(UTF8_STRING, "pacer embedded PostgreSQL".getBytes(StandardCharsets.UTF_8)))));
  }

  /** From a day before {@code now} to the end of 9999. */
  private static byte[] validity(Instant now) {
    return der(
        SEQUENCE,
        der(
            UTC_TIME,
            DateTimeFormatter.ofPattern("yyMMddHHmmss'Z'")
                .withZone(ZoneOffset.UTC)
                .format(now.minus(Duration.ofDays(1)))
                .getBytes(StandardCharsets.US_ASCII)),
        der(GENERALIZED_TIME, "99991231235959Z".getBytes(StandardCharsets.US_ASCII)));
  }

  /** The names the server answers to: the loopback address and localhost. */
  private static byte[] subjectAltName() {
    return der(
        SEQUENCE,
        oid(SUBJECT_ALT_NAME),
        der(
            OCTET_STRING,
            der(
                SEQUENCE,
                der(SAN_IP_ADDRESS, LOOPBACK),
                der(SAN_DNS_NAME, "localhost".getBytes(StandardCharsets.US_ASCII)))));
  }

  private static String pem(String label, byte[] der) {
    return "-----BEGIN "
        + label
        + "-----\n"
        + Base64.getMimeEncoder(64, new byte[] {'\n'}).encodeToString(der)
        + "\n-----END "
        + label
        + "-----\n";
  }

  /** A DER element: the tag, the definite length, the contents one after the other. */
  private static byte[] der(int tag, byte[]... contents) {
    ByteArrayOutputStream body = new ByteArrayOutputStream();
    for (byte[] content : contents) {
      body.writeBytes(content);
    }
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    out.write(tag);
    int length = body.size();
    if (length < 0x80) {
      out.write(length);
    } else {
      int lengthBytes = (Integer.SIZE - Integer.numberOfLeadingZeros(length) + 7) / 8;
      out.write(0x80 | lengthBytes);
      for (int i = lengthBytes - 1; i >= 0; i--) {
        out.write(length >>> (8 * i));
      }
    }
    out.writeBytes(body.toByteArray());
    return out.toByteArray();
  }

  /** An OBJECT IDENTIFIER: the first two arcs as 40a + b, then every arc in base 128. */
  private static byte[] oid(String dotted) {
    String[] arcs = dotted.split("\\.");
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    base128(out, 40L * Long.parseLong(arcs[0]) + Long.parseLong(arcs[1]));
    for (int i = 2; i < arcs.length; i++) {
      base128(out, Long.parseLong(arcs[i]));
    }
    return der(OBJECT_IDENTIFIER, out.toByteArray());
  }

  private static void base128(ByteArrayOutputStream out, long value) {
    int groups = Math.max(1, (Long.SIZE - Long.numberOfLeadingZeros(value) + 6) / 7);
    for (int i = groups - 1; i >= 0; i--) {
      int group = (int) (value >>> (7 * i)) & 0x7f;
      out.write(i == 0 ? group : group | 0x80);
    }
  }
}
