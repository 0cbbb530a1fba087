package dev.pacer.cli.run;

import dev.pacer.ThrottledException;
import dev.pacer.cli.db.ItemStore;
import dev.pacer.jdkhttp.fetch.DestinationFetcher;
import dev.pacer.jdkhttp.fetch.FetchFailedException;
import dev.pacer.jdkhttp.fetch.FetchResponse;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Path;
import java.util.Collection;

/**
 * Where a run's fetched bodies go, one layout each: a file per body ({@link BodyStore}) or WARC
 * segments ({@link WarcBodies}). Either way a body streams into a {@code .part} file first (never
 * whole in memory), and {@link #commit} puts it in place; {@link #makeDurable} is the layout's
 * durable point, which {@link DurablePoints} passes about once a second.
 */
interface Bodies {

  /** A body in place: where it is (its location, as recorded), its size, its SHA-256 in hex. */
  record Stored(String location, long bytes, String sha256) {}

  /** The temporary file for the item's body to stream into; the fetcher creates it. */
  Path newPart(ItemStore.Item item) throws IOException;

  /** Fetches {@code uri}'s body into {@code part}. */
  FetchResponse fetch(DestinationFetcher fetcher, URI uri, Path part)
      throws InterruptedException, ThrottledException, FetchFailedException;

  /** Puts a complete part in place (consuming it) and says where it is. */
  Stored commit(ItemStore.Item item, Path part, FetchResponse response) throws IOException;

  /** Deletes a part file whose fetch failed. */
  void discard(Path part);

  /** Whether a body is durable once {@link #commit} returns (else at the next durable point). */
  boolean forcesEach();

  /**
   * Makes durable every body committed so far, those at {@code locations} among them.
   *
   * @throws IOException if they could not be made durable: the point has not passed
   */
  void makeDurable(Collection<String> locations) throws IOException, InterruptedException;

  /** Ends the layout's output, once the last point has passed. */
  void close() throws IOException;
}
