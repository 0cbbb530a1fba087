package dev.pacer.cli;

import dev.pacer.cli.db.Database;
import dev.pacer.cli.model.BadInputException;
import dev.pacer.cli.run.Conveyor;
import dev.pacer.cli.run.Envelope;
import dev.pacer.cli.run.RunSettings;
import dev.pacer.cli.run.StartLine;
import dev.pacer.cli.run.Worker;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * One conveyor worker process (started by {@code pacer fetch --processes}; hidden). It takes one of
 * the destination's fleet-wide dispatch slots before fetching. The database URL comes from {@code
 * PACER_DB}.
 */
@Command(name = "worker", hidden = true, description = "A conveyor worker (internal).")
public final class WorkerCommand implements Callable<Integer> {

  @Option(names = "--job", required = true)
  String job;

  @Option(names = "--destination", required = true)
  String destination;

  @Option(names = "--run-id", required = true)
  String runId;

  @Option(names = "--db", defaultValue = "${env:PACER_DB}")
  String db;

  @Mixin RunOptions run;
  @Mixin CursorOptions cursor;

  @Override
  public Integer call() throws Exception {
    if (db == null || db.isBlank()) {
      throw new BadInputException("a worker needs PACER_DB");
    }
    Database database;
    try {
      database = new Database(db, cursor.place());
    } catch (IllegalArgumentException e) {
      throw new BadInputException(e.getMessage());
    }
    int dispatches = run.effectiveMaxDispatches(1);
    RunSettings settings = run.settings(runId, job, destination, dispatches);
    Worker.Result result =
        new Worker(
                database,
                settings,
                Envelope.forThisProcess(settings.maxLoad(), settings.maxRssBytes()),
                StartLine.fromParent(System.in, System.out, Conveyor.START_LINE_BOUND))
            .run();
    return result.halted().isPresent() ? Main.EXIT_HALTED : Main.EXIT_OK;
  }
}
