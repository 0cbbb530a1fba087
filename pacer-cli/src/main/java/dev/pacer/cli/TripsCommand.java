package dev.pacer.cli;

import dev.pacer.Destination;
import dev.pacer.cli.db.TripStore;
import dev.pacer.cli.db.WorkState;
import dev.pacer.cli.model.BadInputException;
import dev.pacer.cli.model.HaltReason;
import dev.pacer.postgres.PostgresCursor;
import java.io.PrintWriter;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/** {@code pacer trips}: list envelope trips; {@code pacer trips ack ID --note TEXT}. */
@Command(
    name = "trips",
    mixinStandardHelpOptions = true,
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
    return "#"
        + t.id()
        + "  job "
        + t.job()
        + "  "
        + t.bar()
        + "  "
        + t.trippedAt()
        + "  on "
        + t.host()
        + " pid "
        + t.pid()
        + "  "
        + t.figures()
        + (t.ackedAt() == null
            ? "  OPEN: pacer trips ack " + t.id() + " --note TEXT"
            : "  acknowledged " + t.ackedAt() + ": " + t.ackNote());
  }

  /**
   * {@code pacer trips ack ID --note TEXT}, or {@code pacer trips ack --destination NAME --note
   * TEXT}. Acknowledging a destination-lockout trip also clears the lockout recorded beside the
   * destination's cursor, which refuses every run for that destination, of any job, until then;
   * {@code --destination} clears a lockout that no trip of this tool recorded (a library user's).
   */
  @Command(
      name = "ack",
      mixinStandardHelpOptions = true,
      description =
          "Acknowledge a trip, with a note, so its job may run again. A destination"
              + " lockout trip also clears the destination's lockout; --destination clears a"
              + " destination's lockout that no trip recorded.")
  public static final class Ack implements Callable<Integer> {

    @Spec CommandSpec spec;

    @Parameters(index = "0", arity = "0..1", paramLabel = "ID", description = "The trip's id.")
    Long id;

    @Option(
        names = "--destination",
        paramLabel = "NAME",
        description = "Clear this destination's recorded lockout (instead of a trip ID).")
    String destination;

    @Option(
        names = "--note",
        required = true,
        paramLabel = "TEXT",
        description = "What was done about it (required).")
    String note;

    @Mixin DbOptions dbOptions;

    @Override
    public Integer call() throws Exception {
      if (note.isBlank()) {
        throw new BadInputException(
            "--note must say what was done about the trip; got an empty" + " note");
      }
      if ((id == null) == (destination == null)) {
        throw new BadInputException(
            "give either a trip ID or --destination NAME, not "
                + (id == null ? "neither" : "both"));
      }
      PrintWriter out = spec.commandLine().getOut();
      try (WorkState state = dbOptions.connect()) {
        String lockedDestination = destination;
        if (id != null) {
          TripStore.Acked acked =
              state
                  .trips()
                  .ackTrip(id, note.strip())
                  .orElseThrow(
                      () -> new BadInputException("no open trip #" + id + " (see pacer trips)"));
          out.println("Trip #" + id + " acknowledged.");
          if (acked.bar() == HaltReason.DESTINATION_LOCKOUT) {
            lockedDestination = state.jobs().jobDestination(acked.job()).orElse(null);
          }
        }
        if (lockedDestination != null) {
          try (PostgresCursor cursor = state.database().cursor()) {
            cursor.clearLockout(Destination.validateName(lockedDestination));
          }
          out.println(
              "Destination "
                  + lockedDestination
                  + ": lockout cleared; runs for it may"
                  + " start again.");
        }
      }
      return Main.EXIT_OK;
    }
  }
}
