/* Test projector (tests/unit/apps): records every Tick it projects, with its version, so tests
 * can check exactly-once, rolling upgrades and replays; fails on a Poison event; runs the SQL of
 * a Meddle event (which the host must refuse when it touches transactions or reef_* tables).
 *   ticks(position INTEGER, version INTEGER, n INTEGER)   one row per projected Tick
 * A Tick's n is its data's "n", else its application metadata's "n", else 0.
 * Built twice: TEST_VERSION=1 and TEST_VERSION=2 (test_projector_v1.wasm, _v2.wasm). */
#include "reef.h"

static const reef_str kTypes[] = {REEF_STR("Tick"), REEF_STR("Poison"), REEF_STR("Meddle")};

static void query(reef_writer* w) {
  reef_sql_exec("CREATE TABLE IF NOT EXISTS ticks (position INTEGER, version INTEGER, n INTEGER)",
                (reef_cbor){NULL, 0});
  reef_write_query(w, 1);
  reef_write_query_item(w, 3, kTypes, 0, NULL);
}

static int project(const reef_event* event) {
  if (reef_str_eq(event->type, "Poison")) {
    reef_sql_exec("INSERT INTO ticks (position, version, n) VALUES (-1, -1, -1)",
                  (reef_cbor){NULL, 0});
    return 7; /* fails: the insert above must be rolled back */
  }
  if (reef_str_eq(event->type, "Meddle")) {
    /* Runs the SQL text in the event's "sql": the host must refuse it (transactions, the host's
     * reef_* tables), which fails the handler. */
    reef_str sql;
    if (reef_field_text(event->data, "sql", &sql) != REEF_OK) return 3;
    char* z = (char*)reef_arena_alloc(sql.len + 1);
    __builtin_memcpy(z, sql.ptr, sql.len);
    z[sql.len] = '\0';
    reef_sql_exec(z, (reef_cbor){NULL, 0});
    return REEF_OK;
  }
  int64_t n = 0;
  if (reef_field_int(event->data, "n", &n) != REEF_OK) reef_field_int(event->metadata, "n", &n);
  reef_writer params = reef_writer_new();
  reef_write_list(&params, 3);
  reef_write_int(&params, event->position);
  reef_write_int(&params, TEST_VERSION);
  reef_write_int(&params, n);
  reef_sql_exec("INSERT INTO ticks (position, version, n) VALUES (?1, ?2, ?3)",
                reef_writer_finish(&params));
  return REEF_OK;
}

REEF_PROJECTOR(query, project);
