package dev.pacer.cli;

import dev.pacer.cli.db.Database;
import dev.pacer.cli.db.EmbeddedDatabase;
import dev.pacer.cli.db.WorkState;
import java.io.IOException;
import java.nio.file.Path;
import java.sql.SQLException;
import picocli.CommandLine.Option;

/** Where Pacer's state lives: {@code --db} / {@code PACER_DB}, or the embedded PostgreSQL. */
public final class DbOptions {

  @Option(names = "--db", paramLabel = "JDBC_URL", defaultValue = "${env:PACER_DB}",
      description = "PostgreSQL JDBC URL (default: $PACER_DB, else the embedded PostgreSQL)."
          + " Passwords in it are never printed.")
  String db;

  @Option(names = "--data-dir", paramLabel = "DIR",
      description = "Directory of the embedded PostgreSQL (default: $PACER_HOME or ~/.pacer).")
  Path dataDir;

  boolean isEmbedded() {
    return db == null || db.isBlank();
  }

  EmbeddedDatabase embedded() {
    return new EmbeddedDatabase(dataDir != null ? dataDir : EmbeddedDatabase.defaultDirectory());
  }

  /** The database to use, the embedded one started if needed; not yet connected. */
  Database resolve() throws BadInputException {
    if (!isEmbedded()) {
      try {
        return new Database(db.trim());
      } catch (IllegalArgumentException e) {
        throw new BadInputException(e.getMessage());
      }
    }
    EmbeddedDatabase embedded = embedded();
    try {
      return new Database(embedded.ensureRunning());
    } catch (IOException | RuntimeException e) {
      throw new BadInputException("could not start the embedded PostgreSQL in "
          + embedded.directory() + ": " + e.getMessage() + " (see "
          + embedded.directory().resolve("postgres.log") + ")");
    }
  }

  /** The connected work state with the schema in place; an unreachable database is bad input. */
  WorkState connect() throws BadInputException {
    Database database = resolve();
    WorkState state = new WorkState(database);
    try {
      state.ensureSchema();
    } catch (SQLException e) {
      state.close();
      throw new BadInputException("cannot use the database " + database.redactedUrl() + ": "
          + database.describe(e));
    }
    return state;
  }
}
