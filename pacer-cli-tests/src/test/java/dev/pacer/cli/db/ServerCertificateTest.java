package dev.pacer.cli.db;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The embedded PostgreSQL's certificate, as the JDK reads it back. */
class ServerCertificateTest {

  @Test
  void namesTheLoopbackAddressAndLocalhostAndSignsItself() throws Exception {
    Instant now = Instant.parse("2031-05-06T07:08:09Z");
    ServerCertificate.Pem pem = ServerCertificate.generate(now);
    X509Certificate certificate = parse(pem.certificate());

    assertThat(certificate.getSubjectAlternativeNames())
        .containsExactly(List.of(7, "127.0.0.1"), List.of(2, "localhost"));
    assertThat(certificate.getSubjectX500Principal())
        .isEqualTo(certificate.getIssuerX500Principal());
    certificate.verify(certificate.getPublicKey());
    assertThat(certificate.getNotBefore().toInstant()).isEqualTo(now.minus(Duration.ofDays(1)));
    assertThat(certificate.getNotAfter().toInstant())
        .isEqualTo(Instant.parse("9999-12-31T23:59:59Z"));
    assertThat(certificate.getSigAlgName()).isEqualTo("SHA256withECDSA");
    assertThat(pem.privateKey())
        .startsWith("-----BEGIN PRIVATE KEY-----\n")
        .endsWith("-----END PRIVATE KEY-----\n");
  }

  @Test
  void everyCertificateHasAKeyOfItsOwn() throws Exception {
    Instant now = Instant.now();
    X509Certificate first = parse(ServerCertificate.generate(now).certificate());
    X509Certificate second = parse(ServerCertificate.generate(now).certificate());
    assertThat(first.getPublicKey()).isNotEqualTo(second.getPublicKey());
    assertThat(first.getSerialNumber()).isNotEqualTo(second.getSerialNumber()).isPositive();
  }

  private static X509Certificate parse(String pem) throws Exception {
    return (X509Certificate)
        CertificateFactory.getInstance("X.509")
            .generateCertificate(new ByteArrayInputStream(pem.getBytes(StandardCharsets.US_ASCII)));
  }
}
