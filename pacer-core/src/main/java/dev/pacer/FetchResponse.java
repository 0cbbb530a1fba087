package dev.pacer;

import java.net.URI;

/** A successful (2xx) response whose body was read in full, within the size cap. */
public record FetchResponse(URI uri, int status, byte[] body) {}
