package dev.pacer.cli;

import dev.pacer.cli.db.TripStore;
import dev.pacer.cli.db.WorkState;
import java.io.PrintWriter;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

/** {@code pacer trips}: list envelope trips; {@code pacer trips ack ID --note TEXT}. */
@Command(name = "trips", mixinStandardHelpOptions = true,
    description = "List envelope trips (open ones refuse new runs of their job).",
    subcommands = TripsCommand.Ack.class)
public final class TripsCommand implements Callable<Integer> {

  @Spec CommandSpec spec;

  @Option(names = "--job", paramLabel = "NAME", description = "Only this job's trips.")
  String job;

  @Mixin DbOptions dbOptions;

  @Override
  public Integer call() throws Exception {
    PrintWriter out = spec.commandLine().getOut();
    try (WorkState state = dbOptions.connect()) {
      List<TripStore.Trip> trips = state.trips().trips(job, false);
      if (trips.isEmpty()) {
        out.println("No trips.");
      }
      for (TripStore.Trip t : trips) {
        out.println(describe(t));
      }
    }
    return Main.EXIT_OK;
  }

  static String describe(TripStore.Trip t) {
    return "#" + t.id() + "  job " + t.job() + "  " + t.bar() + "  " + t.trippedAt() + "  on "
        + t.host() + " pid " + t.pid() + "  " + t.figures()
        + (t.ackedAt() == null ? "  OPEN: pacer trips ack " + t.id() + " --note TEXT"
            : "  acknowledged " + t.ackedAt() + ": " + t.ackNote());
  }

  /** {@code pacer trips ack ID --note TEXT}. */
  @Command(name = "ack", mixinStandardHelpOptions = true,
      description = "Acknowledge a trip, with a note, so its job may run again.")
  public static final class Ack implements Callable<Integer> {

    @Spec CommandSpec spec;

    @Parameters(index = "0", paramLabel = "ID", description = "The trip's id.")
    long id;

    @Option(names = "--note", required = true, paramLabel = "TEXT",
        description = "What was done about it (required).")
    String note;

    @Mixin DbOptions dbOptions;

    @Override
    public Integer call() throws Exception {
      if (note.isBlank()) {
        throw new BadInputException("--note must say what was done about the trip; got an empty"
            + " note");
      }
      try (WorkState state = dbOptions.connect()) {
        if (!state.trips().ackTrip(id, note.strip())) {
          throw new BadInputException("no open trip #" + id + " (see pacer trips)");
        }
        spec.commandLine().getOut().println("Trip #" + id + " acknowledged.");
      }
      return Main.EXIT_OK;
    }
  }
}
