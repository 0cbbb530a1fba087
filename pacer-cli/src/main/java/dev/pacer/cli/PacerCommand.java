package dev.pacer.cli;

import picocli.CommandLine.Command;

/** The root command: only subcommands. */
@Command(
    name = "pacer",
    mixinStandardHelpOptions = true,
    versionProvider = PacerCommand.Version.class,
    description =
        "Fetch URL lists under one request-rate ceiling per destination, held in"
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

  @picocli.CommandLine.Spec picocli.CommandLine.Model.CommandSpec spec;

  @Override
  public void run() {
    spec.commandLine().usage(spec.commandLine().getOut());
  }

  /** The version the build wrote into {@value #RESOURCE}: the root POM's revision. */
  static final class Version implements picocli.CommandLine.IVersionProvider {
    static final String RESOURCE = "/dev/pacer/cli/version.properties";

    @Override
    public String[] getVersion() throws java.io.IOException {
      java.util.Properties p = new java.util.Properties();
      try (java.io.InputStream in = PacerCommand.class.getResourceAsStream(RESOURCE)) {
        if (in == null) {
          throw new IllegalStateException(RESOURCE + " is missing from the classpath");
        }
        p.load(in);
      }
      return new String[] {"pacer " + p.getProperty("version")};
    }
  }
}
