package dev.pacer.cli.run;

import dev.pacer.ThrottledException;
import dev.pacer.cli.db.ItemStore;
import dev.pacer.jdkhttp.fetch.DestinationFetcher;
import dev.pacer.jdkhttp.fetch.FetchFailedException;
import dev.pacer.jdkhttp.fetch.FetchResponse;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.Collection;
import java.util.Locale;
import java.util.Optional;
import org.netpreserve.jwarc.HttpRequest;
import org.netpreserve.jwarc.HttpResponse;
import org.netpreserve.jwarc.MessageVersion;
import org.netpreserve.jwarc.WarcCompression;
import org.netpreserve.jwarc.WarcReader;
import org.netpreserve.jwarc.WarcRecord;
import org.netpreserve.jwarc.WarcRequest;
import org.netpreserve.jwarc.WarcResponse;
import org.netpreserve.jwarc.WarcWriter;

/**
 * Bodies written as WARC/1.1 ({@code --warc PREFIX}), with jwarc: one response record and one
 * request record per fetch, each record its own gzip member (so a reader can start at any record's
 * offset), appended to this worker's current segment, which is closed and forced once it holds
 * {@link WarcOutput#segmentBytes()} and a new one begun. An item's recorded location is {@code
 * SEGMENT#OFFSET}, the offset of its response record.
 *
 * <p>A body streams first into a {@code .part} file beside the segments (never whole in memory), is
 * hashed, and is copied into the segment under a lock, since records of one segment cannot
 * interleave. The durable point forces the open segment once for every record appended since the
 * last (a closed segment was forced as it closed); with {@code --fsync-each} the segment is forced
 * after every append.
 *
 * <p>The fetcher hands over the status and the body, not the response's headers: the response
 * record holds the status line and a {@code Content-Length}, and its payload digest is the body's
 * SHA-256 ({@code WARC-Payload-Digest: sha256:BASE32}, as jwarc writes a digest). The request
 * record holds the GET as sent, with its {@code Host} and {@code User-Agent}.
 */
final class WarcBodies implements Bodies {

  private static final DateTimeFormatter STAMP =
      DateTimeFormatter.ofPattern("yyyyMMddHHmmss", Locale.ROOT).withZone(ZoneOffset.UTC);

  private final WarcOutput output;
  private final boolean fsyncEach;
  private final Path directory;
  private final String name;
  private final long pid = ProcessHandle.current().pid();

  private int serial;
  private Path segment;
  private FileChannel channel;
  private WarcWriter writer;

  /** Whether {@link #newPart} has made the directory of the part files. */
  private volatile boolean directoryMade;

  /** A segment begun since the last point: its directory entry is forced at the next one. */
  private boolean segmentBegun;

  WarcBodies(WarcOutput output, boolean fsyncEach) {
    this.output = output;
    this.fsyncEach = fsyncEach;
    Path prefix = output.prefix().toAbsolutePath().normalize();
    this.directory = prefix.getParent();
    this.name = prefix.getFileName().toString();
  }

  @Override
  public boolean forcesEach() {
    return fsyncEach;
  }

  /**
   * The part files' directory is made once per run: {@link Files#createDirectories} costs an
   * exception when the directory is there already.
   */
  @Override
  public Path newPart(ItemStore.Item item) throws IOException {
    if (!directoryMade) {
      Files.createDirectories(directory);
      directoryMade = true;
    }
    return directory.resolve("." + name + "-" + item.token() + ".part");
  }

  /** The part is a staging file, read into the segment: the segment is what is forced. */
  @Override
  public FetchResponse fetch(DestinationFetcher fetcher, URI uri, Path part)
      throws InterruptedException, ThrottledException, FetchFailedException {
    return fetcher.fetchToUnforced(uri, part);
  }

  @Override
  public Stored commit(ItemStore.Item item, Path part, FetchResponse response) throws IOException {
    try {
      BodyDigest digest = BodyStore.digest(part);
      return append(response, part, digest.size(), digest.sha256());
    } finally {
      discard(part);
    }
  }

  private synchronized Stored append(FetchResponse response, Path part, long bytes, String sha256)
      throws IOException {
    if (writer == null) {
      begin();
    }
    URI uri = response.uri();
    Instant now = Instant.now();
    long offset = writer.position();
    try (FileChannel body = FileChannel.open(part, StandardOpenOption.READ)) {
      HttpResponse http =
          new HttpResponse.Builder(response.status(), reason(response.status()))
              .version(MessageVersion.HTTP_1_1)
              .body(null, body, bytes)
              .build();
      WarcResponse record =
          new WarcResponse.Builder(uri)
              .version(MessageVersion.WARC_1_1)
              .date(now)
              .payloadDigest("sha256", sha256)
              .body(http)
              .build();
      writer.write(record);
      HttpRequest get =
          new HttpRequest.Builder("GET", target(uri))
              .version(MessageVersion.HTTP_1_1)
              .addHeader("Host", uri.getRawAuthority())
              .addHeader("User-Agent", RunSettings.USER_AGENT)
              .build();
      writer.write(
          new WarcRequest.Builder(uri)
              .version(MessageVersion.WARC_1_1)
              .date(now)
              .concurrentTo(record.id())
              .body(get)
              .build());
    }
    Stored stored = new Stored(segment + "#" + offset, bytes, sha256);
    if (fsyncEach) {
      channel.force(true);
      forceDirectoryOfNewSegment();
    }
    if (writer.position() >= output.segmentBytes()) {
      end();
    }
    return stored;
  }

  /**
   * The reason phrase of a 2xx status, the only kind stored: the fetcher does not hand over the one
   * the server sent.
   */
  private static String reason(int status) {
    return switch (status) {
      case 200 -> "OK";
      case 201 -> "Created";
      case 202 -> "Accepted";
      case 203 -> "Non-Authoritative Information";
      case 204 -> "No Content";
      case 205 -> "Reset Content";
      case 206 -> "Partial Content";
      default -> "";
    };
  }

  /** The request target of a GET for {@code uri}: its path and query, as sent. */
  private static String target(URI uri) {
    String path = uri.getRawPath() == null || uri.getRawPath().isEmpty() ? "/" : uri.getRawPath();
    return uri.getRawQuery() == null ? path : path + "?" + uri.getRawQuery();
  }

  private void begin() throws IOException {
    Files.createDirectories(directory);
    serial++;
    segment =
        directory.resolve(
            String.format(
                Locale.ROOT,
                "%s-%s-%d-%05d.warc.gz",
                name,
                STAMP.format(Instant.now()),
                pid,
                serial));
    channel = FileChannel.open(segment, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE);
    writer = new WarcWriter(channel, WarcCompression.GZIP);
    segmentBegun = true;
  }

  /** Forces and closes the current segment: every record in it is then durable. */
  private void end() throws IOException {
    channel.force(true);
    forceDirectoryOfNewSegment();
    writer.close();
    writer = null;
    channel = null;
  }

  private void forceDirectoryOfNewSegment() throws IOException {
    if (segmentBegun) {
      try (FileChannel d = FileChannel.open(directory, StandardOpenOption.READ)) {
        d.force(true);
      }
      segmentBegun = false;
    }
  }

  @Override
  public synchronized void makeDurable(Collection<String> locations) throws IOException {
    if (channel != null) {
      channel.force(true);
    }
    forceDirectoryOfNewSegment();
  }

  @Override
  public synchronized void close() throws IOException {
    if (writer != null) {
      end();
    }
  }

  @Override
  public void discard(Path part) {
    try {
      Files.deleteIfExists(part);
    } catch (IOException ignored) {
      // A leftover .part file is never mistaken for a record: only commit appends one.
    }
  }

  /**
   * Whether the response record at {@code location} ({@code SEGMENT#OFFSET}) is there and its
   * payload of the recorded size and SHA-256.
   */
  static boolean isWhole(String location, long bytes, String sha256) {
    int hash = location.lastIndexOf('#');
    if (hash < 0) {
      return false;
    }
    Path segment = Path.of(location.substring(0, hash));
    try (WarcReader reader = new WarcReader(FileChannel.open(segment))) {
      reader.position(Long.parseLong(location.substring(hash + 1)));
      Optional<WarcRecord> record = reader.next();
      if (record.isEmpty() || !(record.get() instanceof WarcResponse response)) {
        return false;
      }
      return digest(response.http().body().stream()).equals(bytes + ":" + sha256);
    } catch (IOException | RuntimeException e) {
      return false;
    }
  }

  /** {@code SIZE:SHA256} of a stream's content. */
  static String digest(InputStream in) throws IOException {
    BodyDigest digest = BodyDigest.of(in);
    return digest.size() + ":" + digest.sha256();
  }

  /** The segment files of {@code locations}, to be forced after a verification. */
  static Path segmentOf(String location) {
    return Path.of(location.substring(0, location.lastIndexOf('#')));
  }
}
