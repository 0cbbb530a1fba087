package dev.pacer.cli;

import dev.pacer.cli.db.CursorPlace;
import dev.pacer.cli.db.WorkState;
import dev.pacer.cli.model.BadInputException;
import dev.pacer.postgres.PostgresCursor;
import dev.pacer.spi.CursorStoreException;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/** {@code pacer cursor clear NAME}. */
@Command(
    name = "cursor",
    mixinStandardHelpOptions = true,
    description = "Administer a destination's fleet-wide cursor.",
    subcommands = CursorCommand.Clear.class)
public final class CursorCommand implements Runnable {

  @Spec CommandSpec spec;

  @Override
  public void run() {
    spec.commandLine().usage(spec.commandLine().getOut());
  }

  /** {@code pacer cursor clear NAME}: forget the cursor; the next reservation starts now. */
  @Command(
      name = "clear",
      mixinStandardHelpOptions = true,
      description = "Forget a destination's cursor: its next reservation starts now.")
  public static final class Clear implements Callable<Integer> {

    @Spec CommandSpec spec;

    @Parameters(index = "0", paramLabel = "NAME", description = "The destination name.")
    String name;

    @Mixin DbOptions dbOptions;
    @Mixin CursorOptions cursorOptions;

    @Override
    public Integer call() throws Exception {
      RunOptions.checkDestinationName(name);
      CursorPlace place = cursorOptions.place();
      try (WorkState store = dbOptions.connect(place);
          PostgresCursor cursor = store.database().cursor()) {
        cursor.clear(name);
      } catch (CursorStoreException e) {
        throw new BadInputException(e.getMessage());
      }
      spec.commandLine().getOut().println("Cursor of " + name + " cleared.");
      return Main.EXIT_OK;
    }
  }
}
