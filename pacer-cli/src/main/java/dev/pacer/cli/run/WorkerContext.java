package dev.pacer.cli.run;

import dev.pacer.cli.db.Database;
import dev.pacer.cli.db.WorkState;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * What the parts of one worker process share: its settings and name, its work state, the retrying
 * of its statements while PostgreSQL is away, and the flag that stops its fetch threads.
 *
 * @param workerId this worker's name in the work state (host, pid and a random part)
 * @param stop set when the run stops: halted, terminated, or out of work
 */
record WorkerContext(
    Database database,
    RunSettings settings,
    String workerId,
    WorkState store,
    Retrying retrying,
    AtomicBoolean stop) {}
