/* Fan-out/fan-in actors for the actor benchmarks (bench/actor_bench.cc, docs/benchmarks.md):
 * one module, two roles, chosen by the message.
 *
 * State: an integer, the number of messages handled that count (see below).
 * Messages:
 *   {"op": "start", "workers": [@W, ...]}  coordinator: sends {"op": "ping"} to every worker
 *                                          (a round); state unchanged
 *   {"op": "ping"}                         worker: replies {"op": "pong"} to the sender;
 *                                          state + 1
 *   {"op": "pong"}                         coordinator: one reply collected; state + 1
 * The host starts a round and waits until the coordinator's state has grown by the number of
 * workers. Anything else fails the invocation. */
#include "reef.h"

enum { FIELD_OP, FIELD_WORKERS, FIELD_COUNT };
static const reef_str kKeys[FIELD_COUNT] = {REEF_STR("op"), REEF_STR("workers")};

/* Sends the one-field record {"op": op} to `target`, with this actor as the sender. */
static void send_op(const reef_actor_ref* target, const char* op) {
  reef_writer w = reef_writer_new();
  reef_write_record(&w, 1);
  reef_write_cstr(&w, "op");
  reef_write_cstr(&w, op);
  int rc = reef_send(target, reef_writer_finish(&w));
  if (rc != REEF_OK) reef_failf("fanout: send '%s' failed: %s", op, reef_strerror(rc));
}

static reef_cbor handle(reef_cbor state, reef_cbor sender, reef_cbor message) {
  int64_t count;
  if (reef_read_int(&state, &count) != REEF_OK) reef_fail("fanout: state must be an integer");
  reef_cbor field[FIELD_COUNT];
  reef_str op;
  int rc = reef_fields(message, FIELD_COUNT, kKeys, field);
  if ((rc != REEF_OK && rc != REEF_E_NOT_FOUND) ||
      reef_read_text(&field[FIELD_OP], &op) != REEF_OK) {
    reef_fail("fanout: message must be a record with a text field 'op'");
  }
  if (reef_str_eq(op, "ping")) {
    reef_actor_ref from;
    if (reef_read_actor(&sender, &from) != REEF_OK) reef_fail("fanout: ping needs an actor sender");
    send_op(&from, "pong");
    return reef_value_int(count + 1);
  }
  if (reef_str_eq(op, "pong")) return reef_value_int(count + 1);
  if (reef_str_eq(op, "start")) {
    uint32_t n;
    if (reef_read_list(&field[FIELD_WORKERS], &n) != REEF_OK) {
      reef_fail("fanout: start needs a list field 'workers'");
    }
    for (uint32_t i = 0; i < n; i++) {
      reef_actor_ref worker;
      if (reef_read_actor(&field[FIELD_WORKERS], &worker) != REEF_OK) {
        reef_fail("fanout: 'workers' must hold actor refs");
      }
      send_op(&worker, "ping");
    }
    return reef_value_int(count);
  }
  reef_failf("fanout: unknown op '%.*s'", (int)op.len, op.ptr);
}

REEF_ACTOR(handle);
