package dev.pacer.cli.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayInputStream;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class UrlListTest {

  private static UrlList read(String text) throws Exception {
    return UrlList.read(new ByteArrayInputStream(text.getBytes(StandardCharsets.UTF_8)), "input");
  }

  @Test
  void keepsHttpAndHttpsUrlsInOrderAndNamesTheirHosts() throws Exception {
    // A duplicate stays in the list (it is never held in memory whole); the job keeps it once.
    UrlList list =
        read("# urls\nhttps://A.example/1\n\n  http://b.example/2  \nhttps://A.example/1\n");
    assertThat(list.urls())
        .containsExactly("https://A.example/1", "http://b.example/2", "https://A.example/1");
    assertThat(list.urls()).as("read again from the start").hasSize(3);
    assertThat(list.count()).isEqualTo(3);
    assertThat(list.hosts()).containsExactly("a.example", "b.example");
    assertThat(list.problems()).isEmpty();
  }

  @Test
  void reportsEachBadLineWithItsNumberAndSkipsIt() throws Exception {
    String longLine = "http://x.example/" + "a".repeat(UrlList.MAX_URL_LENGTH);
    UrlList list =
        read(
            "http://ok.example/\nftp://x/y\nhttp://\nmailto:a@b\n"
                + longLine
                + "\nhttp://bad host/\nhttp://x.example/\u0001\n");
    assertThat(list.urls()).containsExactly("http://ok.example/");
    assertThat(list.problems()).hasSize(6);
    assertThat(list.problems().get(0))
        .isEqualTo("line 2: scheme ftp is not http or https: ftp://x/y");
    assertThat(list.problems().get(1)).startsWith("line 3: ");
    assertThat(list.problems().get(2)).startsWith("line 4: scheme mailto");
    assertThat(list.problems().get(3))
        .startsWith("line 5: longer than 8192 characters")
        .endsWith("...");
    assertThat(list.problems().get(4)).startsWith("line 6: not a URL");
    assertThat(list.problems().get(5)).startsWith("line 7: ").contains("\\u0001");
  }

  /**
   * A URL with credentials before its host is skipped with its line number and the reason, and no
   * report of a skipped line shows them, whether the line is a URL or not: the client would not
   * send them, and kept they would be stored and printed with the URL.
   */
  @Test
  void skipsAUrlWithCredentialsAndNeverShowsThem() throws Exception {
    String secret = "S3cr3t-pw";
    String token = "ghp_T0ken";
    UrlList list =
        read(
            "https://ok.example/1\nhttps://user:"
                + secret
                + "@a.example/2\nhttp://"
                + token
                + "@b.example:8080/3?q=1\nhttps://user:"
                + secret
                + "@c.example/a b\nftp://user:"
                + secret
                + "@d.example/\nhttps://user:p@"
                + secret
                + "@e.example/\n");
    assertThat(list.urls()).containsExactly("https://ok.example/1");
    assertThat(list.hosts()).containsExactly("ok.example");
    assertThat(list.problems()).hasSize(5);
    assertThat(list.problems().get(0))
        .isEqualTo(
            "line 2: has credentials before the host (user-info), which pacer fetch neither sends"
                + " nor stores: https://***@a.example/2");
    assertThat(list.problems().get(1))
        .startsWith("line 3: has credentials")
        .endsWith(": http://***@b.example:8080/3?q=1");
    assertThat(list.problems().get(2)).startsWith("line 4: not a URL");
    assertThat(list.problems().get(3)).startsWith("line 5: scheme ftp");
    assertThat(list.problems().get(4))
        .as("two @: no host for the URI")
        .startsWith("line 6: no host");
    assertThat(String.join("\n", list.problems())).doesNotContain(secret).doesNotContain(token);
  }

  /**
   * A host that DNS cannot hold (over 253 characters, or a label over 63) is refused on its line,
   * as the line of a URL that cannot be fetched: a destination could not be named by it. The
   * longest host DNS holds is kept.
   */
  @Test
  void refusesTheLineOfAHostDnsCannotHoldAndKeepsTheLongestItCan() throws Exception {
    String longest =
        String.join(".", "a".repeat(63), "b".repeat(63), "c".repeat(63), "d".repeat(61));
    String longLabel = "x".repeat(64) + ".example";
    UrlList list =
        read(
            "http://"
                + longest
                + "/1\nhttp://"
                + longest
                + "e/2\nhttps://"
                + longLabel
                + ":8443/3\n");
    assertThat(list.urls()).containsExactly("http://" + longest + "/1");
    assertThat(list.hosts()).containsExactly(longest);
    assertThat(list.problems()).hasSize(2);
    assertThat(list.problems().get(0))
        .startsWith(
            "line 2: host is 254 characters long, more than"
                + " the 253 a DNS name may have: http://"
                + longest.substring(0, 20));
    assertThat(list.problems().get(1))
        .startsWith(
            "line 3: host label "
                + "x".repeat(64)
                + " is 64 characters long, more than the 63 a DNS label may have: https://xxx");
  }

  /** Reads as much of the input as it holds: a line of 'h's that ends only after 64 MiB. */
  private static final class EndlessLine extends InputStream {
    static final long LENGTH = 64L << 20;
    long read;

    @Override
    public int read() {
      return read++ < LENGTH ? 'h' : -1;
    }

    @Override
    public int read(byte[] b, int off, int len) {
      if (read >= LENGTH) {
        return -1;
      }
      int n = (int) Math.min(len, LENGTH - read);
      java.util.Arrays.fill(b, off, off + n, (byte) 'h');
      read += n;
      return n;
    }
  }

  @Test
  void refusesAnEndlessLineWithoutReadingItWhole() {
    EndlessLine in = new EndlessLine();
    assertThatThrownBy(() -> UrlList.read(in, "input urls.txt"))
        .isInstanceOf(BadInputException.class)
        .hasMessageContaining("urls.txt: line 1 is longer than " + UrlList.MAX_LINE_LENGTH);
    assertThat(in.read).as("bytes read before refusing").isLessThan(2L * UrlList.MAX_LINE_LENGTH);
  }

  @Test
  void refusesBinaryNonUtf8AndEmptyInput() {
    assertThatThrownBy(
            () -> UrlList.read(new ByteArrayInputStream(new byte[] {'h', 0, 'x'}), "in.bin"))
        .isInstanceOf(BadInputException.class)
        .hasMessageContaining("in.bin looks binary");
    assertThatThrownBy(
            () ->
                UrlList.read(
                    new ByteArrayInputStream(new byte[] {'h', (byte) 0xc3, (byte) 0x28}), "in.txt"))
        .isInstanceOf(BadInputException.class)
        .hasMessageContaining("in.txt is not UTF-8");
    assertThatThrownBy(() -> read("# only a comment\n\n"))
        .isInstanceOf(BadInputException.class)
        .hasMessageContaining("holds no usable URL");
    assertThatThrownBy(() -> read("file:///etc/passwd\n"))
        .isInstanceOf(BadInputException.class)
        .hasMessageContaining("line 1: scheme file");
  }
}
