package dev.pacer.cli;

import dev.pacer.cli.db.EmbeddedDatabase;
import dev.pacer.cli.model.BadInputException;
import dev.pacer.cli.model.Secrets;
import java.io.IOException;
import java.nio.file.Path;
import java.util.OptionalInt;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code pacer db stop|status}: the embedded PostgreSQL. */
@Command(
    name = "db",
    mixinStandardHelpOptions = true,
    description = "The embedded PostgreSQL (used when no --db is given).",
    subcommands = {DbCommand.Start.class, DbCommand.Stop.class, DbCommand.Status.class})
public final class DbCommand implements Runnable {

  @Spec CommandSpec spec;

  @Override
  public void run() {
    spec.commandLine().usage(spec.commandLine().getOut());
  }

  static EmbeddedDatabase embedded(Path dataDir) {
    return new EmbeddedDatabase(dataDir != null ? dataDir : EmbeddedDatabase.defaultDirectory());
  }

  /** {@code pacer db start}. */
  @Command(
      name = "start",
      mixinStandardHelpOptions = true,
      description = "Start the embedded PostgreSQL if it is not running (fetch does this itself).")
  public static final class Start implements Callable<Integer> {
    @Spec CommandSpec spec;

    @Option(
        names = "--data-dir",
        paramLabel = "DIR",
        description = "Directory of the embedded PostgreSQL (default: $PACER_HOME or ~/.pacer).")
    Path dataDir;

    @Override
    public Integer call() throws Exception {
      EmbeddedDatabase db = embedded(dataDir);
      String url;
      try {
        url = db.ensureRunning();
      } catch (IOException e) {
        throw new BadInputException("could not start the " + db + ": " + e.getMessage());
      }
      spec.commandLine()
          .getOut()
          .println(
              "The "
                  + db
                  + " is running: "
                  + Secrets.redact(url)
                  + " (password in "
                  + db.secretFile()
                  + ")");
      return Main.EXIT_OK;
    }
  }

  /** {@code pacer db stop}. */
  @Command(
      name = "stop",
      mixinStandardHelpOptions = true,
      description = "Stop the embedded PostgreSQL (runs in progress lose their database).")
  public static final class Stop implements Callable<Integer> {
    @Spec CommandSpec spec;

    @Option(
        names = "--data-dir",
        paramLabel = "DIR",
        description = "Directory of the embedded PostgreSQL (default: $PACER_HOME or ~/.pacer).")
    Path dataDir;

    @Override
    public Integer call() throws Exception {
      EmbeddedDatabase db = embedded(dataDir);
      EmbeddedDatabase.StopResult result = db.stop();
      spec.commandLine()
          .getOut()
          .println(
              switch (result.outcome()) {
                case STOPPED -> "Stopped the " + db + ".";
                case NOT_RUNNING -> "The " + db + " is not running.";
                case STALE_PID_FILE ->
                    "The "
                        + db
                        + " is not running: "
                        + result.detail()
                        + ". Nothing was signalled (the file is stale; PostgreSQL replaces it at"
                        + " its next start).";
              });
      return Main.EXIT_OK;
    }
  }

  /** {@code pacer db status}. */
  @Command(
      name = "status",
      mixinStandardHelpOptions = true,
      description = "Whether the embedded PostgreSQL is running, and its JDBC URL.")
  public static final class Status implements Callable<Integer> {
    @Spec CommandSpec spec;

    @Option(
        names = "--data-dir",
        paramLabel = "DIR",
        description = "Directory of the embedded PostgreSQL (default: $PACER_HOME or ~/.pacer).")
    Path dataDir;

    @Override
    public Integer call() throws IOException {
      EmbeddedDatabase db = embedded(dataDir);
      OptionalInt port = db.runningPort();
      spec.commandLine()
          .getOut()
          .println(
              port.isPresent()
                  ? "The "
                      + db
                      + " is running: "
                      + Secrets.redact(db.jdbcUrl(port.getAsInt()))
                      + " (password in "
                      + db.secretFile()
                      + ")"
                  : "The " + db + " is not running.");
      return Main.EXIT_OK;
    }
  }
}
