package dev.pacer.http;

import dev.pacer.testing.Answer;
import dev.pacer.testing.Arrival;
import dev.pacer.testing.DoorServer;
import dev.pacer.testing.Request;
import java.net.URI;
import java.net.URLDecoder;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * The answers of a {@link DoorServer} for the integrations' redirect and answer tests, by path:
 *
 * <ul>
 *   <li>{@code /hop/K}: 302 to {@code /hop/K-1} (a relative Location); {@code /hop/0}: 200
 *       "landed";
 *   <li>{@code /status/S}: status S; {@code /status/S/A}: status S with {@code Retry-After: A};
 *   <li>{@code /redirect/S?to=URL}: status S with {@code Location: URL} ({@link #redirect});
 *   <li>any other path: 200 with "ok " and the path as its body.
 * </ul>
 */
final class HopPaths {

  private HopPaths() {}

  /** What the door answers {@code request}: see the class comment. */
  static Answer answer(Request request) {
    String path = request.path();
    String[] parts = path.split("/");
    String query = URI.create(request.target()).getRawQuery();
    if (path.startsWith("/redirect/") && query != null && query.startsWith("to=")) {
      return Answer.text(Integer.parseInt(parts[2]), "moved")
          .with(
              "Location",
              URLDecoder.decode(query.substring("to=".length()), StandardCharsets.UTF_8));
    }
    if (path.startsWith("/hop/")) {
      int k = Integer.parseInt(parts[2]);
      return k > 0
          ? Answer.text(302, "moved").with("Location", "/hop/" + (k - 1))
          : Answer.text(200, "landed");
    }
    if (path.startsWith("/status/")) {
      int status = Integer.parseInt(parts[2]);
      Answer answer = Answer.text(status, "status " + status);
      return parts.length > 3 ? answer.with("Retry-After", parts[3]) : answer;
    }
    return Answer.text(200, "ok " + path);
  }

  /** {@code path} at {@code door}. */
  static URI uri(DoorServer door, String path) {
    return URI.create(door.url(path));
  }

  /** The path at {@code door} that answers {@code status} with {@code Location: location}. */
  static URI redirect(DoorServer door, int status, String location) {
    return uri(
        door, "/redirect/" + status + "?to=" + URLEncoder.encode(location, StandardCharsets.UTF_8));
  }

  /** The paths of {@code door}'s arrivals, in the order they arrived. */
  static List<String> paths(DoorServer door) {
    return door.arrivals().stream().map(Arrival::path).toList();
  }

  /** The body {@code arrival}'s request carried, as UTF-8. */
  static String body(Arrival arrival) {
    return new String(arrival.request().body(), StandardCharsets.UTF_8);
  }
}
