WITH p AS MATERIALIZED (
  SELECT ask.*, (SELECT l.reason FROM pacer_cursor_lockout l WHERE l.name = ask.key) AS lockout
  FROM (SELECT ?::text AS key,
         ?::bigint * interval '1 microsecond' AS gap,
         ?::bigint * interval '1 microsecond' AS reset_beyond,
         ?::bigint * interval '1 microsecond' AS max_wait,
         clock.now,
         clock.now + ?::bigint * interval '1 microsecond' AS earliest
    FROM (SELECT clock_timestamp() AS now) AS clock) AS ask),
turn AS (
  INSERT INTO pacer_cursor AS c (name, next_at, updated_at)
  SELECT p.key, p.earliest + p.gap, p.now FROM p
  WHERE p.lockout IS NULL AND (p.max_wait IS NULL OR p.earliest <= p.now + p.max_wait OR EXISTS (SELECT 1 FROM pacer_cursor x WHERE x.name = p.key))
  ON CONFLICT (name) DO UPDATE
    SET (next_at, updated_at, reset_from) = (SELECT CASE WHEN c.next_at > p.now + p.reset_beyond AND (c.paused_until IS NULL OR c.next_at > LEAST(c.paused_until, p.now + 86400000000 * interval '1 microsecond') + p.reset_beyond) THEN p.earliest ELSE GREATEST(p.now, c.next_at) END + p.gap, p.now, CASE WHEN c.next_at > p.now + p.reset_beyond AND (c.paused_until IS NULL OR c.next_at > LEAST(c.paused_until, p.now + 86400000000 * interval '1 microsecond') + p.reset_beyond) THEN c.next_at END FROM p)
    WHERE (SELECT p.max_wait IS NULL OR CASE WHEN c.next_at > p.now + p.reset_beyond AND (c.paused_until IS NULL OR c.next_at > LEAST(c.paused_until, p.now + 86400000000 * interval '1 microsecond') + p.reset_beyond) THEN p.earliest ELSE GREATEST(p.now, c.next_at) END <= p.now + p.max_wait FROM p)
  RETURNING c.next_at, c.reset_from)
SELECT (extract(epoch FROM turn.next_at - p.gap - p.now) * 1000000)::bigint AS wait_micros,
       (CASE WHEN turn.reset_from IS NOT NULL THEN extract(epoch FROM LEAST(GREATEST(turn.reset_from, p.now - interval '100 years'), p.now + interval '100 years') - p.now) END * 1000000)::bigint AS prior_ahead_micros,
       turn.reset_from IS NOT NULL AS prior_existed,
       (extract(epoch FROM p.now) * 1000000)::bigint AS now_micros,
       p.lockout AS lockout_reason,
       NULL::smallint AS fleet_backoff
FROM p LEFT JOIN turn ON true
