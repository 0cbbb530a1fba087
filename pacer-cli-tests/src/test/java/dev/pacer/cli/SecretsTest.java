package dev.pacer.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.cli.model.Secrets;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A password given in {@code --db} or {@code PACER_DB} never appears in anything Pacer prints:
 * logs, errors, {@code status}, the JSON summary, nor the output of its worker processes. The
 * server here really checks passwords (scram-sha-256), so a wrong one is refused by PostgreSQL.
 */
class SecretsTest {

  private static final String USER = "pacer_secret_user";
  private static final String SECRET = "Pw-" + UUID.randomUUID().toString().substring(0, 12);
  private static final String WRONG = "Wrong-" + UUID.randomUUID().toString().substring(0, 12);
  private static EmbeddedPostgres postgres;

  @TempDir Path dir;

  @BeforeAll
  static void startAPasswordCheckingServer() throws IOException, SQLException {
    postgres =
        EmbeddedPostgres.builder()
            .setDataDirectoryCustomizer(
                data -> {
                  try {
                    Files.writeString(
                        data.toPath().resolve("pg_hba.conf"),
                        "host all "
                            + USER
                            + " 127.0.0.1/32 scram-sha-256\n"
                            + "host all all 127.0.0.1/32 trust\n"
                            + "local all all trust\n");
                  } catch (IOException e) {
                    throw new java.io.UncheckedIOException(e);
                  }
                })
            .start();
    try (Connection c = postgres.getPostgresDatabase().getConnection();
        Statement s = c.createStatement()) {
      s.execute("SET password_encryption = 'scram-sha-256'");
      s.execute("CREATE ROLE " + USER + " LOGIN PASSWORD '" + SECRET + "'");
      s.execute("GRANT CREATE ON SCHEMA public TO " + USER);
    }
  }

  @AfterAll
  static void stop() throws IOException {
    postgres.close();
  }

  private String url(String password) {
    return "jdbc:postgresql://127.0.0.1:"
        + postgres.getPort()
        + "/postgres?user="
        + USER
        + "&password="
        + password;
  }

  @Test
  void noPasswordInAnyOutput() throws Exception {
    List<Path> outputs = new ArrayList<>();
    try (TestDestination destination = new TestDestination()) {
      Path input = Files.write(dir.resolve("urls.txt"), destination.items(6));
      String job = "secrets-" + ProcessHandle.current().pid();
      String out = dir.resolve("out").toString();

      assertThat(
              run(
                  outputs,
                  Map.of(),
                  "fetch",
                  input.toString(),
                  "--job",
                  job,
                  "--destination",
                  job,
                  "--rate",
                  "50",
                  "--processes",
                  "2",
                  "--threads",
                  "2",
                  "--db",
                  url(SECRET),
                  "--out",
                  out,
                  "--max-load",
                  "1000"))
          .as("conveyor fetch with --db")
          .isZero();
      assertThat(
              run(
                  outputs,
                  Map.of("PACER_DB", url(SECRET)),
                  "fetch",
                  input.toString(),
                  "--job",
                  job + "-env",
                  "--destination",
                  job,
                  "--rate",
                  "50",
                  "--out",
                  out,
                  "--max-load",
                  "1000"))
          .as("pooled fetch with PACER_DB")
          .isZero();
      assertThat(run(outputs, Map.of(), "status", "--db", url(SECRET))).isZero();
      assertThat(run(outputs, Map.of("PACER_DB", url(SECRET)), "status", "--job", job)).isZero();
      assertThat(run(outputs, Map.of(), "trips", "--db", url(SECRET))).isZero();
      assertThat(run(outputs, Map.of(), "cursor", "clear", job, "--db", url(SECRET))).isZero();
      assertThat(
              run(
                  outputs,
                  Map.of(),
                  "fetch",
                  input.toString(),
                  "--job",
                  job + "-wrong",
                  "--db",
                  url(WRONG),
                  "--out",
                  out))
          .as("wrong password")
          .isEqualTo(2);
      assertThat(run(outputs, Map.of("PACER_DB", url(WRONG)), "status"))
          .as("wrong password")
          .isEqualTo(2);
      assertThat(
              run(
                  outputs,
                  Map.of(),
                  "fetch",
                  input.toString(),
                  "--job",
                  job + "-down",
                  "--db",
                  "jdbc:postgresql://127.0.0.1:1/postgres?user=" + USER + "&password=" + SECRET,
                  "--out",
                  out))
          .as("unreachable")
          .isEqualTo(2);
      assertThat(
              run(
                  outputs,
                  Map.of(),
                  "fetch",
                  input.toString(),
                  "--job",
                  job + "-nourl",
                  "--db",
                  "postgresql://" + USER + ":" + SECRET + "@127.0.0.1/postgres",
                  "--out",
                  out))
          .as("not a JDBC URL")
          .isEqualTo(2);
    }
    StringBuilder everything = new StringBuilder();
    for (Path p : outputs) {
      everything.append(Files.readString(p, StandardCharsets.UTF_8));
    }
    String all = everything.toString();
    assertThat(all).as("the runs said something").contains("\"job\"").contains("pacer");
    assertThat(all).doesNotContain(SECRET).doesNotContain(WRONG);
  }

  /**
   * A URL list line with credentials before its host is skipped, its report showing {@code ***} in
   * their place, and the work state keeps none of it.
   */
  @Test
  void urlCredentialsAreNeitherStoredNorPrinted() throws Exception {
    String password = "UrlPw-" + UUID.randomUUID().toString().substring(0, 12);
    String token = "UrlToken-" + UUID.randomUUID().toString().substring(0, 12);
    List<Path> outputs = new ArrayList<>();
    String job = "url-secrets-" + ProcessHandle.current().pid();
    try (TestDestination destination = new TestDestination()) {
      List<String> lines = new ArrayList<>(destination.items(3));
      String withPassword =
          destination.url("/private").replaceFirst("://", "://user:" + password + "@");
      lines.add(withPassword);
      lines.add(destination.url("/token").replaceFirst("://", "://" + token + "@"));
      Path input = Files.write(dir.resolve("urls.txt"), lines);
      assertThat(
              run(
                  outputs,
                  Map.of(),
                  "fetch",
                  input.toString(),
                  "--job",
                  job,
                  "--destination",
                  job,
                  "--rate",
                  "50",
                  "--db",
                  url(SECRET),
                  "--out",
                  dir.resolve("out").toString(),
                  "--max-load",
                  "1000",
                  "--no-progress"))
          .as("fetch")
          .isZero();
      assertThat(run(outputs, Map.of(), "status", "--job", job, "--db", url(SECRET))).isZero();
    }
    String fetchErr = Files.readString(outputs.get(1), StandardCharsets.UTF_8);
    assertThat(fetchErr)
        .contains("line 4: has credentials before the host")
        .contains("line 5: has credentials before the host")
        .contains("://***@127.0.0.1:");
    StringBuilder everything = new StringBuilder();
    for (Path p : outputs) {
      everything.append(Files.readString(p, StandardCharsets.UTF_8));
    }
    assertThat(everything.toString())
        .doesNotContain(password)
        .doesNotContain(token)
        .doesNotContain(SECRET);
    try (Connection c = postgres.getPostgresDatabase().getConnection();
        java.sql.PreparedStatement s =
            c.prepareStatement(
                "SELECT count(*), count(*) FILTER (WHERE url LIKE '%' || ? || '%' OR url LIKE '%'"
                    + " || ? || '%') FROM pacer_item WHERE job = ?")) {
      s.setString(1, password);
      s.setString(2, token);
      s.setString(3, job);
      try (java.sql.ResultSet r = s.executeQuery()) {
        r.next();
        assertThat(r.getLong(1)).as("the URLs without credentials are the job's").isEqualTo(3);
        assertThat(r.getLong(2)).as("no item holds credentials").isZero();
      }
    }
  }

  /**
   * Whatever the process prints passes through {@link Secrets#forTerminal}, the messages that quote
   * what the user gave included: here a URL with credentials given as a destination's name.
   */
  @Test
  void aMessageQuotingAUrlWithCredentialsShowsNoneOfThem() throws Exception {
    String password = "UrlPw-" + UUID.randomUUID().toString().substring(0, 12);
    List<Path> outputs = new ArrayList<>();
    assertThat(
            run(
                outputs,
                Map.of(),
                "cursor",
                "clear",
                "https://user:" + password + "@example.test/",
                "--db",
                url(SECRET)))
        .as("not a destination's name")
        .isEqualTo(2);
    String err = Files.readString(outputs.get(1), StandardCharsets.UTF_8);
    assertThat(err)
        .as("the refusal quotes the name, redacted")
        .contains("\"https://***@example.test/\"")
        .doesNotContain(password);
  }

  /**
   * What the process prints goes through {@link Secrets#forTerminal}, line by line: a line ends at
   * a line feed, at a carriage return (a progress bar's redraw) or where the writer flushes.
   */
  @Test
  void theProcessOutputIsRedactedLineByLine() {
    java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
    java.io.PrintStream out =
        Secrets.forTerminal(new java.io.PrintStream(bytes, true, StandardCharsets.UTF_8));
    out.println("GET https://user:" + SECRET + "@a.example/x → 404");
    out.print("\rprogress http://" + SECRET + "@b.example/ é");
    out.flush();
    out.print("\rand postgresql://u:p@" + SECRET + "@db/app");
    out.println();
    assertThat(bytes.toString(StandardCharsets.UTF_8))
        .isEqualTo(
            "GET https://***@a.example/x → 404"
                + System.lineSeparator()
                + "\rprogress http://***@b.example/ é"
                + "\rand postgresql://u:***@db/app"
                + System.lineSeparator());
  }

  @Test
  void everySecretBearingParameterIsRedacted() {
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
    assertThat(Secrets.redact("cannot use " + url + ": refused"))
        .doesNotContain(SECRET)
        .contains("password=***")
        .contains("sslpassword=***")
        .contains("sslkey=***")
        .contains("sslfactoryarg=***")
        .contains("PassWord=***")
        .contains("ApplicationName=pacer");
    assertThat(Secrets.redact("postgresql://u:" + SECRET + "@db/app"))
        .isEqualTo("postgresql://u:***@db/app");
    assertThat(Secrets.redact("host=db password=" + SECRET + " sslpassword=" + SECRET + " user=u"))
        .isEqualTo("host=db password=*** sslpassword=*** user=u");
  }

  @Test
  void theUrlCanComeFromAFileAndTheHelpSaysSo() throws Exception {
    Path file = dir.resolve("db-url");
    Files.writeString(file, url(SECRET) + "\n");
    List<Path> outputs = new ArrayList<>();
    assertThat(run(outputs, Map.of(), "status", "--db-file", file.toString())).isZero();
    String out = Files.readString(outputs.get(0));
    assertThat(out)
        .contains("Database: jdbc:postgresql://")
        .contains("password=***")
        .doesNotContain(SECRET);
    Cli.Result help = Cli.run("fetch", "--help");
    assertThat(help.out())
        .contains("--db=JDBC_URL")
        .contains("ps")
        .contains("$PACER_DB")
        .contains("--db-file=PATH");
  }

  private int run(List<Path> outputs, Map<String, String> env, String... args) throws Exception {
    Path stdout = dir.resolve("stdout-" + outputs.size());
    Path stderr = dir.resolve("stderr-" + outputs.size());
    outputs.add(stdout);
    outputs.add(stderr);
    Process p = Cli.spawn(env, stdout, stderr, args);
    assertThat(p.waitFor(120, TimeUnit.SECONDS)).as("pacer %s finished", args[0]).isTrue();
    return p.exitValue();
  }
}
