package dev.pacer.jdkhttp.fetch;

import java.net.URI;
import java.nio.file.Path;

/**
 * A successful (2xx) answer whose body was read in full, within the size cap.
 *
 * <p>Where the body went is part of the type: {@link DestinationFetcher#fetch(URI)} keeps it in
 * memory ({@link Content.InMemory}), {@link DestinationFetcher#fetchTo(URI, Path)} leaves it in the
 * caller's file ({@link Content.InFile}). {@link #body()} is the shortcut for the first.
 *
 * @param uri the URI that answered: the requested one, or the last hop of its redirects
 * @param status the 2xx status
 * @param bodyBytes the length of the body
 * @param content where the body is
 */
public record FetchResponse(URI uri, int status, long bodyBytes, Content content) {

  /** Where a fetched body is. */
  public sealed interface Content {

    /**
     * The body, held in memory.
     *
     * @param bytes the body
     */
    record InMemory(byte[] bytes) implements Content {
      @Override
      public String toString() {
        return "InMemory[" + bytes.length + " bytes]";
      }
    }

    /**
     * The body, written to {@code file} and forced to the storage device.
     *
     * @param file where the body is
     */
    record InFile(Path file) implements Content {}
  }

  /**
   * The body of an answer fetched into memory.
   *
   * @return the body's bytes
   * @throws IllegalStateException if the body was streamed to a file; read it there
   */
  public byte[] body() {
    if (content instanceof Content.InMemory memory) {
      return memory.bytes();
    }
    throw new IllegalStateException(
        "the body of "
            + uri
            + " was streamed to "
            + ((Content.InFile) content).file()
            + ", not kept in memory");
  }
}
