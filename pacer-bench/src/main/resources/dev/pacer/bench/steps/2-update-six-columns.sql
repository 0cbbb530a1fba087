UPDATE pacer_cursor AS c
SET (next_at, updated_at, reset_from) = (CASE WHEN c.next_at > p.now + p.reset_beyond       AND (c.paused_until IS NULL OR c.next_at > LEAST(c.paused_until, p.now       + 86400000000 * interval '1 microsecond') + p.reset_beyond) THEN p.earliest       ELSE GREATEST(p.now, c.next_at) END + p.gap, p.now, CASE WHEN c.next_at > p.now       + p.reset_beyond AND (c.paused_until IS NULL OR c.next_at > LEAST(c.paused_until, p.now       + 86400000000 * interval '1 microsecond') + p.reset_beyond) THEN c.next_at END)
FROM (SELECT ?::text AS key,
        ?::bigint * interval '1 microsecond' AS gap,
        ?::bigint * interval '1 microsecond' AS reset_beyond,
        ?::bigint * interval '1 microsecond' AS max_wait,
        clock.now,
        clock.now + ?::bigint * interval '1 microsecond' AS earliest
  FROM (SELECT clock_timestamp() AS now) AS clock) AS p
WHERE c.name = p.key AND c.lockout_read AND c.lockout IS NULL
  AND (p.max_wait IS NULL OR CASE WHEN c.next_at > p.now + p.reset_beyond       AND (c.paused_until IS NULL OR c.next_at > LEAST(c.paused_until, p.now       + 86400000000 * interval '1 microsecond') + p.reset_beyond) THEN p.earliest       ELSE GREATEST(p.now, c.next_at) END <= p.now + p.max_wait)
RETURNING (extract(epoch FROM c.next_at - p.gap - p.now) * 1000000)::bigint AS wait_micros,
  (CASE WHEN c.reset_from IS NOT NULL THEN extract(epoch FROM       LEAST(GREATEST(c.reset_from, p.now - interval '100 years'),       p.now + interval '100 years') - p.now) END * 1000000)::bigint AS prior_ahead_micros,
  c.reset_from IS NOT NULL AS prior_existed,
  (extract(epoch FROM p.now) * 1000000)::bigint AS now_micros,
  c.lockout AS lockout_reason,
  NULL::smallint AS fleet_backoff
