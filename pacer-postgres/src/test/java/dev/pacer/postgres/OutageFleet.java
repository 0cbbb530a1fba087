package dev.pacer.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

/**
 * The worker JVMs of an outage test ({@link OutageWorker}), started and released together: {@link
 * #start} returns once every member is connected and its client open, {@link #go} starts the run,
 * {@link #finish} waits for its end and sums what the members report.
 */
final class OutageFleet implements AutoCloseable {

  /**
   * What the fleet runs.
   *
   * @param jdbcUrl the database
   * @param layout {@link OutageWorker}'s layout argument
   * @param destination the destination's name
   * @param rate the destination's ceiling
   * @param maxFetchingProcesses the destination's setting
   * @param jvms how many worker JVMs
   * @param membersPerJvm the independent members (cursor, registry, client) in each
   * @param threads the threads of each member
   * @param seconds how long each member takes turns after GO
   */
  record Plan(
      String jdbcUrl,
      String layout,
      String destination,
      double rate,
      int maxFetchingProcesses,
      int jvms,
      int membersPerJvm,
      int threads,
      int seconds) {

    /**
     * The longest from the database's last answer until every member paces locally, dividing the
     * ceiling by {@code divisor}: each thread holds a turn on the shared cursor, so its end lies at
     * most one turn per thread of the fleet ahead, and a member's first local turn waits for the
     * turns the others may still hold queued after it, {@code (divisor - 1) x threads} more ({@code
     * DestinationLimiter}'s degraded pacing). From then on each member's arrivals are its local
     * grid alone.
     */
    double secondsToLocalPacing(int divisor) {
      return (jvms * membersPerJvm * threads + (divisor - 1) * threads) / rate;
    }
  }

  private final Plan plan;
  private final List<Process> processes = new ArrayList<>();
  private final List<CompletableFuture<List<String>>> outputs = new ArrayList<>();
  private final List<Path> logs = new ArrayList<>();

  private OutageFleet(Plan plan) {
    this.plan = plan;
  }

  /**
   * Starts the fleet's JVMs, JVM {@code i} naming its members {@code <name><i>-<m>} at the door,
   * and waits until each is ready.
   */
  static OutageFleet start(Plan plan, String doorUrl, String name) throws IOException {
    OutageFleet fleet = new OutageFleet(plan);
    try {
      String java =
          System.getProperty("java.home") + File.separator + "bin" + File.separator + "java";
      Path logDirectory = Files.createTempDirectory("outage-fleet-logs");
      List<BufferedReader> readers = new ArrayList<>();
      for (int i = 0; i < plan.jvms(); i++) {
        Path log = logDirectory.resolve(name + i + ".log");
        Process p =
            new ProcessBuilder(
                    java,
                    "-XX:TieredStopAtLevel=1",
                    "-cp",
                    System.getProperty("java.class.path"),
                    OutageWorker.class.getName(),
                    plan.jdbcUrl(),
                    plan.layout(),
                    plan.destination(),
                    String.valueOf(plan.rate()),
                    String.valueOf(plan.maxFetchingProcesses()),
                    String.valueOf(plan.membersPerJvm()),
                    String.valueOf(plan.threads()),
                    String.valueOf(plan.seconds()),
                    doorUrl,
                    name + i)
                .redirectError(log.toFile())
                .start();
        fleet.processes.add(p);
        fleet.logs.add(log);
        readers.add(
            new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8)));
      }
      for (int i = 0; i < readers.size(); i++) {
        assertThat(readers.get(i).readLine())
            .as("%s%d start-up: %s", name, i, Files.readString(fleet.logs.get(i)))
            .isEqualTo("READY");
      }
      for (BufferedReader r : readers) {
        fleet.outputs.add(CompletableFuture.supplyAsync(() -> r.lines().toList()));
      }
      return fleet;
    } catch (IOException | RuntimeException | Error e) {
      fleet.close();
      throw e;
    }
  }

  /** Starts the run in every JVM. */
  void go() throws IOException {
    for (Process p : processes) {
      Writer in = new OutputStreamWriter(p.getOutputStream(), StandardCharsets.UTF_8);
      in.write("GO\n");
      in.flush();
    }
  }

  /** Waits for the run's end; asserts that every JVM exited 0, and sums the members' reports. */
  TurnsTaken finish() throws Exception {
    TurnsTaken turns = TurnsTaken.NONE;
    for (int i = 0; i < processes.size(); i++) {
      for (String line : outputs.get(i).get(plan.seconds() + 30, TimeUnit.SECONDS)) {
        turns = TurnsTaken.parse(line).map(turns::plus).orElse(turns);
      }
      assertThat(processes.get(i).waitFor(30, TimeUnit.SECONDS)).isTrue();
      assertThat(processes.get(i).exitValue())
          .as("worker JVM %d exit: %s", i, Files.readString(logs.get(i)))
          .isZero();
    }
    return turns;
  }

  /** The lines of the JVMs' logs that {@code wanted} keeps, each after its JVM's number. */
  List<String> logLines(Predicate<String> wanted) throws IOException {
    List<String> lines = new ArrayList<>();
    for (int i = 0; i < logs.size(); i++) {
      for (String line : Files.readAllLines(logs.get(i))) {
        if (wanted.test(line)) {
          lines.add("JVM " + i + ": " + line);
        }
      }
    }
    return lines;
  }

  @Override
  public void close() {
    processes.forEach(Process::destroyForcibly);
  }
}
