/* Test effect (tests/unit/apps): handles Job events {"key": str?, "fail_times": int?,
 * "trap_times": int?}. Every attempt is recorded in its database (autocommit, so failed attempts
 * stay recorded):
 *   attempts(position INTEGER, key TEXT, at_ms INTEGER, worker_order INTEGER)
 * An attempt fails (returns 1) while the event has had at most fail_times attempts, and traps
 * from a frame that holds stack memory while it has had at most trap_times. The partition key
 * is the event's "key" (null without one). */
#include "reef.h"

static const reef_str kTypes[] = {REEF_STR("Job")};

static void query(reef_writer* w) {
  reef_sql_exec("CREATE TABLE IF NOT EXISTS attempts (position INTEGER, key TEXT, at_ms INTEGER)",
                (reef_cbor){NULL, 0});
  reef_write_query(w, 1);
  reef_write_query_item(w, 1, kTypes, 0, NULL);
}

static reef_str partition_key(const reef_event* event) {
  reef_str key = {NULL, 0};
  reef_field_text(event->data, "key", &key);
  return key;
}

/* Takes 256 bytes of the guest stack, then traps before giving them back. */
static __attribute__((noinline)) void trap_with_stack_taken(int64_t n) {
  volatile char frame[256];
  for (int i = 0; i < 256; ++i) frame[i] = (char)(n + i);
  __builtin_trap();
}

static int handle(const reef_event* event) {
  reef_str key = {NULL, 0};
  bool has_key = reef_field_text(event->data, "key", &key) == REEF_OK;
  int64_t fail_times = 0;
  reef_field_int(event->data, "fail_times", &fail_times);
  int64_t trap_times = 0;
  reef_field_int(event->data, "trap_times", &trap_times);
  reef_writer params = reef_writer_new();
  reef_write_list(&params, 3);
  reef_write_int(&params, event->position);
  if (has_key) {
    reef_write_str(&params, key);
  } else {
    reef_write_null(&params);
  }
  reef_write_int(&params, reef_now_ms());
  reef_sql_exec("INSERT INTO attempts (position, key, at_ms) VALUES (?1, ?2, ?3)",
                reef_writer_finish(&params));
  reef_writer p2 = reef_writer_new();
  reef_write_list(&p2, 1);
  reef_write_int(&p2, event->position);
  reef_cbor rows = reef_sql_query("SELECT count(*) AS n FROM attempts WHERE position = ?1",
                                  reef_writer_finish(&p2));
  uint32_t count;
  int64_t n = 0;
  if (reef_read_list(&rows, &count) != REEF_OK || count != 1 ||
      reef_field_int(rows, "n", &n) != REEF_OK) {
    reef_fail("test_effect: unexpected count result");
  }
  if (n <= trap_times) trap_with_stack_taken(n);
  return n <= fail_times ? 1 : REEF_OK;
}

REEF_EFFECT(query, partition_key, handle);
