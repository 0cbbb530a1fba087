package dev.pacer.shared;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import org.junit.jupiter.api.Test;

class RedactionTest {

  private static final String SECRET = "S3cr-" + Long.toHexString(System.nanoTime());

  @Test
  void theWholeUserInfoOfAUrlIsHiddenWhateverItsScheme() {
    assertThat(Redaction.text("GET https://user:" + SECRET + "@a.example/x -> 404"))
        .isEqualTo("GET https://***@a.example/x -> 404");
    assertThat(Redaction.text("progress http://" + SECRET + "@b.example/"))
        .as("a user name alone may be a token")
        .isEqualTo("progress http://***@b.example/");
    assertThat(Redaction.text("HTTPS://user:p@" + SECRET + "@e.example:8443/"))
        .as("up to the last @ of the authority")
        .isEqualTo("HTTPS://***@e.example:8443/");
    assertThat(Redaction.text("ftp://user:" + SECRET + "@d.example/"))
        .isEqualTo("ftp://***@d.example/");
    assertThat(Redaction.text("jdbc:mysql://u:" + SECRET + "@db/app"))
        .isEqualTo("jdbc:mysql://***@db/app");
    assertThat(Redaction.text("h_t://" + SECRET + "@c.example/"))
        .as("a line that only looks like a URL")
        .isEqualTo("h_t://***@c.example/");
    assertThat(Redaction.text("://" + SECRET + "@c.example/")).isEqualTo("://***@c.example/");
    assertThat(Redaction.text("https://user:" + SECRET + "@c.example/a b"))
        .as("not a valid URL")
        .isEqualTo("https://***@c.example/a b");
  }

  @Test
  void aPostgreSqlUrlKeepsItsRoleAndLosesItsPassword() {
    assertThat(Redaction.text("and postgresql://u:p@" + SECRET + "@db/app"))
        .isEqualTo("and postgresql://u:***@db/app");
    assertThat(Redaction.text("jdbc:postgresql://role:" + SECRET + "@db:5432/app"))
        .isEqualTo("jdbc:postgresql://role:***@db:5432/app");
    assertThat(Redaction.text("postgres://role@db/app")).isEqualTo("postgres://role@db/app");
  }

  @Test
  void everySecretBearingParameterIsHiddenInAQueryAFragmentOrAList() {
    String url =
        "jdbc:postgresql://db:5432/app?user=u&password="
            + SECRET
            + "&sslpassword="
            + SECRET
            + "&sslkey=/keys/"
            + SECRET
            + ".pk8&sslfactoryarg="
            + SECRET
            + ";PassWord="
            + SECRET
            + "&ApplicationName=pacer";
    assertThat(Redaction.text("cannot use " + url + ": refused"))
        .isEqualTo(
            "cannot use jdbc:postgresql://db:5432/app?user=u&password=***&sslpassword=***"
                + "&sslkey=***&sslfactoryarg=***;PassWord=***&ApplicationName=pacer: refused");
    assertThat(Redaction.text("https://a.example/x?q=1&api_key=" + SECRET + "&Token=" + SECRET))
        .isEqualTo("https://a.example/x?q=1&api_key=***&Token=***");
    assertThat(Redaction.text("https://a.example/cb#access_token=" + SECRET + "&state=ok"))
        .as("an implicit grant's token travels in the fragment")
        .isEqualTo("https://a.example/cb#access_token=***&state=ok");
    assertThat(Redaction.text("https://a.example/x?token=" + SECRET + "#" + SECRET))
        .as("a # does not end a secret")
        .isEqualTo("https://a.example/x?token=***");
    assertThat(Redaction.text("host=db password=" + SECRET + " sslpassword=" + SECRET + " user=u"))
        .isEqualTo("host=db password=*** sslpassword=*** user=u");
  }

  @Test
  void textWithoutSecretsIsLeftAsItIs() {
    for (String plain :
        new String[] {
          "https://a.example/x?q=1#top",
          "postgresql://db/app",
          "mail me at user@example.org",
          "HTTP 404 from https://b.example/x",
          ""
        }) {
      assertThat(Redaction.text(plain)).isEqualTo(plain);
    }
    assertThat(Redaction.text(null)).isNull();
  }

  @Test
  void redactingTwiceChangesNothingMore() {
    String once =
        Redaction.text(
            "https://u:" + SECRET + "@a.example/?token=" + SECRET + " postgresql://r:x@db/");
    assertThat(once).doesNotContain(SECRET);
    assertThat(Redaction.text(once)).isEqualTo(once);
  }

  @Test
  void anAddressKeepsTheSchemeHostPortAndPathAlone() {
    assertThat(
            Redaction.address(
                URI.create("https://user:" + SECRET + "@example.org:8443/a/b?token=" + SECRET)))
        .isEqualTo("https://example.org:8443/a/b?…");
    assertThat(Redaction.address("https://example.org/cb#access_token=" + SECRET))
        .as("a fragment is dropped")
        .isEqualTo("https://example.org/cb");
    assertThat(Redaction.address("http://" + SECRET + "@example.org"))
        .isEqualTo("http://example.org");
    Object clientsOwnUrl =
        new Object() {
          @Override
          public String toString() {
            return "https://example.org/x?sig=" + SECRET;
          }
        };
    assertThat(Redaction.address(clientsOwnUrl)).isEqualTo("https://example.org/x?…");
  }

  @Test
  void anAddressThatIsNotAUrlIsRedactedAsText() {
    assertThat(Redaction.address("https://user:" + SECRET + "@a.example/a b?token=" + SECRET))
        .isEqualTo("https://***@a.example/a b?token=***");
    assertThat(Redaction.address("mailto:someone@example.org"))
        .isEqualTo("mailto:someone@example.org");
    assertThat(Redaction.address("u")).isEqualTo("u");
    assertThat(Redaction.address(null)).isEqualTo("null");
  }
}
