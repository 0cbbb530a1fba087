package dev.pacer.cli.run;

import java.nio.file.Path;

/**
 * A run's WARC output ({@code --warc PREFIX}): each worker writes its own segments, {@code
 * PREFIX-<UTC time>-<pid>-<serial>.warc.gz}, each closed and a new one begun once it holds {@code
 * segmentBytes} or more.
 *
 * @param prefix the segments' path and the start of their names
 * @param segmentBytes the size after which a segment is closed
 */
public record WarcOutput(Path prefix, long segmentBytes) {

  /** The default segment size: 1 GiB, the usual size of a crawler's WARC files. */
  public static final long DEFAULT_SEGMENT_BYTES = 1L << 30;
}
