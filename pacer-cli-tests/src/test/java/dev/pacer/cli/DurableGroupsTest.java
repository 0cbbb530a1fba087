package dev.pacer.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.cli.db.UrlKeys;
import dev.pacer.postgres.TestDatabase;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Bodies made durable in groups ({@code pacer fetch}'s default): every item recorded done ends the
 * run marked durable, with its body's size and SHA-256; and after an unclean stop, which leaves
 * items done but not marked durable, the next run checks those bodies against their records and
 * fetches again exactly the ones missing or damaged, never a whole one.
 */
class DurableGroupsTest {

  private static final AtomicInteger UNIQUE = new AtomicInteger();
  private static final int ITEMS = 20;

  @TempDir Path dir;
  private TestDestination destination;
  private String name;

  @BeforeEach
  void start() throws IOException {
    destination = new TestDestination();
    name = "durable-test-" + ProcessHandle.current().pid() + "-" + UNIQUE.incrementAndGet();
  }

  @AfterEach
  void stop() {
    destination.close();
  }

  @Test
  void bodiesLostBeforeTheirDurablePointAreFetchedAgainAndWholeOnesAreNot() throws Exception {
    Path input = Files.write(dir.resolve("urls.txt"), destination.items(ITEMS));
    Cli.Result first = fetch(input);
    assertThat(first.code()).as(first.err()).isZero();
    assertThat(first.number("done")).isEqualTo(ITEMS);
    assertThat(destination.arrivals()).hasSize(ITEMS);
    assertRecordsMatchTheBodies();

    // An unclean stop: the records made, the last durable points never seen.
    leaveEveryItemNotDurable();
    Files.write(body(3), new byte[] {'b', 'o'}); // truncated
    Files.delete(body(7)); // deleted
    byte[] whole = Files.readAllBytes(body(11));
    whole[whole.length - 1] ^= 1; // same size, damaged
    Files.write(body(11), whole);

    Cli.Result second = fetch(input);
    assertThat(second.code()).as(second.err()).isZero();
    assertThat(second.err())
        .contains(ITEMS + " item(s) done but not yet durable")
        .contains((ITEMS - 3) + " body(ies) whole, kept; 3 missing or damaged");
    assertThat(second.number("done")).isEqualTo(ITEMS);
    List<String> again = new ArrayList<>();
    destination
        .arrivals()
        .subList(ITEMS, destination.arrivals().size())
        .forEach(a -> again.add(a.path()));
    assertThat(again).containsExactlyInAnyOrder("/item/3", "/item/7", "/item/11");
    assertRecordsMatchTheBodies();
  }

  @Test
  void itemsDoneByARunThatMayStillBeAliveAreNotVerified() throws Exception {
    Path input = Files.write(dir.resolve("urls.txt"), destination.items(ITEMS));
    assertThat(fetch(input).code()).isZero();
    // Recorded a moment ago, under a lease of 60 s: maybe a live worker's, on another machine.
    try (Connection c = TestDatabase.connect();
        PreparedStatement s =
            c.prepareStatement("UPDATE pacer_item SET durable = false WHERE job = ?")) {
      s.setString(1, name);
      s.executeUpdate();
    }
    Files.delete(body(5));

    Cli.Result second = fetch(input);
    assertThat(second.code()).as(second.err()).isZero();
    assertThat(second.err()).doesNotContain("not yet durable");
    assertThat(destination.arrivals()).hasSize(ITEMS);
  }

  @Test
  void fsyncEachRecordsEveryItemDurableWithItsDigest() throws Exception {
    Path input = Files.write(dir.resolve("urls.txt"), destination.items(ITEMS));
    Cli.Result run = fetch(input, "--fsync-each");
    assertThat(run.code()).as(run.err()).isZero();
    assertThat(run.number("done")).isEqualTo(ITEMS);
    assertRecordsMatchTheBodies();
  }

  private Cli.Result fetch(Path input, String... extra) {
    List<String> args =
        new ArrayList<>(
            List.of(
                "fetch",
                input.toString(),
                "--job",
                name,
                "--destination",
                name,
                "--db",
                TestDatabase.jdbcUrl(),
                "--out",
                dir.resolve("out").toString(),
                "--rate",
                "50",
                "--concurrency",
                "4",
                "--max-load",
                "1000"));
    args.addAll(List.of(extra));
    return Cli.run(args.toArray(String[]::new));
  }

  private Path body(int item) {
    String key = UrlKeys.key(destination.url("/item/" + item));
    return dir.resolve("out").resolve(name).resolve(key.substring(0, 2)).resolve(key);
  }

  /** Every item is done and durable, its recorded size and SHA-256 those of its body file. */
  private void assertRecordsMatchTheBodies() throws Exception {
    Set<String> checked = new TreeSet<>();
    try (Connection c = TestDatabase.connect();
        PreparedStatement s =
            c.prepareStatement(
                "SELECT url, state, durable, body_path, bytes, sha256 FROM pacer_item"
                    + " WHERE job = ?")) {
      s.setString(1, name);
      try (ResultSet r = s.executeQuery()) {
        while (r.next()) {
          String url = r.getString(1);
          String expected = "body of " + url.substring(url.indexOf("/item/"));
          byte[] content = expected.getBytes(StandardCharsets.UTF_8);
          assertThat(r.getString(2)).as(url).isEqualTo("done");
          assertThat(r.getBoolean(3)).as(url).isTrue();
          assertThat(Path.of(r.getString(4))).as(url).hasContent(expected);
          assertThat(r.getLong(5)).as(url).isEqualTo(content.length);
          assertThat(r.getString(6)).as(url).isEqualTo(sha256(content));
          checked.add(url);
        }
      }
    }
    assertThat(checked).hasSize(ITEMS);
  }

  private void leaveEveryItemNotDurable() throws SQLException {
    try (Connection c = TestDatabase.connect();
        PreparedStatement s =
            c.prepareStatement(
                "UPDATE pacer_item SET durable = false, finished_at = now() - interval '1 hour'"
                    + " WHERE job = ?")) {
      s.setString(1, name);
      assertThat(s.executeUpdate()).isEqualTo(ITEMS);
    }
  }

  private static String sha256(byte[] content) throws Exception {
    return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(content));
  }
}
