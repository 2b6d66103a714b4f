/* The counter actor of spec 001, the bundled example of the C SDK.
 *
 * State: an integer.
 * Messages (records):
 *   {"op": "add",  "value": N}               -> state + N
 *   {"op": "send", "value": N, "target": @A} -> sends {"op": "add", "value": N} to actor A;
 *                                               state + 1
 *   {"op": "get"}                            -> replies with the state to the sender (an
 *                                               actor, or a caller: examples/asker); state
 *                                               unchanged
 * Anything else fails the invocation with a reason, so nothing commits.
 * Spec 001's walk-through: a sender spawned with 0 and a receiver spawned with 10; sending
 * {"op": "send", "value": 5, "target": receiver} to the sender commits 1 there and 15 at the
 * receiver. */
#include "reef.h"

/* The fields the counter reads, found in one pass over the message with reef_fields. */
enum { FIELD_OP, FIELD_VALUE, FIELD_TARGET, FIELD_COUNT };
static const reef_str kFieldKeys[FIELD_COUNT] = {REEF_STR("op"), REEF_STR("value"),
                                                 REEF_STR("target")};

/* Reads the integer field "value" (its cursor from reef_fields; empty when the message has
 * none) or fails naming the op that needed it. */
static int64_t value_of(reef_cbor field, reef_str op) {
  int64_t value;
  int rc = reef_at_end(&field) ? REEF_E_NOT_FOUND : reef_read_int(&field, &value);
  if (rc != REEF_OK) {
    reef_failf("counter: op '%.*s' needs an integer field 'value' (%s)", (int)op.len, op.ptr,
               reef_strerror(rc));
  }
  return value;
}

static int64_t add(int64_t count, int64_t value) {
  int64_t sum;
  if (__builtin_add_overflow(count, value, &sum)) {
    reef_failf("counter: %lld + %lld overflows int64", (long long)count, (long long)value);
  }
  return sum;
}

/* Sends {"op": "add", "value": value} to target. */
static void send_add(const reef_actor_ref* target, int64_t value) {
  reef_writer msg = reef_writer_new();
  reef_write_record(&msg, 2);
  reef_write_cstr(&msg, "op");
  reef_write_cstr(&msg, "add");
  reef_write_cstr(&msg, "value");
  reef_write_int(&msg, value);
  int rc = reef_send(target, reef_writer_finish(&msg));
  if (rc != REEF_OK) reef_failf("counter: send to %s failed: %s", target->id, reef_strerror(rc));
}

static reef_cbor handle(reef_cbor state, reef_cbor sender, reef_cbor message) {
  int64_t count;
  if (reef_read_int(&state, &count) != REEF_OK) {
    reef_failf("counter: state must be an integer, got %s", reef_kind_name(reef_peek(&state)));
  }
  reef_cbor fields[FIELD_COUNT];
  int rc = reef_fields(message, FIELD_COUNT, kFieldKeys, fields);
  reef_str op;
  if ((rc != REEF_OK && rc != REEF_E_NOT_FOUND) ||
      reef_read_text(&fields[FIELD_OP], &op) != REEF_OK) {
    reef_fail("counter: message must be a record with a text field 'op' (add, send or get)");
  }

  if (reef_str_eq(op, "add")) {
    return reef_value_int(add(count, value_of(fields[FIELD_VALUE], op)));
  }
  if (reef_str_eq(op, "send")) {
    int64_t value = value_of(fields[FIELD_VALUE], op);
    reef_actor_ref target;
    if (reef_read_actor(&fields[FIELD_TARGET], &target) != REEF_OK) {
      reef_fail("counter: op 'send' needs an actor ref field 'target'");
    }
    send_add(&target, value);
    return reef_value_int(add(count, 1));
  }
  if (reef_str_eq(op, "get")) {
    /* A message from the host (sender null) has no one to reply to: nothing to do. */
    rc = reef_reply(sender, reef_value_int(count));
    if (rc != REEF_OK && rc != REEF_E_NOT_FOUND) {
      reef_failf("counter: reply failed: %s", reef_strerror(rc));
    }
    return reef_value_int(count);
  }
  reef_failf("counter: unknown op '%.*s'; expected add, send or get", (int)op.len, op.ptr);
}

REEF_ACTOR(handle);
