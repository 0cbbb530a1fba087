package dev.pacer.cli;

import dev.pacer.Printable;
import dev.pacer.cli.model.BadInputException;
import dev.pacer.cli.model.Secrets;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import picocli.CommandLine;

/**
 * The {@code pacer} command line. Exit codes: 0 finished, 1 unexpected error, 2 bad usage or input,
 * 3 halted by the operating envelope (or refused because of an unacknowledged trip).
 */
public final class Main {

  public static final int EXIT_OK = 0;
  public static final int EXIT_ERROR = 1;
  public static final int EXIT_USAGE = 2;
  public static final int EXIT_HALTED = 3;

  private Main() {}

  public static void main(String[] args) {
    // Before anything logs: the log lines go to System.err too.
    System.setOut(Secrets.forTerminal(System.out));
    System.setErr(Secrets.forTerminal(System.err));
    PrintWriter out = new PrintWriter(System.out, true, StandardCharsets.UTF_8);
    PrintWriter err = new PrintWriter(System.err, true, StandardCharsets.UTF_8);
    int code = execute(out, err, args);
    out.flush();
    err.flush();
    System.exit(code);
  }

  /** Runs one command with the given streams and returns its exit code (for tests, in-process). */
  public static int execute(PrintWriter out, PrintWriter err, String... args) {
    // What pacer prints includes values it did not write (rows of a shared database, what a
    // destination answered): none of it may move the terminal's cursor or reorder its text.
    PrintWriter safeOut = new PrintWriter(Printable.forTerminal(out), true);
    PrintWriter safeErr = new PrintWriter(Printable.forTerminal(err), true);
    try {
      return execute(new CommandLine(new PacerCommand()), safeOut, safeErr, args);
    } finally {
      safeOut.flush();
      safeErr.flush();
    }
  }

  private static int execute(CommandLine cli, PrintWriter out, PrintWriter err, String... args) {
    cli.setOut(out);
    cli.setErr(err);
    cli.setCaseInsensitiveEnumValuesAllowed(true);
    cli.setExecutionExceptionHandler(
        (e, commandLine, parseResult) -> {
          if (e instanceof BadInputException) {
            commandLine.getErr().println("pacer: " + e.getMessage());
            return EXIT_USAGE;
          }
          commandLine
              .getErr()
              .println("pacer: unexpected error: " + Secrets.redact(String.valueOf(e)));
          Throwable cause = e.getCause();
          while (cause != null) {
            commandLine.getErr().println("  caused by: " + Secrets.redact(String.valueOf(cause)));
            cause = cause.getCause();
          }
          return EXIT_ERROR;
        });
    cli.setParameterExceptionHandler(
        (e, args2) -> {
          CommandLine commandLine = e.getCommandLine();
          commandLine.getErr().println("pacer: " + Secrets.redact(e.getMessage()));
          commandLine
              .getErr()
              .println(
                  "Try '"
                      + commandLine.getCommandSpec().qualifiedName()
                      + " --help' for more information.");
          return EXIT_USAGE;
        });
    return cli.execute(args);
  }
}
