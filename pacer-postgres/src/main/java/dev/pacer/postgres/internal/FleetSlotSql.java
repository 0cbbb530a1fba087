package dev.pacer.postgres.internal;

/**
 * The SQL of the fleet slots: one row per slot of a destination, {@code (destination, slot, holder,
 * token, expires_at)}, primary key {@code (destination, slot)}. A slot is free when it has no
 * holder or its lease has run out ({@code expires_at < now()}, on the database's clock, so no two
 * hosts need agree on the time). Rows are created on demand, up to the cap a taker asks for; slots
 * numbered at or above a smaller cap are simply never taken again.
 *
 * <p><b>Take</b>, one statement: find the lowest free slot below the cap and lock it ({@code FOR
 * UPDATE SKIP LOCKED}, so takers racing for a slot never wait for each other: the loser looks at
 * the next one), then either write the taker's holder, token and expiry into it, or, if no row was
 * free, insert the lowest slot number that has no row yet ({@code ON CONFLICT DO NOTHING}: two
 * takers creating the same slot, one gets it and the other nothing). Returns the slot taken, or no
 * row when every slot below the cap is held. Under READ COMMITTED, a row another taker changed
 * between this statement's snapshot and its lock is re-read and its WHERE re-checked, so a slot is
 * never handed to two takers.
 *
 * <p><b>A take made again finds its slot.</b> The token is the taker's, chosen before the take. A
 * take whose answer was lost with its connection after it committed, and that is made again with
 * the same token, finds the row that token holds ({@code mine}), renews its lease and answers its
 * slot, and takes nothing else: otherwise the first slot would stay held, by nobody who knows it,
 * until its lease ran out, and the fleet would run one request short of its cap meanwhile.
 *
 * <p>Parameters of {@link #take()}, in order: destination (text), slots (int), holder (text), token
 * (uuid), lease (bigint milliseconds). The {@code p} CTE names them once; the statements compare
 * with scalar subqueries on it, which the planner treats as parameters, so the primary key's index
 * answers them.
 */
public final class FleetSlotSql {

  public static final String DEFAULT_TABLE = "pacer_fleet_slot";

  private final String table;
  private final String createTable;
  private final String take;
  private final String giveBack;
  private final String renew;
  private final String holdings;

  public FleetSlotSql(String table) {
    this.table = SqlIdentifiers.qualifiedName("fleet slot table", table);
    this.createTable =
        "CREATE TABLE IF NOT EXISTS "
            + table
            + " (destination text NOT NULL,"
            + " slot int NOT NULL, holder text, token uuid, expires_at timestamptz NOT NULL,"
            + " PRIMARY KEY (destination, slot))";
    this.take =
        "WITH p AS (SELECT CAST(? AS text) AS destination, CAST(? AS int) AS slots,"
            + " CAST(? AS text) AS holder, CAST(? AS uuid) AS token,"
            + " now() + CAST(? AS bigint) * interval '1 millisecond' AS expires_at),"
            + " mine AS (UPDATE "
            + table
            + " SET expires_at = (SELECT expires_at FROM p)"
            + " WHERE destination = (SELECT destination FROM p) AND token = (SELECT token FROM p)"
            + " RETURNING slot),"
            + " free AS (SELECT slot FROM "
            + table
            + " WHERE destination = (SELECT destination FROM p) AND slot < (SELECT slots FROM p)"
            + " AND (holder IS NULL OR expires_at < now()) AND NOT EXISTS (SELECT 1 FROM mine)"
            + " ORDER BY slot LIMIT 1 FOR UPDATE SKIP LOCKED),"
            + " taken AS (UPDATE "
            + table
            + " SET holder = (SELECT holder FROM p),"
            + " token = (SELECT token FROM p), expires_at = (SELECT expires_at FROM p)"
            + " WHERE destination = (SELECT destination FROM p) AND slot = (SELECT slot FROM free)"
            + " RETURNING slot),"
            + " created AS (INSERT INTO "
            + table
            + " (destination, slot, holder, token, expires_at)"
            + " SELECT p.destination, g, p.holder, p.token, p.expires_at"
            + " FROM p, generate_series(0, p.slots - 1) AS g"
            + " WHERE NOT EXISTS (SELECT 1 FROM free) AND NOT EXISTS (SELECT 1 FROM mine)"
            + " AND NOT EXISTS (SELECT 1 FROM "
            + table
            + " s"
            + " WHERE s.destination = (SELECT destination FROM p) AND s.slot = g)"
            + " ORDER BY g LIMIT 1 ON CONFLICT DO NOTHING RETURNING slot)"
            + " SELECT slot FROM mine UNION ALL SELECT slot FROM taken"
            + " UNION ALL SELECT slot FROM created";
    this.giveBack =
        "UPDATE "
            + table
            + " SET holder = NULL, token = NULL, expires_at = now()"
            + " WHERE destination = ? AND slot = ? AND token = ?";
    // By token alone: the table holds a few rows per capped destination, and a token is never
    // reused, so a slot that expired and went to another holder is never extended.
    this.renew =
        "UPDATE "
            + table
            + " SET expires_at = now() + CAST(? AS bigint) * interval '1 millisecond'"
            + " WHERE token = ANY(?) RETURNING token";
    this.holdings =
        "SELECT destination, count(*), count(DISTINCT holder) FROM "
            + table
            + " WHERE holder IS NOT NULL AND expires_at >= now() GROUP BY destination"
            + " ORDER BY destination";
  }

  public String createTable() {
    return createTable;
  }

  /** See the class comment; returns the slot taken, or no row. */
  public String take() {
    return take;
  }

  /** Parameters: destination, slot, token. Frees the slot if that token still holds it. */
  public String giveBack() {
    return giveBack;
  }

  /**
   * Parameters: lease (bigint milliseconds), tokens (uuid[]). Returns the tokens renewed: one not
   * returned holds no slot any more (its lease ran out and another holder took the slot).
   */
  public String renew() {
    return renew;
  }

  /** Live leases per destination: destination, slots held, distinct holders. */
  public String holdings() {
    return holdings;
  }

  @Override
  public String toString() {
    return table;
  }
}
