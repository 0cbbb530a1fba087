package dev.pacer.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pacer.postgres.TestDatabase;
import java.io.IOException;
import java.net.URI;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.netpreserve.jwarc.MessageVersion;
import org.netpreserve.jwarc.WarcReader;
import org.netpreserve.jwarc.WarcRecord;
import org.netpreserve.jwarc.WarcRequest;
import org.netpreserve.jwarc.WarcResponse;

/**
 * {@code pacer fetch --warc PREFIX}: read back with jwarc, the segments hold one response and one
 * request record per fetch, WARC/1.1, and every done item's body, whole, at the location its record
 * names; segments rotate at their size; and after an unclean stop the records a damaged segment
 * lost are fetched again, the others not.
 */
class WarcOutputTest {

  private static final AtomicInteger UNIQUE = new AtomicInteger();
  private static final int ITEMS = 30;

  @TempDir Path dir;
  private TestDestination destination;
  private String name;

  @BeforeEach
  void start() throws IOException {
    destination = new TestDestination();
    name = "warc-test-" + ProcessHandle.current().pid() + "-" + UNIQUE.incrementAndGet();
  }

  @AfterEach
  void stop() {
    destination.close();
  }

  @Test
  void theSegmentsHoldEveryDoneItemsBodyWholeAndRotateAtTheirSize() throws Exception {
    Path input = Files.write(dir.resolve("urls.txt"), destination.items(ITEMS));
    Cli.Result run = fetch(input, "--warc-segment-bytes", "4096");
    assertThat(run.code()).as(run.err()).isZero();
    assertThat(run.number("done")).isEqualTo(ITEMS);

    List<Path> segments = segments();
    assertThat(segments).hasSizeGreaterThan(1);
    Map<String, String> responses = new HashMap<>();
    int requests = 0;
    for (Path segment : segments) {
      try (WarcReader reader = new WarcReader(segment)) {
        for (WarcRecord record : reader) {
          assertThat(record.version()).isEqualTo(MessageVersion.WARC_1_1);
          if (record instanceof WarcResponse response) {
            assertThat(response.http().status()).isEqualTo(200);
            String body =
                new String(response.http().body().stream().readAllBytes(), StandardCharsets.UTF_8);
            assertThat(responses.put(response.target(), body)).isNull();
          } else if (record instanceof WarcRequest request) {
            assertThat(request.http().method()).isEqualTo("GET");
            requests++;
          }
        }
      }
      assertThat(Files.size(segment)).isLessThan(4096 + 2048);
    }
    assertThat(requests).isEqualTo(ITEMS);
    Map<String, String> located = doneItemsBodies();
    assertThat(located).hasSize(ITEMS);
    for (String url : destination.items(ITEMS)) {
      String expected = "body of " + URI.create(url).getPath();
      assertThat(responses.get(url)).as(url).isEqualTo(expected);
      assertThat(located.get(url)).as(url).isEqualTo(expected);
    }
  }

  @Test
  void recordsLostFromASegmentBeforeItsDurablePointAreFetchedAgain() throws Exception {
    Path input = Files.write(dir.resolve("urls.txt"), destination.items(ITEMS));
    assertThat(fetch(input).code()).isZero();
    assertThat(segments()).hasSize(1);
    Path segment = segments().get(0);
    // An unclean stop: no durable point seen, and the segment's tail lost.
    try (Connection c = TestDatabase.connect();
        PreparedStatement s =
            c.prepareStatement(
                "UPDATE pacer_item SET durable = false, finished_at = now() - interval '1 hour'"
                    + " WHERE job = ?")) {
      s.setString(1, name);
      assertThat(s.executeUpdate()).isEqualTo(ITEMS);
    }
    long half = Files.size(segment) / 2;
    List<Long> starts = new ArrayList<>();
    try (WarcReader reader = new WarcReader(FileChannel.open(segment))) {
      for (Optional<WarcRecord> r = reader.next(); r.isPresent(); r = reader.next()) {
        starts.add(reader.position());
      }
    }
    starts.add(Files.size(segment));
    try (FileChannel c = FileChannel.open(segment, java.nio.file.StandardOpenOption.WRITE)) {
      c.truncate(half);
    }
    // A response record is lost if it ends (where the next record starts) past the cut.
    List<String> lost = new ArrayList<>();
    try (Connection c = TestDatabase.connect();
        PreparedStatement s =
            c.prepareStatement("SELECT url, body_path FROM pacer_item WHERE job = ?")) {
      s.setString(1, name);
      try (ResultSet r = s.executeQuery()) {
        while (r.next()) {
          String location = r.getString(2);
          long offset = Long.parseLong(location.substring(location.lastIndexOf('#') + 1));
          long end = starts.get(starts.indexOf(offset) + 1);
          if (end > half) {
            lost.add(URI.create(r.getString(1)).getPath());
          }
        }
      }
    }

    Cli.Result second = fetch(input);
    assertThat(second.code()).as(second.err()).isZero();
    assertThat(second.number("done")).isEqualTo(ITEMS);
    List<String> again = new ArrayList<>();
    destination
        .arrivals()
        .subList(ITEMS, destination.arrivals().size())
        .forEach(a -> again.add(a.path()));
    assertThat(lost).isNotEmpty().hasSizeLessThan(ITEMS);
    assertThat(again).containsExactlyInAnyOrderElementsOf(lost);
    assertThat(second.err())
        .contains((ITEMS - lost.size()) + " body(ies) whole, kept; " + lost.size() + " missing");
    assertThat(doneItemsBodies()).hasSize(ITEMS);
  }

  @Test
  void aBadSegmentSizeOrADirectoryAsPrefixIsRefusedNamingTheValue() throws Exception {
    Path input = Files.write(dir.resolve("urls.txt"), destination.items(1));
    Cli.Result zero = fetch(input, "--warc-segment-bytes", "0");
    assertThat(zero.code()).isEqualTo(2);
    assertThat(zero.err()).contains("--warc-segment-bytes must be > 0, got 0");
    Cli.Result directory =
        Cli.run(
            "fetch",
            input.toString(),
            "--job",
            name,
            "--db",
            TestDatabase.jdbcUrl(),
            "--warc",
            dir.toString());
    assertThat(directory.code()).isEqualTo(2);
    assertThat(directory.err()).contains("--warc takes a prefix", dir.toString());
    assertThat(destination.arrivals()).isEmpty();
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
                "--warc",
                dir.resolve("warc").resolve("crawl").toString(),
                "--rate",
                "50",
                "--concurrency",
                "4",
                "--max-load",
                "1000"));
    args.addAll(List.of(extra));
    return Cli.run(args.toArray(String[]::new));
  }

  private List<Path> segments() throws IOException {
    try (Stream<Path> files = Files.list(dir.resolve("warc"))) {
      return files.filter(f -> f.toString().endsWith(".warc.gz")).sorted().toList();
    }
  }

  /**
   * The body of every done and durable item, read from the response record at the location its row
   * names, whose payload digest is the row's SHA-256, by URL.
   */
  private Map<String, String> doneItemsBodies() throws Exception {
    Map<String, String> bodies = new HashMap<>();
    try (Connection c = TestDatabase.connect();
        PreparedStatement s =
            c.prepareStatement(
                "SELECT url, body_path, sha256 FROM pacer_item"
                    + " WHERE job = ? AND state = 'done' AND durable")) {
      s.setString(1, name);
      try (ResultSet r = s.executeQuery()) {
        while (r.next()) {
          String location = r.getString(2);
          int hash = location.lastIndexOf('#');
          try (WarcReader reader =
              new WarcReader(FileChannel.open(Path.of(location.substring(0, hash))))) {
            reader.position(Long.parseLong(location.substring(hash + 1)));
            Optional<WarcRecord> record = reader.next();
            assertThat(record).get().isInstanceOf(WarcResponse.class);
            WarcResponse response = (WarcResponse) record.get();
            assertThat(response.target()).isEqualTo(r.getString(1));
            assertThat(response.payloadDigest())
                .get()
                .extracting(d -> d.hex())
                .isEqualTo(r.getString(3));
            bodies.put(
                r.getString(1),
                new String(response.http().body().stream().readAllBytes(), StandardCharsets.UTF_8));
          }
        }
      }
    }
    return bodies;
  }
}
