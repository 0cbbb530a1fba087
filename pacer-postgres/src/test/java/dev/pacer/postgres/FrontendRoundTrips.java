package dev.pacer.postgres;

import java.util.concurrent.atomic.AtomicLong;

/**
 * Reads one connection's client-to-server bytes as the PostgreSQL frontend protocol and counts the
 * messages that end a round trip: Sync ({@code S}, closing an extended-protocol exchange), simple
 * Query ({@code Q}) and FunctionCall ({@code F}). The client then waits for the server's
 * ReadyForQuery before it can go on, so each is one round trip however many messages led up to it.
 *
 * <p>The messages before the startup message (SSLRequest, GSSENCRequest) and the startup message
 * itself, like a CancelRequest, carry no type byte: a length and a code. After the startup message
 * every message is a type byte and a length that counts itself but not the type. An encrypted
 * stream cannot be read; nor can anything else that breaks these rules, and from there on this
 * counts nothing, which a test that expects a count sees as a failure.
 */
final class FrontendRoundTrips {

  private static final int SSL_REQUEST = 80877103;
  private static final int GSSENC_REQUEST = 80877104;
  private static final int CANCEL_REQUEST = 80877102;
  private static final int PROTOCOL_MAJOR_3 = 3;

  private final AtomicLong roundTrips;
  private final byte[] header = new byte[8];
  private int headerFilled;
  private long bodyLeft;
  private boolean started;
  private boolean unreadable;

  /** Counts into {@code roundTrips}, which may be shared by several connections. */
  FrontendRoundTrips(AtomicLong roundTrips) {
    this.roundTrips = roundTrips;
  }

  /** Reads the next {@code length} bytes the client sent. */
  void read(byte[] bytes, int length) {
    int i = 0;
    while (i < length && !unreadable) {
      if (bodyLeft > 0) {
        int skipped = (int) Math.min(bodyLeft, length - i);
        bodyLeft -= skipped;
        i += skipped;
        continue;
      }
      header[headerFilled++] = bytes[i++];
      if (headerFilled == (started ? 5 : 8)) {
        headerFilled = 0;
        if (started) {
          typed((char) header[0], intAt(1));
        } else {
          untyped(intAt(0), intAt(4));
        }
      }
    }
  }

  private void typed(char type, int length) {
    if (length < 4) {
      unreadable = true;
      return;
    }
    bodyLeft = length - 4;
    if (type == 'S' || type == 'Q' || type == 'F') {
      roundTrips.incrementAndGet();
    }
  }

  private void untyped(int length, int code) {
    if (length < 8) {
      unreadable = true;
      return;
    }
    bodyLeft = length - 8;
    if (code >>> 16 == PROTOCOL_MAJOR_3) {
      started = true;
    } else if (code != SSL_REQUEST && code != GSSENC_REQUEST && code != CANCEL_REQUEST) {
      unreadable = true;
    }
  }

  private int intAt(int offset) {
    return (header[offset] & 0xff) << 24
        | (header[offset + 1] & 0xff) << 16
        | (header[offset + 2] & 0xff) << 8
        | header[offset + 3] & 0xff;
  }
}
