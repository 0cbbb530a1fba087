package dev.pacer.cli;

import picocli.CommandLine.Command;

/** The root command: only subcommands. */
@Command(
    name = "pacer",
    mixinStandardHelpOptions = true,
    version = "pacer 0.1.0",
    description = "Fetch URL lists under one request-rate ceiling per destination, held in"
        + " PostgreSQL and shared by every thread, process and host that fetches from it.",
    subcommands = {
      FetchCommand.class,
      StatusCommand.class,
      TripsCommand.class,
      CursorCommand.class,
      DbCommand.class,
      DemoCommand.class,
      WorkerCommand.class
    })
public final class PacerCommand implements Runnable {

  @picocli.CommandLine.Spec
  picocli.CommandLine.Model.CommandSpec spec;

  @Override
  public void run() {
    spec.commandLine().usage(spec.commandLine().getOut());
  }
}
