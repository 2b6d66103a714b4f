// The PostgreSQL event store's schema (pg_core.h): tables, the append function, the read
// barrier's functions, and the migrations that create them (pg::Migrate: versions recorded in
// reef_schema, processes starting together take turns; docs/operations.md "PostgreSQL").
#include "events/pg/pg_core.h"

namespace reef::events::pg_store {

namespace {

// Version 1. Positions come from reef_event_positions; reef_event_tags holds one row per
// (tag, event) for the conditions' and reads' tag lookups; xid is the transaction that wrote
// the event (a retry is recognized as the whole of one earlier append).
constexpr const char* kSchemaV1 = R"sql(
CREATE SEQUENCE reef_event_positions AS bigint MINVALUE 1 CACHE 1;
CREATE TABLE reef_events (
  position bigint PRIMARY KEY DEFAULT nextval('reef_event_positions'),
  id uuid NOT NULL UNIQUE,
  type text NOT NULL,
  tags text[] NOT NULL,
  data bytea NOT NULL,
  timestamp_ms bigint NOT NULL,
  correlation_id text NOT NULL,
  causation_id text NOT NULL,
  idempotency_key text NOT NULL,
  user_metadata text NOT NULL,
  xid xid8 NOT NULL DEFAULT pg_current_xact_id()
);
CREATE INDEX reef_events_by_type ON reef_events (type, position);
CREATE INDEX reef_events_by_xid ON reef_events (xid);
CREATE TABLE reef_event_tags (
  tag text NOT NULL,
  position bigint NOT NULL,
  PRIMARY KEY (tag, position)
);

-- The first half of an append, in the caller's transaction: the advisory locks (p_keys in
-- the order given, sorted by the caller; exclusive where p_exclusive), the condition, then the
-- barrier key, held until commit. Condition: none when p_after is NULL; else item i is the
-- types p_cond_types[p_cond_type_ends[i-1]+1 .. p_cond_type_ends[i]] and tags likewise, and no
-- items means every event. Error RFCON (DETAIL: the first matching position) when it fails.
-- Every statement here plans well generically (plpgsql caches plans): index lookups by one
-- key, no "= ANY" over an array of unknown size.
CREATE FUNCTION reef_append_check(
  p_keys bigint[], p_exclusive boolean[], p_barrier bigint,
  p_after bigint, p_cond_types text[], p_cond_type_ends int[], p_cond_tags text[],
  p_cond_tag_ends int[])
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  i int;
  v_candidate bigint;
  v_type text;
  v_types text[];
  v_tags text[];
  v_hit bigint;
BEGIN
  FOR i IN 1 .. coalesce(array_length(p_keys, 1), 0) LOOP
    IF p_exclusive[i] THEN
      PERFORM pg_advisory_xact_lock(p_keys[i]);
    ELSE
      PERFORM pg_advisory_xact_lock_shared(p_keys[i]);
    END IF;
  END LOOP;
  IF p_after IS NOT NULL THEN
    IF coalesce(array_length(p_cond_type_ends, 1), 0) = 0 THEN
      SELECT position INTO v_hit FROM reef_events WHERE position > p_after
        ORDER BY position LIMIT 1;
    ELSE
      FOR i IN 1 .. array_length(p_cond_type_ends, 1) LOOP
        v_types := p_cond_types[coalesce(p_cond_type_ends[i - 1], 0) + 1 : p_cond_type_ends[i]];
        v_tags := p_cond_tags[coalesce(p_cond_tag_ends[i - 1], 0) + 1 : p_cond_tag_ends[i]];
        IF cardinality(v_tags) = 0 THEN
          FOREACH v_type IN ARRAY v_types LOOP
            SELECT position INTO v_hit FROM reef_events
              WHERE type = v_type AND position > p_after ORDER BY position LIMIT 1;
            EXIT WHEN v_hit IS NOT NULL;
          END LOOP;
        ELSE
          -- The events carrying the item's first tag after p_after, in order, each checked for
          -- the rest (no join: a generic plan could walk reef_events in position order instead).
          FOR v_candidate IN SELECT position FROM reef_event_tags
              WHERE tag = v_tags[1] AND position > p_after ORDER BY position LOOP
            SELECT position INTO v_hit FROM reef_events
              WHERE position = v_candidate AND tags @> v_tags
                AND (cardinality(v_types) = 0 OR type = ANY(v_types));
            EXIT WHEN v_hit IS NOT NULL;
          END LOOP;
        END IF;
        EXIT WHEN v_hit IS NOT NULL;
      END LOOP;
    END IF;
    IF v_hit IS NOT NULL THEN
      RAISE EXCEPTION 'append condition failed: event % matches', v_hit
        USING ERRCODE = 'RFCON', DETAIL = v_hit::text;
    END IF;
  END IF;
  -- In flight from here until commit: readers wait for this transaction (the read barrier).
  PERFORM pg_advisory_xact_lock_shared(p_barrier);
END $$;

-- Positions for an append of p_count events: one block, adjacent, the first returned. A block
-- of more than one is drawn under a session lock (p_draw_key, held for two sequence calls),
-- which single draws take shared: a nextval between another append's nextval and setval would
-- land inside that block. Called after reef_append_check (the barrier key
-- held). The sequence must not cache values (CACHE 1): the read barrier reads its last value.
CREATE FUNCTION reef_draw_positions(p_count int, p_draw_key bigint) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
  v_first bigint;
BEGIN
  IF p_count <= 1 THEN
    -- One nextval is atomic; it only must not fall between another append's nextval and
    -- setval: shared, so single appends do not wait for each other.
    PERFORM pg_advisory_lock_shared(p_draw_key);
    v_first := nextval('reef_event_positions');
    PERFORM pg_advisory_unlock_shared(p_draw_key);
    RETURN v_first;
  END IF;
  PERFORM pg_advisory_lock(p_draw_key);
  v_first := nextval('reef_event_positions');
  PERFORM setval('reef_event_positions', v_first + p_count - 1);
  PERFORM pg_advisory_unlock(p_draw_key);
  RETURN v_first;
END $$;

-- One append of a few events in one call (a larger one: reef_append_check, then COPY).
-- Events: parallel arrays; event i's tags are p_tags[p_tag_ends[i-1]+1 .. p_tag_ends[i]].
-- Errors: those of reef_append_check; a unique violation when an id is already stored.
-- Returns the last position written.
CREATE FUNCTION reef_append(
  p_ids uuid[], p_types text[], p_tags text[], p_tag_ends int[], p_data bytea[], p_ts bigint[],
  p_corr text[], p_caus text[], p_idem text[], p_user text[],
  p_keys bigint[], p_exclusive boolean[], p_barrier bigint,
  p_after bigint, p_cond_types text[], p_cond_type_ends int[], p_cond_tags text[],
  p_cond_tag_ends int[])
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  v_first bigint;
  v_last bigint;
BEGIN
  PERFORM reef_append_check(p_keys, p_exclusive, p_barrier, p_after, p_cond_types,
                            p_cond_type_ends, p_cond_tags, p_cond_tag_ends);
  v_first := reef_draw_positions(cardinality(p_ids), p_barrier + 2);
  WITH rows AS (
    SELECT v_first + n - 1 AS position, u.*
    FROM unnest(p_ids, p_types, p_data, p_ts, p_corr, p_caus, p_idem, p_user)
      WITH ORDINALITY AS u(id, type, data, ts, corr, caus, idem, usr, n)
  ), ins AS (
    INSERT INTO reef_events (position, id, type, tags, data, timestamp_ms, correlation_id,
                             causation_id, idempotency_key, user_metadata)
    SELECT position, id, type, p_tags[coalesce(p_tag_ends[n - 1], 0) + 1 : p_tag_ends[n]],
           data, ts, corr, caus, idem, usr FROM rows
    RETURNING position, tags
  ), tagged AS (
    INSERT INTO reef_event_tags (tag, position)
    SELECT t, ins.position FROM ins, unnest(ins.tags) AS t
  )
  SELECT max(position) INTO v_last FROM ins;
  RETURN v_last;
END $$;

-- The read barrier: waits (at most lock_timeout) until no append holds the barrier key, then
-- reads the sequence. Every append that drew a position at or below the value returned took
-- the key first and has finished, so every such position is settled. Appends that start
-- meanwhile wait for this statement, which holds the key for an instant.
CREATE FUNCTION reef_safe_head(p_barrier bigint) RETURNS bigint
LANGUAGE plpgsql SET lock_timeout = '50ms' AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(p_barrier);
  RETURN (SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM reef_event_positions);
END $$;
)sql";

// Version 2: several appends in one transaction (reef_append_group). An event records the
// first position of its append (append_first), since one transaction may now hold several;
// events written by version 1 have none (each of its transactions held one append, xid tells).
// The parts of an append become functions of their own, shared by reef_append and the group.
constexpr const char* kSchemaV2 = R"sql(
ALTER TABLE reef_events ADD COLUMN append_first bigint;

-- Takes the advisory locks p_keys in the order given (sorted by the caller), exclusive where
-- p_exclusive, held until commit.
CREATE FUNCTION reef_take_locks(p_keys bigint[], p_exclusive boolean[])
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  FOR i IN 1 .. coalesce(array_length(p_keys, 1), 0) LOOP
    IF p_exclusive[i] THEN
      PERFORM pg_advisory_xact_lock(p_keys[i]);
    ELSE
      PERFORM pg_advisory_xact_lock_shared(p_keys[i]);
    END IF;
  END LOOP;
END $$;

-- The first position after p_after of an event matching condition items p_first .. p_last,
-- or NULL when none. Item i is the types p_cond_types[p_cond_type_ends[i-1]+1 ..
-- p_cond_type_ends[i]] and tags likewise; no items (p_first > p_last) match every event.
-- Every statement here plans well generically (plpgsql caches plans): index lookups by one
-- key, no "= ANY" over an array of unknown size.
CREATE FUNCTION reef_condition_hit(
  p_after bigint, p_first int, p_last int, p_cond_types text[], p_cond_type_ends int[],
  p_cond_tags text[], p_cond_tag_ends int[])
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  v_candidate bigint;
  v_type text;
  v_types text[];
  v_tags text[];
  v_hit bigint;
BEGIN
  IF p_first > p_last THEN
    SELECT position INTO v_hit FROM reef_events WHERE position > p_after
      ORDER BY position LIMIT 1;
    RETURN v_hit;
  END IF;
  FOR i IN p_first .. p_last LOOP
    v_types := p_cond_types[coalesce(p_cond_type_ends[i - 1], 0) + 1 : p_cond_type_ends[i]];
    v_tags := p_cond_tags[coalesce(p_cond_tag_ends[i - 1], 0) + 1 : p_cond_tag_ends[i]];
    IF cardinality(v_tags) = 0 THEN
      FOREACH v_type IN ARRAY v_types LOOP
        SELECT position INTO v_hit FROM reef_events
          WHERE type = v_type AND position > p_after ORDER BY position LIMIT 1;
        IF v_hit IS NOT NULL THEN RETURN v_hit; END IF;
      END LOOP;
    ELSE
      -- The events carrying the item's first tag after p_after, in order, each checked for
      -- the rest (no join: a generic plan could walk reef_events in position order instead).
      FOR v_candidate IN SELECT position FROM reef_event_tags
          WHERE tag = v_tags[1] AND position > p_after ORDER BY position LOOP
        SELECT position INTO v_hit FROM reef_events
          WHERE position = v_candidate AND tags @> v_tags
            AND (cardinality(v_types) = 0 OR type = ANY(v_types));
        IF v_hit IS NOT NULL THEN RETURN v_hit; END IF;
      END LOOP;
    END IF;
  END LOOP;
  RETURN NULL;
END $$;

-- The first half of an append, in the caller's transaction: the locks, the condition (none
-- when p_after is NULL; items 1 .. all), then the barrier key, held until commit.
-- Error RFCON (DETAIL: the first matching position) when the condition fails.
CREATE OR REPLACE FUNCTION reef_append_check(
  p_keys bigint[], p_exclusive boolean[], p_barrier bigint,
  p_after bigint, p_cond_types text[], p_cond_type_ends int[], p_cond_tags text[],
  p_cond_tag_ends int[])
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  v_hit bigint;
BEGIN
  PERFORM reef_take_locks(p_keys, p_exclusive);
  IF p_after IS NOT NULL THEN
    v_hit := reef_condition_hit(p_after, 1, coalesce(array_length(p_cond_type_ends, 1), 0),
                                p_cond_types, p_cond_type_ends, p_cond_tags, p_cond_tag_ends);
    IF v_hit IS NOT NULL THEN
      RAISE EXCEPTION 'append condition failed: event % matches', v_hit
        USING ERRCODE = 'RFCON', DETAIL = v_hit::text;
    END IF;
  END IF;
  -- In flight from here until commit: readers wait for this transaction (the read barrier).
  PERFORM pg_advisory_xact_lock_shared(p_barrier);
END $$;

-- Writes events p_from .. p_to of the arrays (as reef_append's) at positions p_first, ...;
-- returns the last position.
CREATE FUNCTION reef_write_events(
  p_first bigint, p_from int, p_to int, p_ids uuid[], p_types text[], p_tags text[],
  p_tag_ends int[], p_data bytea[], p_ts bigint[], p_corr text[], p_caus text[], p_idem text[],
  p_user text[])
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  v_last bigint;
BEGIN
  WITH rows AS (
    SELECT p_first + n - 1 AS position, p_from + n - 1 AS k, u.*
    FROM unnest(p_ids[p_from : p_to], p_types[p_from : p_to], p_data[p_from : p_to],
                p_ts[p_from : p_to], p_corr[p_from : p_to], p_caus[p_from : p_to],
                p_idem[p_from : p_to], p_user[p_from : p_to])
      WITH ORDINALITY AS u(id, type, data, ts, corr, caus, idem, usr, n)
  ), ins AS (
    INSERT INTO reef_events (position, id, type, tags, data, timestamp_ms, correlation_id,
                             causation_id, idempotency_key, user_metadata, append_first)
    SELECT position, id, type, p_tags[coalesce(p_tag_ends[k - 1], 0) + 1 : p_tag_ends[k]],
           data, ts, corr, caus, idem, usr, p_first FROM rows
    RETURNING position, tags
  ), tagged AS (
    INSERT INTO reef_event_tags (tag, position)
    SELECT t, ins.position FROM ins, unnest(ins.tags) AS t
  )
  SELECT max(position) INTO v_last FROM ins;
  RETURN v_last;
END $$;

CREATE OR REPLACE FUNCTION reef_append(
  p_ids uuid[], p_types text[], p_tags text[], p_tag_ends int[], p_data bytea[], p_ts bigint[],
  p_corr text[], p_caus text[], p_idem text[], p_user text[],
  p_keys bigint[], p_exclusive boolean[], p_barrier bigint,
  p_after bigint, p_cond_types text[], p_cond_type_ends int[], p_cond_tags text[],
  p_cond_tag_ends int[])
RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
  PERFORM reef_append_check(p_keys, p_exclusive, p_barrier, p_after, p_cond_types,
                            p_cond_type_ends, p_cond_tags, p_cond_tag_ends);
  RETURN reef_write_events(reef_draw_positions(cardinality(p_ids), p_barrier + 2), 1,
                           cardinality(p_ids), p_ids, p_types, p_tags, p_tag_ends, p_data, p_ts,
                           p_corr, p_caus, p_idem, p_user);
END $$;

-- Several appends in one transaction, one after the other, each seeing those before it.
-- Events: reef_append's arrays for all of them; append a's are p_event_ends[a-1]+1 ..
-- p_event_ends[a]. p_keys: the union of their lock keys, sorted. Append a's condition: none
-- when p_after[a] is negative, else items p_item_ends[a-1]+1 .. p_item_ends[a] of the condition
-- arrays (as reef_append_check's). Returns one value per append: its last position, or minus
-- the first matching position when its condition failed (that append writes nothing; the
-- others still do). The barrier key is taken before the first position is drawn.
-- Errors (none written): a unique violation when an id is already stored; lock_not_available
-- when one of the appends' keys stays held elsewhere past p_lock_timeout_ms (the caller then
-- sends each append alone, so that only the appends needing that key wait for it).
CREATE FUNCTION reef_append_group(
  p_ids uuid[], p_types text[], p_tags text[], p_tag_ends int[], p_data bytea[], p_ts bigint[],
  p_corr text[], p_caus text[], p_idem text[], p_user text[], p_event_ends int[],
  p_keys bigint[], p_exclusive boolean[], p_barrier bigint, p_after bigint[], p_item_ends int[],
  p_cond_types text[], p_cond_type_ends int[], p_cond_tags text[], p_cond_tag_ends int[],
  p_lock_timeout_ms int)
RETURNS SETOF bigint LANGUAGE plpgsql AS $$
DECLARE
  v_from int;
  v_to int;
  v_hit bigint;
  v_in_flight boolean := false;
  v_lock_timeout text := current_setting('lock_timeout');
BEGIN
  -- The short timeout covers the appends' keys only (not the barrier, the draw lock or an id
  -- another transaction is inserting); set_config(..., true) ends with the transaction anyway.
  PERFORM set_config('lock_timeout', p_lock_timeout_ms || 'ms', true);
  PERFORM reef_take_locks(p_keys, p_exclusive);
  PERFORM set_config('lock_timeout', v_lock_timeout, true);
  FOR a IN 1 .. coalesce(array_length(p_event_ends, 1), 0) LOOP
    v_hit := NULL;
    IF p_after[a] >= 0 THEN
      v_hit := reef_condition_hit(p_after[a], coalesce(p_item_ends[a - 1], 0) + 1,
                                  p_item_ends[a], p_cond_types, p_cond_type_ends, p_cond_tags,
                                  p_cond_tag_ends);
    END IF;
    IF v_hit IS NOT NULL THEN
      RETURN NEXT -v_hit;
    ELSE
      IF NOT v_in_flight THEN
        -- In flight from here until commit (the read barrier).
        PERFORM pg_advisory_xact_lock_shared(p_barrier);
        v_in_flight := true;
      END IF;
      v_from := coalesce(p_event_ends[a - 1], 0) + 1;
      v_to := p_event_ends[a];
      RETURN NEXT reef_write_events(reef_draw_positions(v_to - v_from + 1, p_barrier + 2),
                                    v_from, v_to, p_ids, p_types, p_tags, p_tag_ends, p_data,
                                    p_ts, p_corr, p_caus, p_idem, p_user);
    END IF;
  END LOOP;
END $$;
)sql";

// Version 3: reef_append_one, a lone append of one event in one plpgsql call without nested
// calls on its common path, the event's fields as scalars (an array parameter costs the server
// more to receive). Measured against a group of one (one session, 2026-12-05, fsync on): about
// 275 against 327 us per call, the INSERT anchor 174 us (docs/benchmarks.md "PostgreSQL").
// Never change a function's result type in place: prepared calls of it on running nodes would
// fail (pg::Connection::RunPrepared then runs them unprepared). Its keys are first tried without
// waiting in one statement (taken in order, stopping at the first held elsewhere); only then does
// it set the short lock_timeout and wait for the rest, in the same order. A condition item with
// tags first asks the tag index whether any event carries its first tag after p_after: usually none
// does, and the item's full check (reef_condition_hit) is skipped.
constexpr const char* kSchemaV3 = R"sql(
-- An append of one event (its fields, its tags p_tags), with reef_append's lock keys and
-- condition and reef_append_group's lock wait (p_lock_timeout_ms for the keys only). Returns
-- its position, or minus the first matching position when its condition failed (nothing
-- written). Errors (none written): a
-- unique violation when an id is already stored; lock_not_available when a key stays held
-- elsewhere past p_lock_timeout_ms.
CREATE FUNCTION reef_append_one(
  p_id uuid, p_type text, p_tags text[], p_data bytea, p_ts bigint, p_corr text, p_caus text,
  p_idem text, p_user text, p_keys bigint[], p_exclusive boolean[], p_barrier bigint,
  p_after bigint, p_cond_types text[], p_cond_type_ends int[], p_cond_tags text[],
  p_cond_tag_ends int[], p_lock_timeout_ms int)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  v_busy bigint;
  v_hit bigint;
  v_position bigint;
  v_lock_timeout text;
BEGIN
  -- LIMIT 1 stops at the first key held elsewhere: the keys after it are not tried.
  SELECT n INTO v_busy FROM unnest(p_keys, p_exclusive) WITH ORDINALITY AS u(k, x, n)
    WHERE NOT CASE WHEN x THEN pg_try_advisory_xact_lock(k)
                   ELSE pg_try_advisory_xact_lock_shared(k) END
    LIMIT 1;
  IF v_busy IS NOT NULL THEN
    v_lock_timeout := current_setting('lock_timeout');
    PERFORM set_config('lock_timeout', p_lock_timeout_ms || 'ms', true);
    PERFORM reef_take_locks(p_keys[v_busy :], p_exclusive[v_busy :]);
    PERFORM set_config('lock_timeout', v_lock_timeout, true);
  END IF;
  IF p_after IS NOT NULL THEN
    IF coalesce(array_length(p_cond_type_ends, 1), 0) = 0 THEN
      v_hit := reef_condition_hit(p_after, 1, 0, p_cond_types, p_cond_type_ends, p_cond_tags,
                                  p_cond_tag_ends);
    END IF;
    FOR i IN 1 .. coalesce(array_length(p_cond_type_ends, 1), 0) LOOP
      CONTINUE WHEN p_cond_tag_ends[i] > coalesce(p_cond_tag_ends[i - 1], 0) AND NOT EXISTS (
        SELECT FROM reef_event_tags
        WHERE tag = p_cond_tags[coalesce(p_cond_tag_ends[i - 1], 0) + 1] AND position > p_after);
      v_hit := reef_condition_hit(p_after, i, i, p_cond_types, p_cond_type_ends, p_cond_tags,
                                  p_cond_tag_ends);
      EXIT WHEN v_hit IS NOT NULL;
    END LOOP;
    IF v_hit IS NOT NULL THEN
      RETURN -v_hit;
    END IF;
  END IF;
  -- In flight from here until commit (the read barrier); the position as reef_draw_positions
  -- draws a single one.
  PERFORM pg_advisory_xact_lock_shared(p_barrier);
  PERFORM pg_advisory_lock_shared(p_barrier + 2);
  v_position := nextval('reef_event_positions');
  PERFORM pg_advisory_unlock_shared(p_barrier + 2);
  WITH event AS (
    INSERT INTO reef_events (position, id, type, tags, data, timestamp_ms, correlation_id,
                             causation_id, idempotency_key, user_metadata, append_first)
    VALUES (v_position, p_id, p_type, p_tags, p_data, p_ts, p_corr, p_caus, p_idem, p_user,
            v_position)
  )
  INSERT INTO reef_event_tags (tag, position) SELECT t, v_position FROM unnest(p_tags) AS t;
  RETURN v_position;
END $$;
)sql";

constexpr const char* kMigrations[] = {kSchemaV1, kSchemaV2, kSchemaV3};

}  // namespace

std::span<const char* const> EventSchemaMigrations() {
  return kMigrations;
}

Status MigrateEventSchema(pg::Connection& conn) {
  return pg::Migrate(conn, "events", "event store", kMigrations);
}

}  // namespace reef::events::pg_store
