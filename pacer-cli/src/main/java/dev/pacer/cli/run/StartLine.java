package dev.pacer.cli.run;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Where a conveyor worker waits, ready (connected, its HTTP client warmed up), until every worker
 * of the run is ready, so that the fleet's first turns are not taken while other workers' JVMs are
 * still starting.
 *
 * <p>Why: a starting JVM takes a core for a second or two (class loading, compilation). Turns
 * granted meanwhile to a worker that is already fetching wake late by that contention, and a
 * request that leaves late arrives close behind the next turn's: at the destination, more than the
 * ceiling + 1 in a second (docs/reliability.md, "The ceiling at the destination's door", item 4).
 * Behind the start line every worker's first turn is taken once the starting is over.
 *
 * <p>The worker prints {@value #READY} on its standard output and waits for {@value #GO} on its
 * standard input, which {@link Conveyor} sends once every worker is ready or has exited. It never
 * waits longer than its bound: a start line must not stop a run (never fail closed).
 */
public interface StartLine {

  String READY = "READY";
  String GO = "GO";

  /** Returns when the worker may take its first turn. */
  void await() throws InterruptedException;

  /** No one to wait for: a pooled run is one process. */
  StartLine NONE = () -> {};

  /** Ready on {@code out}, go on {@code in}, at most {@code bound} after ready. */
  static StartLine fromParent(InputStream in, PrintStream out, Duration bound) {
    Logger log = LoggerFactory.getLogger(StartLine.class);
    return () -> {
      out.println(READY);
      out.flush();
      CompletableFuture<Boolean> go =
          CompletableFuture.supplyAsync(
              () -> {
                try {
                  BufferedReader lines =
                      new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8));
                  for (String line; (line = lines.readLine()) != null; ) {
                    if (line.equals(GO)) {
                      return true;
                    }
                  }
                } catch (IOException e) {
                  log.debug("Start line: standard input unreadable: {}", e.toString());
                }
                return false;
              },
              runnable -> {
                Thread reader = new Thread(runnable, "pacer-start-line");
                reader.setDaemon(true);
                reader.start();
              });
      try {
        if (!go.get(bound.toMillis(), TimeUnit.MILLISECONDS)) {
          log.info("Start line: no GO from the parent (its input closed); starting now");
        }
      } catch (TimeoutException e) {
        log.warn("Start line: no GO within {} s; starting now", bound.toSeconds());
      } catch (ExecutionException e) {
        log.warn("Start line failed ({}); starting now", e.getCause().toString());
      }
    };
  }
}
