/* The counter unit of the example program (examples/program, `reef deploy`).
 *
 * Module "counter"; its handler is exported as "counter_handle" (REEF_HANDLER), the name the
 * unit's "handler" field gives in program.json. The module has no default reef_handle.
 * State: an integer (the manifest's initial_state is 0).
 * Messages (records):
 *   {"op": "add"}  -> state + 1, replies {"count": <new state>}
 *   {"op": "get"}  -> state unchanged, replies {"count": <state>}
 *   {"op": "fail"} -> fails the invocation (nothing commits; the instance is poisoned)
 * Anything else fails the invocation with a reason. Replies go to the sender, which is the
 * host's reply address when a client invokes the unit and waits (`reef invoke counter ...`);
 * a message without a sender gets no reply. */
#include "reef.h"

/* Replies {"count": count} to the sender, if there is one. */
static void reply_count(reef_cbor sender, int64_t count) {
  reef_writer reply = reef_writer_new();
  reef_write_record(&reply, 1);
  reef_write_cstr(&reply, "count");
  reef_write_int(&reply, count);
  int rc = reef_reply(sender, reef_writer_finish(&reply));
  if (rc != REEF_OK && rc != REEF_E_NOT_FOUND) {
    reef_failf("counter: reply failed: %s", reef_strerror(rc));
  }
}

static reef_cbor handle(reef_cbor state, reef_cbor sender, reef_cbor message) {
  int64_t count;
  if (reef_read_int(&state, &count) != REEF_OK) {
    reef_failf("counter: state must be an integer, got %s", reef_kind_name(reef_peek(&state)));
  }
  reef_str op;
  if (reef_field_text(message, "op", &op) != REEF_OK) {
    reef_fail("counter: message must be a record with a text field 'op' (add, get or fail)");
  }

  if (reef_str_eq(op, "add")) {
    if (count == INT64_MAX) reef_fail("counter: count would overflow int64");
    reply_count(sender, count + 1);
    return reef_value_int(count + 1);
  }
  if (reef_str_eq(op, "get")) {
    reply_count(sender, count);
    return reef_value_int(count);
  }
  if (reef_str_eq(op, "fail")) reef_fail("counter: failed on request (op 'fail')");
  reef_failf("counter: unknown op '%.*s'; expected add, get or fail", (int)op.len, op.ptr);
}

REEF_UNIT_MODULE();
REEF_HANDLER(counter_handle, handle);
