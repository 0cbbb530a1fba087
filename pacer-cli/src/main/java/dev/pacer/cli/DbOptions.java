package dev.pacer.cli;

import dev.pacer.cli.db.CursorPlace;
import dev.pacer.cli.db.Database;
import dev.pacer.cli.db.EmbeddedDatabase;
import dev.pacer.cli.db.WorkState;
import dev.pacer.cli.model.BadInputException;
import dev.pacer.cli.model.Secrets;
import java.io.BufferedReader;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.SQLException;
import java.util.Optional;
import picocli.CommandLine.Option;

/**
 * Where Pacer's state lives: {@code --db}, {@code --db-file}, {@code PACER_DB}, or the embedded
 * PostgreSQL. A URL on the command line is visible to every account on the host in {@code ps}, so
 * the help says where a password should go instead.
 */
public final class DbOptions {

  @Option(
      names = "--db",
      paramLabel = "JDBC_URL",
      description =
          "PostgreSQL JDBC URL (default: $PACER_DB, else the embedded PostgreSQL)."
              + " Other accounts on this host can read a command line (ps): give a URL with a"
              + " password in $PACER_DB or --db-file instead. Passwords are never printed.")
  String db;

  @Option(
      names = "--db-file",
      paramLabel = "PATH",
      description =
          "Read the JDBC URL from the first line of this file (keep it mode 0600),"
              + " instead of --db.")
  Path dbFile;

  @Option(
      names = "--data-dir",
      paramLabel = "DIR",
      description = "Directory of the embedded PostgreSQL (default: $PACER_HOME or ~/.pacer).")
  Path dataDir;

  EmbeddedDatabase embedded() {
    return new EmbeddedDatabase(dataDir != null ? dataDir : EmbeddedDatabase.defaultDirectory());
  }

  /** The URL given by {@code --db}, {@code --db-file} or {@code PACER_DB}, in that order. */
  private Optional<String> givenUrl() throws BadInputException {
    if (db != null && dbFile != null) {
      throw new BadInputException("--db and --db-file both name a database; give one");
    }
    if (db != null) {
      return Optional.of(db.trim());
    }
    if (dbFile != null) {
      return Optional.of(readUrl(dbFile));
    }
    String env = System.getenv("PACER_DB");
    return env == null || env.isBlank() ? Optional.empty() : Optional.of(env.trim());
  }

  private static String readUrl(Path file) throws BadInputException {
    try (BufferedReader reader = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
      String line = reader.readLine();
      if (line == null || line.isBlank()) {
        throw new BadInputException(
            "--db-file " + file + " is empty; its first line must be" + " the JDBC URL");
      }
      return line.trim();
    } catch (IOException e) {
      throw new BadInputException(
          "cannot read --db-file " + file + ": " + Secrets.redact(String.valueOf(e.getMessage())));
    }
  }

  /** The database to use, the embedded one started if needed; not yet connected. */
  Database resolve() throws BadInputException {
    return resolve(CursorPlace.DEFAULT);
  }

  /** As {@link #resolve()}, its cursors kept at {@code cursorPlace}. */
  Database resolve(CursorPlace cursorPlace) throws BadInputException {
    Optional<String> url = givenUrl();
    if (url.isPresent()) {
      try {
        return new Database(url.get(), cursorPlace);
      } catch (IllegalArgumentException e) {
        throw new BadInputException(e.getMessage());
      }
    }
    EmbeddedDatabase embedded = embedded();
    try {
      return new Database(embedded.ensureRunning(), cursorPlace);
    } catch (IOException | RuntimeException e) {
      throw new BadInputException(
          "could not start the embedded PostgreSQL in "
              + embedded.directory()
              + ": "
              + Secrets.redact(e.getMessage())
              + " (see "
              + embedded.directory().resolve("postgres.log")
              + ")");
    }
  }

  /** The connected work state with the schema in place; an unreachable database is bad input. */
  WorkState connect() throws BadInputException {
    return connect(CursorPlace.DEFAULT);
  }

  /** As {@link #connect()}, its cursors kept at {@code cursorPlace}. */
  WorkState connect(CursorPlace cursorPlace) throws BadInputException {
    Database database = resolve(cursorPlace);
    WorkState state = new WorkState(database);
    try {
      state.ensureSchema();
    } catch (SQLException e) {
      state.close();
      throw new BadInputException(
          "cannot use the database " + database.redactedUrl() + ": " + database.describe(e));
    }
    return state;
  }
}
