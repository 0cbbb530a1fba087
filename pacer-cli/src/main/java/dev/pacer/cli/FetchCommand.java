package dev.pacer.cli;

import dev.pacer.Printable;
import dev.pacer.cli.db.CursorPlace;
import dev.pacer.cli.db.FrontierStore;
import dev.pacer.cli.db.WorkState;
import dev.pacer.cli.model.BadInputException;
import dev.pacer.cli.model.UrlList;
import dev.pacer.cli.run.RunSettings;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintWriter;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.regex.Pattern;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/** {@code pacer fetch}: enqueue a URL list as a job and fetch it under the fleet-wide ceiling. */
@Command(
    name = "fetch",
    mixinStandardHelpOptions = true,
    description = {
      "Fetch a list of URLs under the destination's fleet-wide ceiling.",
      "INPUT has one URL per line ('-' for stdin). The list becomes a job in PostgreSQL:"
          + " re-running it fetches only what is left. The last line on stdout is a JSON summary.",
      "Exit: 0 finished, 3 halted by the operating envelope (or refused: unacknowledged trip),"
          + " 2 bad usage or input, 1 unexpected error."
    })
public final class FetchCommand implements Callable<Integer> {

  static final Pattern JOB_NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,63}");

  @Spec CommandSpec spec;

  @Parameters(index = "0", paramLabel = "INPUT", description = "File of URLs, or '-' for stdin.")
  String input;

  @Option(
      names = "--job",
      paramLabel = "NAME",
      description = "Job name (default: the input file's name without extension; 'stdin').")
  String job;

  @Option(
      names = "--destination",
      paramLabel = "NAME",
      description = "Destination name: the key of the ceiling (default: the URLs' host).")
  String destination;

  @Option(
      names = "--rates",
      paramLabel = "FILE",
      description =
          "With --per-host: per-host ceilings, one 'host rate [concurrency]' per line;"
              + " hosts not named get --rate and --concurrency.")
  Path rates;

  @Option(
      names = "--processes",
      paramLabel = "P",
      defaultValue = "0",
      description = "Run P worker processes (the conveyor) instead of one pooled process.")
  int processes;

  @Option(names = "--no-progress", description = "No progress bar, even on a terminal.")
  boolean noProgress;

  @Mixin RunOptions run;
  @Mixin DbOptions dbOptions;
  @Mixin CursorOptions cursorOptions;

  @Override
  public Integer call() throws Exception {
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter err = spec.commandLine().getErr();
    String jobName = jobName();
    RunOptions.require(
        !(run.perHost && destination != null),
        "--destination puts every URL under"
            + " one ceiling and --per-host gives each host its own; choose one");
    RunOptions.require(
        rates == null || run.perHost, "--rates sets per-host ceilings; it needs" + " --per-host");
    RunOptions.require(
        rates == null || run.claimOrder == RunOptions.ClaimOrder.TURN,
        "--claim-order FIFO paces every host at --rate; it ignores --rates");
    RunOptions.require(processes >= 0, "--processes must be >= 0, got " + processes);
    CursorPlace cursorPlace = cursorOptions.place();
    RunOptions.require(
        !run.perHost || cursorPlace.layout() == CursorPlace.Layout.PACER,
        "--per-host claims each host's turn on Pacer's cursor table; it cannot use --cursor-layout "
            + cursorPlace.layout().option());
    try (UrlList urls = readInput(err)) {
      String destinationName =
          run.perHost ? RunOptions.perHostName(jobName) : destinationName(urls);
      String runId = UUID.randomUUID().toString();
      RunSettings settings = run.settings(runId, jobName, destinationName, processes);
      try {
        cursorPlace.checkKeyFits(destinationName);
      } catch (IllegalArgumentException e) {
        throw new BadInputException(e.getMessage());
      }
      Map<String, FrontierStore.HostCeiling> ceilings = new LinkedHashMap<>();
      if (run.perHost) {
        Map<String, FrontierStore.HostCeiling> named =
            rates == null
                ? Map.of()
                : HostRates.read(rates, settings.destination().maxConcurrency());
        for (String host : urls.hosts()) {
          ceilings.put(host, named.getOrDefault(host, run.defaultCeiling()));
        }
      }
      try (WorkState state = dbOptions.connect(cursorPlace)) {
        return new JobRun(state, out, err, !noProgress)
            .run(urls, settings, ceilings, processes, Optional.empty());
      }
    }
  }

  private UrlList readInput(PrintWriter err) throws BadInputException, IOException {
    UrlList urls;
    if (input.equals("-")) {
      urls = UrlList.read(System.in, "standard input");
    } else {
      Path path = Path.of(input);
      if (Files.isDirectory(path)) {
        throw new BadInputException("input " + input + " is a directory, not a file of URLs");
      }
      try (InputStream in = Files.newInputStream(path)) {
        urls = UrlList.read(in, "input " + input);
      } catch (NoSuchFileException e) {
        throw new BadInputException("input file " + input + " does not exist");
      } catch (AccessDeniedException e) {
        throw new BadInputException("input file " + input + " is not readable (permission denied)");
      }
    }
    for (String problem : urls.problems()) {
      err.println("pacer: skipped " + problem);
    }
    if (urls.problemCount() > urls.problems().size()) {
      err.println(
          "pacer: skipped "
              + (urls.problemCount() - urls.problems().size())
              + " more line(s), not shown");
    }
    return urls;
  }

  private String jobName() throws BadInputException {
    String name = job;
    if (name == null) {
      if (input.equals("-")) {
        name = "stdin";
      } else {
        String file = Path.of(input).getFileName().toString();
        int dot = file.lastIndexOf('.');
        name = (dot > 0 ? file.substring(0, dot) : file).replaceAll("[^A-Za-z0-9._-]", "_");
        if (!name.isEmpty() && !Character.isLetterOrDigit(name.charAt(0))) {
          name = "job" + name;
        }
      }
    }
    if (!JOB_NAME.matcher(name).matches()) {
      throw new BadInputException(
          "job name must be 1-64 characters of letters, digits, '.', '_'"
              + " or '-', starting with a letter or digit, got "
              + Printable.quote(name));
    }
    return name;
  }

  private String destinationName(UrlList urls) throws BadInputException {
    if (destination != null) {
      return destination;
    }
    if (urls.hosts().size() > 1) {
      throw new BadInputException(
          "the URLs span "
              + urls.hosts().size()
              + " hosts ("
              + String.join(", ", urls.hosts().stream().limit(5).toList())
              + (urls.hosts().size() > 5 ? ", ..." : "")
              + "); a job has one destination: pass"
              + " --destination NAME to put them under one ceiling, or --per-host to give each host"
              + " its own");
    }
    return urls.hosts().iterator().next();
  }
}
