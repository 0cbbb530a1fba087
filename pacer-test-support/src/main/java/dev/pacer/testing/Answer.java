package dev.pacer.testing;

import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * What the door sends back to one request.
 *
 * @param status the status code
 * @param headers header fields to add (Content-Length is the door's)
 * @param body the body
 */
public record Answer(int status, Map<String, String> headers, byte[] body) {

  /** 200 with no body. */
  public static final Answer OK = new Answer(200, Map.of(), new byte[0]);

  public Answer {
    headers = Map.copyOf(headers);
  }

  /** {@code status} with no body. */
  public static Answer status(int status) {
    return new Answer(status, Map.of(), new byte[0]);
  }

  /** {@code status} with {@code text} as its body, in UTF-8. */
  public static Answer text(int status, String text) {
    return new Answer(status, Map.of(), text.getBytes(StandardCharsets.UTF_8));
  }

  /** This answer with header {@code name: value} added. */
  public Answer with(String name, String value) {
    Map<String, String> more = new LinkedHashMap<>(headers);
    more.put(name, value);
    return new Answer(status, more, body);
  }

  /**
   * The answers of a door in a JVM of its own, chosen by the request's path: {@code /status/S}
   * answers S, {@code /status/S/A} answers S with {@code Retry-After: A}; any other path 200 with
   * no body.
   */
  public static Answer byPath(Request request) {
    String[] parts = request.path().split("/");
    if (parts.length >= 3 && parts[1].equals("status")) {
      Answer answer = status(Integer.parseInt(parts[2]));
      return parts.length >= 4 ? answer.with("Retry-After", parts[3]) : answer;
    }
    return OK;
  }
}
