package dev.pacer.cli.db;

import dev.pacer.postgres.DatabaseClock;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;

/**
 * Pacer's work state in PostgreSQL: its connections (see {@link StoreConnection}) and the schema,
 * shared by the stores, one per thing stored: {@link ItemStore items and their leases}, {@link
 * JobStore jobs}, {@link TripStore trips}, {@link WorkerStore workers} and {@link RobotsStore
 * hosts' robots.txt}, plus the {@link CursorStatus} and {@link HostStatus} reads for {@code pacer
 * status}. Every statement is parameterised; the only identifiers are the stores' own constant
 * table names.
 *
 * <p>The stores share the connections rather than opening their own, so that how many work-state
 * connections a process holds is said in one place, whatever it records. Failures are thrown as
 * {@link SQLException}: callers decide whether to retry.
 */
public final class WorkState implements AutoCloseable {

  /** The schema, created idempotently under an advisory lock (concurrent creators serialise). */
  static final String[] SCHEMA = {
    "CREATE TABLE IF NOT EXISTS pacer_job (\n"
        + "  name        text        PRIMARY KEY,\n"
        + "  destination text        NOT NULL,\n"
        + "  created_at  timestamptz NOT NULL DEFAULT now())",
    "CREATE TABLE IF NOT EXISTS pacer_item (\n"
        + "  job         text        NOT NULL REFERENCES pacer_job (name),\n"
        + "  url_key     text        NOT NULL,  -- SHA-256 of the URL: the idempotency key\n"
        + "  url         text        NOT NULL,\n"
        + "  seq         bigserial   NOT NULL,  -- claim order: input order\n"
        + "  state       text        NOT NULL DEFAULT 'pending'\n"
        + "              CHECK (state IN ('pending', 'leased', 'done', 'failed', 'deferred')),\n"
        + "  not_before  timestamptz NOT NULL DEFAULT now(),\n"
        + "  leased_by   text,\n"
        + "  lease_token text,\n"
        + "  lease_until timestamptz,\n"
        + "  failures    integer     NOT NULL DEFAULT 0,\n"
        + "  throttles   integer     NOT NULL DEFAULT 0,\n"
        + "  last_status integer,\n"
        + "  last_error  text,\n"
        + "  body_path   text,\n"
        + "  bytes       bigint,\n"
        + "  finished_at timestamptz,\n"
        + "  PRIMARY KEY (job, url_key))",
    "CREATE INDEX IF NOT EXISTS pacer_item_open ON pacer_item (job, seq)"
        + " WHERE state IN ('pending', 'leased')",
    "ALTER TABLE pacer_job ADD COLUMN IF NOT EXISTS ceiling double precision",
    "CREATE TABLE IF NOT EXISTS pacer_request (\n"
        + "  destination text        NOT NULL,\n"
        + "  job         text        NOT NULL,\n"
        + "  worker      text        NOT NULL,\n"
        + "  sent_at     timestamptz NOT NULL,  -- handed to the network, on PostgreSQL's clock\n"
        + "  lateness_us bigint      NOT NULL,  -- from the turn's start to sent_at\n"
        + "  hop         integer     NOT NULL,  -- 0: the item's URL; 1..: redirect hops\n"
        + "  status      integer)               -- null: no answer",
    "CREATE INDEX IF NOT EXISTS pacer_request_destination ON pacer_request (destination, sent_at)",
    "CREATE INDEX IF NOT EXISTS pacer_request_job ON pacer_request (job, sent_at)",
    "CREATE TABLE IF NOT EXISTS pacer_trip (\n"
        + "  id         bigserial   PRIMARY KEY,\n"
        + "  job        text        NOT NULL,\n"
        + "  bar        text        NOT NULL,\n"
        + "  figures    text        NOT NULL,\n"
        + "  host       text        NOT NULL,\n"
        + "  pid        bigint      NOT NULL,\n"
        + "  tripped_at timestamptz NOT NULL DEFAULT now(),\n"
        + "  acked_at   timestamptz,\n"
        + "  ack_note   text)",
    "CREATE TABLE IF NOT EXISTS pacer_worker (\n"
        + "  id          text        PRIMARY KEY,\n"
        + "  run_id      text        NOT NULL,\n"
        + "  job         text        NOT NULL,\n"
        + "  destination text        NOT NULL,\n"
        + "  host        text        NOT NULL,\n"
        + "  pid         bigint      NOT NULL,\n"
        + "  started_at  timestamptz NOT NULL DEFAULT now(),\n"
        + "  last_seen   timestamptz NOT NULL DEFAULT now(),\n"
        + "  state       text        NOT NULL,\n"
        + "  requests    bigint      NOT NULL DEFAULT 0,\n"
        + "  throttled   bigint      NOT NULL DEFAULT 0,\n"
        + "  degraded    boolean     NOT NULL DEFAULT false,\n"
        + "  backoff     integer     NOT NULL DEFAULT 1,\n"
        + "  rate        double precision NOT NULL DEFAULT 0)",
    // A retried enqueue (its answer lost with the connection) finds its own, committed, count.
    "ALTER TABLE pacer_job ADD COLUMN IF NOT EXISTS enqueue_key text",
    "ALTER TABLE pacer_job ADD COLUMN IF NOT EXISTS enqueued integer",
    // A retried trip record finds the trip its first attempt committed.
    "ALTER TABLE pacer_trip ADD COLUMN IF NOT EXISTS trip_key text",
    "CREATE UNIQUE INDEX IF NOT EXISTS pacer_trip_key ON pacer_trip (trip_key)",
    // What each worker's limiter did (LimiterFigures), summed into the run's summary.
    "ALTER TABLE pacer_worker ADD COLUMN IF NOT EXISTS turns_shared bigint NOT NULL DEFAULT 0",
    "ALTER TABLE pacer_worker ADD COLUMN IF NOT EXISTS turns_degraded bigint NOT NULL DEFAULT 0",
    "ALTER TABLE pacer_worker ADD COLUMN IF NOT EXISTS turns_refused bigint NOT NULL DEFAULT 0",
    "ALTER TABLE pacer_worker ADD COLUMN IF NOT EXISTS wait_nanos bigint NOT NULL DEFAULT 0",
    "ALTER TABLE pacer_worker ADD COLUMN IF NOT EXISTS wait_max_nanos bigint NOT NULL DEFAULT 0",
    "ALTER TABLE pacer_worker ADD COLUMN IF NOT EXISTS lockouts bigint NOT NULL DEFAULT 0",
    "ALTER TABLE pacer_worker ADD COLUMN IF NOT EXISTS cursor_latched boolean NOT NULL"
        + " DEFAULT false",
    // The summary and the progress bar read a run's workers.
    "CREATE INDEX IF NOT EXISTS pacer_worker_run ON pacer_worker (run_id)",
    "ALTER TABLE pacer_item ADD COLUMN IF NOT EXISTS host text",
    "CREATE TABLE IF NOT EXISTS pacer_frontier (\n"
        + "  job           text             NOT NULL REFERENCES pacer_job (name),\n"
        + "  host          text             NOT NULL,\n"
        + "  rate          double precision NOT NULL,\n"
        + "  interval_us   bigint           NOT NULL,\n"
        + "  max_in_flight integer          NOT NULL,\n"
        + "  next_at       timestamptz      NOT NULL DEFAULT '-infinity',"
        + "  -- a copy of the cursor's\n"
        + "  active        boolean          NOT NULL DEFAULT true,\n"
        + "  PRIMARY KEY (job, host))",
    "CREATE INDEX IF NOT EXISTS pacer_frontier_next ON pacer_frontier (job, next_at) WHERE active",
    // The turn (a next_at) an idle claim has said it will wake for, and the fetch thread it said
    // it for: see FrontierStore's claim.
    "ALTER TABLE pacer_frontier ADD COLUMN IF NOT EXISTS awaited_at timestamptz",
    "ALTER TABLE pacer_frontier ADD COLUMN IF NOT EXISTS awaited_by text",
    "CREATE INDEX IF NOT EXISTS pacer_item_host_open ON pacer_item (job, host, seq)"
        + " WHERE state IN ('pending', 'leased')",
    "CREATE INDEX IF NOT EXISTS pacer_item_host_leased ON pacer_item (job, host)"
        + " WHERE state = 'leased'",
    // An item robots.txt keeps us from (pacer fetch --robots) ends 'skipped', with the reason.
    "ALTER TABLE pacer_item DROP CONSTRAINT IF EXISTS pacer_item_state_check",
    "ALTER TABLE pacer_item ADD CONSTRAINT pacer_item_state_check CHECK (state IN ('pending',"
        + " 'leased', 'done', 'failed', 'deferred', 'skipped'))",
    "CREATE TABLE IF NOT EXISTS pacer_robots (\n"
        + "  job          text        NOT NULL REFERENCES pacer_job (name),\n"
        + "  host         text        NOT NULL,\n"
        + "  state        text        NOT NULL DEFAULT 'wanted'\n"
        + "               CHECK (state IN ('wanted', 'fetching', 'fetched', 'applied',"
        + " 'unavailable')),\n"
        + "  not_before   timestamptz NOT NULL DEFAULT '-infinity',\n"
        + "  leased_by    text,\n"
        + "  lease_until  timestamptz,\n"
        + "  attempts     integer     NOT NULL DEFAULT 0,\n"
        + "  status       integer,                -- robots.txt's HTTP status; null: none came\n"
        + "  body         bytea,                  -- a 2xx's body, as parsed\n"
        + "  fetched_at   timestamptz,\n"
        + "  verdict      text,                   -- what was made of it, for the operator\n"
        + "  PRIMARY KEY (job, host))",
    "CREATE INDEX IF NOT EXISTS pacer_robots_open ON pacer_robots (job, not_before)"
        + " WHERE state IN ('wanted', 'fetching', 'fetched')",
    // The failure bar per host (FrontierStore#countItems): the items counted in the host's window,
    // the failed among them, and why the host was passed over, if it was.
    "ALTER TABLE pacer_frontier ADD COLUMN IF NOT EXISTS bar_items integer NOT NULL DEFAULT 0",
    "ALTER TABLE pacer_frontier ADD COLUMN IF NOT EXISTS bar_failures integer NOT NULL DEFAULT 0",
    "ALTER TABLE pacer_frontier ADD COLUMN IF NOT EXISTS passed_over text",
    "CREATE INDEX IF NOT EXISTS pacer_frontier_passed_over ON pacer_frontier (job, host)"
        + " WHERE passed_over IS NOT NULL",
    // A robots.txt claim made again (its answer lost) finds the host its token leased.
    "ALTER TABLE pacer_robots ADD COLUMN IF NOT EXISTS lease_token text",
    "CREATE INDEX IF NOT EXISTS pacer_robots_lease_token ON pacer_robots (job, lease_token)"
        + " WHERE state = 'fetching'",
    // The last batch each worker appended to the request log: an append made again (its answer
    // lost) finds its batch here and appends nothing.
    "CREATE TABLE IF NOT EXISTS pacer_request_batch (worker text PRIMARY KEY, batch uuid NOT NULL)",
    // A done item's body's SHA-256, and whether a durable point has covered its body since it was
    // recorded (docs/cli.md, "What done promises"). A row done before these columns existed had
    // its body forced before it was recorded: it is durable.
    "ALTER TABLE pacer_item ADD COLUMN IF NOT EXISTS sha256 text",
    "ALTER TABLE pacer_item ADD COLUMN IF NOT EXISTS durable boolean NOT NULL DEFAULT true",
    // The items a run verifies at its start: done, but no durable point seen (an unclean stop).
    "CREATE INDEX IF NOT EXISTS pacer_item_not_durable ON pacer_item (job, finished_at)"
        + " WHERE state = 'done' AND NOT durable",
    // A claim finds the job's next pending items, the leases run out and the items its own tokens
    // leased without walking over the items leased and held, which a worker's buffer makes many
    // (RecordAndClaimStatement).
    "CREATE INDEX IF NOT EXISTS pacer_item_pending ON pacer_item (job, seq)"
        + " WHERE state = 'pending'",
    "CREATE INDEX IF NOT EXISTS pacer_item_lease_until ON pacer_item (job, lease_until)"
        + " WHERE state = 'leased'",
    "CREATE INDEX IF NOT EXISTS pacer_item_lease_token ON pacer_item (job, lease_token)"
        + " WHERE state = 'leased'",
    // An item a worker leased ahead of its threads, per host (FrontierStore#leaseAhead), is not in
    // flight: a host's in-flight cap counts the others, on their own index.
    "ALTER TABLE pacer_item ADD COLUMN IF NOT EXISTS ahead boolean NOT NULL DEFAULT false",
    "CREATE INDEX IF NOT EXISTS pacer_item_host_in_flight ON pacer_item (job, host)"
        + " WHERE state = 'leased' AND NOT ahead",
  };

  private static final long SCHEMA_LOCK = 0x7061636572L; // "pacer"

  /** What the last statement of {@link #SCHEMA} creates. */
  static final String LAST_OBJECT = "pacer_item_host_in_flight";

  private final StoreConnection connection;
  private final ItemStore items;
  private final JobStore jobs;
  private final TripStore trips;
  private final WorkerStore workers;
  private final CursorStatus cursors;
  private final FrontierStore frontier;
  private final RobotsStore robots;
  private final HostStatus hosts;
  private final RequestLog requestLog;

  /** The work state on one connection: for a command that makes one call at a time. */
  public WorkState(Database database) {
    this(new StoreConnection(database));
  }

  /**
   * A worker's work state: up to {@code connections} connections, opened as concurrent calls need
   * them, for fetch threads that claim and record at once; committing asynchronously, but for what
   * someone acts on (see {@link StoreConnection}).
   */
  public static WorkState forWorker(Database database, int connections) {
    return new WorkState(new StoreConnection(database, connections, true));
  }

  private WorkState(StoreConnection connection) {
    // One clock per process's work state: the per-host claims and the request log's readings all
    // sample it, and the request log maps every stamp through it.
    DatabaseClock clock = new DatabaseClock();
    this.connection = connection;
    this.items = new ItemStore(connection);
    this.jobs = new JobStore(connection, items);
    this.trips = new TripStore(connection);
    this.workers = new WorkerStore(connection);
    this.cursors = new CursorStatus(connection, connection.database().cursorPlace());
    this.frontier = new FrontierStore(connection, connection.database().cursorPlace(), clock);
    this.robots = new RobotsStore(connection, connection.database().cursorPlace());
    this.hosts = new HostStatus(connection, connection.database().cursorPlace());
    this.requestLog = new RequestLog(connection, clock);
  }

  public Database database() {
    return connection.database();
  }

  /**
   * Connects (or reconnects) and creates the schema if missing. A complete schema is left alone:
   * {@code ALTER TABLE … IF NOT EXISTS} takes the table's strongest lock even when it changes
   * nothing, and another run enqueueing into that table meanwhile would deadlock with it. The
   * schema's last object stands for the whole of it, since all of it commits at once.
   */
  public void ensureSchema() throws SQLException {
    connection.call(
        c -> {
          c.setAutoCommit(false);
          try (Statement s = c.createStatement()) {
            s.execute("SELECT pg_advisory_xact_lock(" + SCHEMA_LOCK + ")");
            boolean complete;
            try (ResultSet r =
                s.executeQuery("SELECT to_regclass('" + LAST_OBJECT + "') IS NOT NULL")) {
              r.next();
              complete = r.getBoolean(1);
            }
            if (!complete) {
              for (String ddl : SCHEMA) {
                s.execute(ddl);
              }
            }
          }
          c.commit();
          c.setAutoCommit(true);
          return null;
        });
  }

  public ItemStore items() {
    return items;
  }

  public JobStore jobs() {
    return jobs;
  }

  public TripStore trips() {
    return trips;
  }

  public WorkerStore workers() {
    return workers;
  }

  public CursorStatus cursors() {
    return cursors;
  }

  public FrontierStore frontier() {
    return frontier;
  }

  public RobotsStore robots() {
    return robots;
  }

  public HostStatus hosts() {
    return hosts;
  }

  /** The request log, on this work state's connections. */
  public RequestLog requestLog() {
    return requestLog;
  }

  /**
   * Opens every connection this work state may use now, rather than as concurrent calls first need
   * them; see {@link StoreConnection#openAll}.
   *
   * @throws SQLException if one could not be opened; the rest open later, as calls need them
   */
  public void openConnections() throws SQLException {
    connection.openAll();
  }

  @Override
  public void close() {
    connection.close();
  }
}
