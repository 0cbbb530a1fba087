package dev.pacer.bench;

import dev.pacer.postgres.PostgresCursor;
import dev.pacer.postgres.PostgresCursorConfig;
import dev.pacer.postgres.TableLayout;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * The server's own ceiling for Pacer's statement: {@code pgbench} (C, libpq, prepared protocol)
 * running exactly Pacer's reservation SQL ({@link TableLayout#reservationSql()}) on one hot key,
 * with the same session settings as Pacer's connection (commit mode, plan cache mode, no sequential
 * scans, timeouts), through {@code PGOPTIONS}. The key, gap and reset bound are pgbench variables,
 * sent as the same bind parameters; the fourth parameter, max_wait, is NULL for a plain reservation
 * and is written as a literal NULL; the fifth, not_before, is 0 for a caller that knows of no
 * earlier turn, also a literal.
 */
final class Pgbench {

  static final String KEY = "bench-pgbench-hot";

  private final Path executable;
  private final Path script;
  private final Properties libpq;

  private Pgbench(Path executable, Path script, Properties libpq) {
    this.executable = executable;
    this.script = script;
    this.libpq = libpq;
  }

  /**
   * Makes the hot key's row as a first reservation makes it: in Pacer's table layout the statement
   * pgbench runs updates an existing row checked for a lockout, and nothing else.
   */
  static void makeRow(Database.Target db) throws SQLException {
    try (Connection c = db.connect();
        PostgresCursor cursor =
            new PostgresCursor(
                PostgresCursorConfig.forDataSource(new SingleConnectionDataSource(c)).build())) {
      if (!cursor.reserve(KEY, Duration.ZERO).isGranted()) {
        throw new IllegalStateException("pgbench's hot key was not reserved");
      }
    }
  }

  static Pgbench prepare(Path executable, Path workDir, Properties libpq) throws IOException {
    Path script = workDir.resolve("pacer-reserve.pgbench.sql");
    Files.writeString(script, script(), StandardCharsets.UTF_8);
    return new Pgbench(executable, script, libpq);
  }

  /** Pacer's reservation statement with pgbench variables in place of its JDBC parameters. */
  static String script() {
    String sql = TableLayout.pacerTable(Contender.PACER_TABLE).reservationSql();
    String[] parameters = {":key", ":gap", ":reset_beyond", "NULL", "0"};
    StringBuilder out = new StringBuilder();
    int next = 0;
    for (char ch : sql.toCharArray()) {
      if (ch == '?') {
        if (next == parameters.length) {
          throw new IllegalStateException(
              "reservation SQL has more than " + parameters.length + " parameters");
        }
        out.append(parameters[next++]);
      } else {
        out.append(ch);
      }
    }
    if (next != parameters.length) {
      throw new IllegalStateException(
          "reservation SQL has " + next + " parameters, expected " + parameters.length);
    }
    return out.append(";\n").toString();
  }

  /** Transactions (reservations) per second at {@code clients} connections for {@code seconds}. */
  double run(int clients, int seconds) throws IOException, InterruptedException {
    int threads = Math.max(1, Math.min(clients, Runtime.getRuntime().availableProcessors()));
    List<String> command =
        new ArrayList<>(
            List.of(
                executable.toString(),
                "-n",
                "-M",
                "prepared",
                "-f",
                script.toString(),
                "-c",
                Integer.toString(clients),
                "-j",
                Integer.toString(threads),
                "-T",
                Integer.toString(seconds),
                "-D",
                "key=" + KEY,
                "-D",
                "gap=0",
                "-D",
                "reset_beyond=3600000000"));
    addIfPresent(command, "-h", libpq.getProperty("PGHOST"));
    addIfPresent(command, "-p", libpq.getProperty("PGPORT"));
    addIfPresent(command, "-U", libpq.getProperty("user"));
    command.add(libpq.getProperty("PGDBNAME", "postgres"));
    ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true);
    Map<String, String> env = pb.environment();
    // The session settings PostgresCursor gives its own connection, so that pgbench runs the
    // statement with the same plan and commit mode.
    env.put(
        "PGOPTIONS",
        "-c synchronous_commit=off -c plan_cache_mode=force_generic_plan"
            + " -c enable_seqscan=off -c statement_timeout=1000 -c lock_timeout=1000");
    String password = libpq.getProperty("password");
    if (password != null) {
      env.put("PGPASSWORD", password);
    }
    Process process = pb.start();
    String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    int exit = process.waitFor();
    Matcher tps = Pattern.compile("tps = ([0-9.]+) \\((without|excluding)").matcher(output);
    Matcher failed = Pattern.compile("number of failed transactions: ([0-9]+)").matcher(output);
    if (exit != 0 || !tps.find() || (failed.find() && !failed.group(1).equals("0"))) {
      throw new IllegalStateException("pgbench failed (exit " + exit + "):\n" + output);
    }
    return Double.parseDouble(tps.group(1));
  }

  private static void addIfPresent(List<String> command, String flag, String value) {
    if (value != null && !value.isEmpty()) {
      command.add(flag);
      command.add(value);
    }
  }

  /**
   * The pgbench to use: the one given, else the newest under Debian's {@code
   * /usr/lib/postgresql/<version>/bin} (the real binaries), else one on the PATH that answers
   * {@code --version} (Debian's {@code /usr/bin/pgbench} is a wrapper that exists, and fails, when
   * only the client package is installed).
   */
  static Path locate(String given) throws IOException, InterruptedException {
    if (given != null) {
      Path p = Path.of(given);
      if (!Files.isExecutable(p)) {
        throw new IllegalStateException("--pgbench " + given + " is not an executable file");
      }
      return p;
    }
    Path debian = Path.of("/usr/lib/postgresql");
    if (Files.isDirectory(debian)) {
      try (Stream<Path> versions = Files.list(debian)) {
        Path found =
            versions
                .map(v -> v.resolve("bin/pgbench"))
                .filter(Files::isExecutable)
                .max(Comparator.comparing(p -> versionOf(p.getParent().getParent())))
                .orElse(null);
        if (found != null) {
          return found;
        }
      }
    }
    for (String dir : System.getenv().getOrDefault("PATH", "").split(java.io.File.pathSeparator)) {
      Path candidate = dir.isEmpty() ? null : Path.of(dir, "pgbench");
      if (candidate != null && Files.isExecutable(candidate) && answers(candidate)) {
        return candidate;
      }
    }
    throw new IllegalStateException(
        "pgbench not found: it ships with the PostgreSQL server"
            + " binaries (on Debian: apt-get install -y postgresql); or pass --pgbench PATH");
  }

  private static boolean answers(Path pgbench) throws IOException, InterruptedException {
    Process p =
        new ProcessBuilder(pgbench.toString(), "--version").redirectErrorStream(true).start();
    p.getInputStream().readAllBytes();
    return p.waitFor() == 0;
  }

  private static int versionOf(Path dir) {
    try {
      return Integer.parseInt(dir.getFileName().toString());
    } catch (NumberFormatException e) {
      return -1;
    }
  }
}
