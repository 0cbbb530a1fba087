package dev.pacer.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.postgres.TestDatabase;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The bad-input matrix: each bad value gets a message that names it, exit code 2, and nothing
 * written (no job in PostgreSQL, no output directory).
 */
class BadInputTest {

  private static final AtomicInteger UNIQUE = new AtomicInteger();

  @TempDir Path dir;

  private String job() {
    return "bad-input-" + ProcessHandle.current().pid() + "-" + UNIQUE.incrementAndGet();
  }

  private Path goodInput() throws IOException {
    return Files.writeString(dir.resolve("good.txt"), "http://127.0.0.1:9/item/1\n");
  }

  /** Runs {@code pacer fetch INPUT --job JOB --out DIR ...} and checks the common expectations. */
  private Cli.Result refused(Path input, String job, String... extra) throws SQLException {
    List<String> args =
        new ArrayList<>(
            List.of(
                "fetch", input.toString(), "--job", job, "--out", dir.resolve("out").toString()));
    if (!List.of(extra).contains("--db")) {
      args.addAll(List.of("--db", TestDatabase.jdbcUrl()));
    }
    args.addAll(List.of(extra));
    Cli.Result result = Cli.run(args.toArray(String[]::new));
    assertThat(result.code()).as("exit code; stderr: %s", result.err()).isEqualTo(2);
    assertThat(result.err()).startsWith("pacer: ");
    assertThat(dir.resolve("out")).as("nothing written to --out").doesNotExist();
    assertThat(jobExists(job)).as("no job recorded").isFalse();
    return result;
  }

  @ParameterizedTest
  @CsvSource({
    "0, 0.0",
    "-1, -1.0",
    "NaN, NaN",
    "Infinity, Infinity",
    "1e12, 1.0E12",
    "-Infinity, -Infinity"
  })
  void badRates(String rate, String shown) throws Exception {
    Cli.Result r = refused(goodInput(), job(), "--rate", rate);
    assertThat(r.err()).contains("--rate").contains(shown);
  }

  @Test
  void zeroConcurrency() throws Exception {
    Cli.Result r = refused(goodInput(), job(), "--concurrency", "0");
    assertThat(r.err()).contains("--concurrency").contains("0");
  }

  @ParameterizedTest
  @CsvSource({"0", "-3"})
  void aDegradeDivisorBelowOne(String divisor) throws Exception {
    Cli.Result r = refused(goodInput(), job(), "--degrade-divisor", divisor);
    assertThat(r.err()).contains("--degrade-divisor must be >= 1, got " + divisor);
  }

  static Stream<Arguments> badDestinationNames() {
    String tooLong = "a".repeat(254);
    return Stream.of(
        Arguments.of("", "destination name"),
        Arguments.of(tooLong, "1-253 characters, got 254 characters"),
        Arguments.of("has space", "has space"),
        Arguments.of("quote\"d", "quote"),
        Arguments.of("single'quote", "single'quote"),
        Arguments.of("'; DROP TABLE x; --", "DROP TABLE x"));
  }

  @ParameterizedTest
  @MethodSource
  void badDestinationNames(String name, String shown) throws Exception {
    Cli.Result r = refused(goodInput(), job(), "--destination", name);
    assertThat(r.err()).contains("destination").contains(shown);
  }

  /**
   * A Django cache key is at most 255 characters, the prefix's and the name's together: a name that
   * does not fit beside the prefix is refused, naming both, before anything is written.
   */
  @Test
  void aDestinationNameThatDoesNotFitADjangoCacheKeyBesideItsPrefix() throws Exception {
    String name = "n".repeat(236);
    Cli.Result r =
        refused(goodInput(), job(), "--destination", name, "--cursor-layout", "django-cache");
    assertThat(r.err())
        .contains(
            "destination name",
            name.substring(0, 40),
            "236 characters",
            "--cursor-key-prefix \"harvest-rate-cursor:\"",
            "256 characters",
            "at most 255");
  }

  @Test
  void aDestinationNameWithAControlCharacterIsNamedEscaped() throws Exception {
    Cli.Result r = refused(goodInput(), job(), "--destination", "bell\u0007name");
    assertThat(r.err())
        .contains("destination")
        .contains("bell\\u0007name")
        .doesNotContain("\u0007");
  }

  @Test
  void aDatabaseThatIsNotAJdbcUrl() throws Exception {
    Cli.Result r = refused(goodInput(), job(), "--db", "postgres://user:pw@localhost/db");
    assertThat(r.err()).contains("JDBC URL");
  }

  @Test
  void anUnreachableDatabase() throws Exception {
    Cli.Result r =
        refused(goodInput(), job(), "--db", "jdbc:postgresql://127.0.0.1:1/postgres?user=postgres");
    assertThat(r.err()).contains("127.0.0.1:1");
  }

  @Test
  void aMissingInputFile() throws Exception {
    Path missing = dir.resolve("no-such-file.txt");
    Cli.Result r = refused(missing, job());
    assertThat(r.err()).contains(missing.toString());
  }

  @Test
  void anUnreadableInput() throws Exception {
    // Root reads any file whatever its mode, so a directory stands in for an unreadable file.
    Path directory = Files.createDirectory(dir.resolve("a-directory"));
    Cli.Result r = refused(directory, job());
    assertThat(r.err()).contains(directory.toString());
    if (!"root".equals(System.getProperty("user.name"))) {
      Path locked = Files.writeString(dir.resolve("locked.txt"), "http://127.0.0.1:9/x\n");
      assertThat(locked.toFile().setReadable(false, false)).isTrue();
      assertThat(refused(locked, job()).err()).contains(locked.toString());
    }
  }

  @Test
  void aBinaryInput() throws Exception {
    Path binary =
        Files.write(dir.resolve("binary.bin"), new byte[] {0x7f, 'E', 'L', 'F', 2, 1, 1, 0, 0, 0});
    Cli.Result r = refused(binary, job());
    assertThat(r.err()).contains(binary.toString()).contains("binary");
  }

  @Test
  void anEmptyInput() throws Exception {
    Path empty = Files.writeString(dir.resolve("empty.txt"), "");
    Cli.Result r = refused(empty, job());
    assertThat(r.err()).contains(empty.toString());
  }

  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      value = {
        "file:///etc/passwd|file:///etc/passwd",
        "ftp://example.com/file.txt|ftp://example.com/file.txt",
        "http://|http://",
        "http:///no-host|http:///no-host"
      })
  void urlsThatAreNotFetchable(String url, String shown) throws Exception {
    Path input = Files.writeString(dir.resolve("urls.txt"), url + "\n");
    Cli.Result r = refused(input, job());
    assertThat(r.err()).contains("line 1").contains(shown);
  }

  @Test
  void aTenMegabyteLine() throws Exception {
    String huge = "http://example.com/" + "a".repeat(10 * 1024 * 1024);
    Path input = Files.writeString(dir.resolve("huge.txt"), huge + "\n", StandardCharsets.UTF_8);
    Cli.Result r = refused(input, job());
    assertThat(r.err()).contains("line 1").contains("http://example.com/aaaa");
    assertThat(r.err().length()).as("the line is named, not echoed whole").isLessThan(10_000);
  }

  private static boolean jobExists(String job) throws SQLException {
    try (Connection c = TestDatabase.connect();
        PreparedStatement s =
            c.prepareStatement(
                "SELECT to_regclass('pacer_job') IS NOT NULL"
                    + " AND EXISTS (SELECT 1 FROM pg_class WHERE relname = 'pacer_job')")) {
      try (ResultSet r = s.executeQuery()) {
        r.next();
        if (!r.getBoolean(1)) {
          return false;
        }
      }
    }
    try (Connection c = TestDatabase.connect();
        PreparedStatement s = c.prepareStatement("SELECT count(*) FROM pacer_job WHERE name = ?")) {
      s.setString(1, job);
      try (ResultSet r = s.executeQuery()) {
        r.next();
        return r.getLong(1) > 0;
      }
    }
  }

  @Test
  void aMissingOrEmptyDbFileIsNamed() throws Exception {
    Path missing = dir.resolve("no-such-db-url");
    Cli.Result r = Cli.run("status", "--db-file", missing.toString());
    assertThat(r.code()).as(r.err()).isEqualTo(2);
    assertThat(r.err()).startsWith("pacer: ").contains("--db-file").contains(missing.toString());
    Path empty = Files.writeString(dir.resolve("empty-db-url"), "\n");
    r = Cli.run("status", "--db-file", empty.toString());
    assertThat(r.code()).isEqualTo(2);
    assertThat(r.err()).contains(empty.toString()).contains("empty");
  }

  @Test
  void dbAndDbFileTogetherAreRefused() throws Exception {
    Path file = Files.writeString(dir.resolve("db-url"), TestDatabase.jdbcUrl() + "\n");
    Cli.Result r = Cli.run("status", "--db", TestDatabase.jdbcUrl(), "--db-file", file.toString());
    assertThat(r.code()).isEqualTo(2);
    assertThat(r.err()).contains("--db and --db-file");
  }

  static Stream<Arguments> badRates() {
    return Stream.of(
        Arguments.of(
            "img.example.com 10 4\nbad line here now\n",
            " line 2: expected 'host rate [concurrency]', got \"bad line here now\""),
        Arguments.of(
            "img.example.com fast\n",
            " line 1: rate must be a number > 0 and <= 1000000, got \"fast\""),
        Arguments.of(
            "img.example.com 0\n", " line 1: rate must be a number > 0 and <= 1000000, got \"0\""),
        Arguments.of(
            "img.example.com 5 0\n",
            " line 1: concurrency must be a whole number 1-10000, got \"0\""),
        Arguments.of(
            "img.example.com 5 2.5\n",
            " line 1: concurrency must be a whole number 1-10000, got \"2.5\""),
        Arguments.of(
            "# c\n\nimg.example.com 5\nIMG.example.com 6\n",
            " line 4: host img.example.com is already on line 3"),
        Arguments.of(
            "img'x 5\n",
            " line 1: host name may hold only letters, digits and . _ : - [ ], got \"img'x\""));
  }

  /** Per-host mode: a bad --rates line is named with its number and value. */
  @ParameterizedTest
  @MethodSource("badRates")
  void aBadRatesLineIsNamed(String file, String message) throws Exception {
    Path rates = Files.writeString(dir.resolve("rates.txt"), file);
    Cli.Result result = refused(goodInput(), job(), "--per-host", "--rates", rates.toString());
    assertThat(result.err()).contains("--rates " + rates + message);
  }

  @Test
  void perHostConflictsAreRefused() throws Exception {
    Path rates = Files.writeString(dir.resolve("rates.txt"), "127.0.0.1 5\n");
    assertThat(refused(goodInput(), job(), "--per-host", "--destination", "x").err())
        .contains(
            "--destination puts every URL under one ceiling and --per-host gives each host"
                + " its own; choose one");
    assertThat(refused(goodInput(), job(), "--rates", rates.toString()).err())
        .contains("--rates sets per-host ceilings; it needs --per-host");
    assertThat(refused(goodInput(), job(), "--per-host", "--fleet-concurrency", "2").err())
        .contains("--fleet-concurrency caps one destination");
    assertThat(
            refused(
                    goodInput(),
                    job(),
                    "--per-host",
                    "--rates",
                    dir.resolve("missing.txt").toString())
                .err())
        .contains("missing.txt: no such file");
    assertThat(refused(goodInput(), job(), "--per-host", "--cursor-layout", "django-cache").err())
        .contains(
            "--per-host claims each host's turn on Pacer's cursor table; it cannot use"
                + " --cursor-layout django-cache");
  }

  @Test
  void robotsConflictsAndBadCrawlDelayCapsAreRefused() throws Exception {
    assertThat(refused(goodInput(), job(), "--robots").err())
        .contains("--robots reads each host's robots.txt; it needs --per-host");
    assertThat(refused(goodInput(), job(), "--per-host", "--robots", "--claim-order", "FIFO").err())
        .contains(
            "--robots needs the frontier's claims; it cannot be combined with"
                + " --claim-order FIFO");
    for (String bad : new String[] {"-1", "NaN", "86401"}) {
      assertThat(
              refused(goodInput(), job(), "--per-host", "--robots", "--max-crawl-delay", bad).err())
          .contains("--max-crawl-delay must be 0-86400 seconds, got " + Double.parseDouble(bad));
    }
  }
}
