package dev.pacer.jdkhttp.internal;

import dev.pacer.Answer;
import java.net.http.HttpResponse;
import java.util.Optional;

/**
 * The final answer of one exchange ({@link Exchanges#exchange}, {@link AsyncExchange}): the
 * response, what its status meant for the pacing of its destination, and why a redirect it carries
 * was not followed, if it is one.
 */
public record Exchanged<T>(HttpResponse<T> response, Answer answer, Optional<String> notFollowed) {}
