package dev.pacer.testing;

/**
 * One request as the door saw it arrive.
 *
 * @param nanos when the last byte of its head was read, on {@link System#nanoTime()}
 * @param request the request (from a door in a JVM of its own: method, target and the {@value
 *     #WORKER_HEADER} header only)
 * @param opened whether it was the first on its connection, whose accept it waited for
 * @param status the status the door answered
 */
public record Arrival(long nanos, Request request, boolean opened, int status) {

  /** The header a test's workers may name themselves in, reported by every door. */
  public static final String WORKER_HEADER = "X-Pacer-Worker";

  /** The request target, path and query. */
  public String target() {
    return request.target();
  }

  /** The request target's path. */
  public String path() {
    return request.path();
  }

  /** The worker named in {@value #WORKER_HEADER}, or null. */
  public String worker() {
    return request.header(WORKER_HEADER);
  }
}
