package dev.pacer.testing;

import java.net.URI;
import java.util.List;
import java.util.Map;

/**
 * One request as the door read it.
 *
 * @param method the request method
 * @param target the request target (path and query) as sent
 * @param headers the header fields by lower-case name, in the order they came
 * @param body the body, empty when the request had none
 */
public record Request(
    String method, String target, Map<String, List<String>> headers, byte[] body) {

  /** The target's path, without its query. */
  public String path() {
    return URI.create(target).getPath();
  }

  /** The first value of header {@code name} (any case), or null. */
  public String header(String name) {
    List<String> values = headers.get(name.toLowerCase(java.util.Locale.ROOT));
    return values == null || values.isEmpty() ? null : values.get(0);
  }
}
