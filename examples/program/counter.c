/* The counter unit of the example program (examples/program, `reef deploy`).
 *
 * Module "counter"; its handler is exported as "counter_handle" (REEF_HANDLER), the name the
 * unit's "handler" field gives in program.json. The module has no default reef_handle.
 * State: an integer (the manifest's initial_state is 0).
 * Messages (records):
 *   {"op": "add"}  -> state + 1, replies {"count": <new state>}
 *   {"op": "get"}  -> state unchanged, replies {"count": <state>}
 *   {"op": "fail"} -> fails the invocation (nothing commits; the instance is poisoned)
 * Anything else (not a record, no text "op", an unknown op, a count that would overflow) is
 * the caller's mistake, not the counter's: it replies {"error": "<why>"} and keeps its state,
 * so a bad message never costs the count (only "fail" does, on request). Replies go to the
 * sender, which is the host's reply address when a client invokes the unit and waits
 * (`reef invoke counter ...`); a message without a sender gets no reply. */
#include "reef.h"

/* Replies `reply` to the sender, if there is one. */
static void reply_with(reef_cbor sender, reef_cbor reply) {
  int rc = reef_reply(sender, reply);
  if (rc != REEF_OK && rc != REEF_E_NOT_FOUND) {
    reef_failf("counter: reply failed: %s", reef_strerror(rc));
  }
}

/* Replies {"count": count}. */
static void reply_count(reef_cbor sender, int64_t count) {
  reef_writer reply = reef_writer_new();
  reef_write_record(&reply, 1);
  reef_write_cstr(&reply, "count");
  reef_write_int(&reply, count);
  reply_with(sender, reef_writer_finish(&reply));
}

/* Replies {"error": reason} and returns the state unchanged. */
static reef_cbor refuse(reef_cbor sender, int64_t count, reef_str reason) {
  reef_writer reply = reef_writer_new();
  reef_write_record(&reply, 1);
  reef_write_cstr(&reply, "error");
  reef_write_str(&reply, reason);
  reply_with(sender, reef_writer_finish(&reply));
  return reef_value_int(count);
}

static reef_cbor handle(reef_cbor state, reef_cbor sender, reef_cbor message) {
  int64_t count;
  if (reef_read_int(&state, &count) != REEF_OK) {
    /* The state is the host's (initial_state in program.json): a wrong one is a deploy error. */
    reef_failf("counter: state must be an integer, got %s", reef_kind_name(reef_peek(&state)));
  }
  reef_str op;
  if (reef_peek(&message) != REEF_KIND_RECORD) {
    return refuse(sender, count,
                  reef_strf("counter: the message must be an object with a text field \"op\" "
                            "(add, get or fail), not %s",
                            reef_kind_name(reef_peek(&message))));
  }
  if (reef_field_text(message, "op", &op) != REEF_OK) {
    return refuse(sender, count,
                  reef_strf("counter: the message needs a text field \"op\" (add, get or fail)"));
  }

  if (reef_str_eq(op, "add")) {
    int64_t next;
    if (__builtin_add_overflow(count, 1, &next)) {
      return refuse(sender, count, reef_strf("counter: %lld + 1 would overflow", (long long)count));
    }
    reply_count(sender, next);
    return reef_value_int(next);
  }
  if (reef_str_eq(op, "get")) {
    reply_count(sender, count);
    return reef_value_int(count);
  }
  if (reef_str_eq(op, "fail")) reef_fail("counter: failed on request (op 'fail')");
  return refuse(
      sender, count,
      reef_strf("counter: unknown op \"%.*s\"; expected add, get or fail", (int)op.len, op.ptr));
}

REEF_UNIT_MODULE();
REEF_HANDLER(counter_handle, handle);
