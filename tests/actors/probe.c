/* A test actor for the runtime's lifecycle tests. State: an integer.
 *   {"op":"add","value":N}            state + N
 *   {"op":"spin"}                     loops forever (for kill, cancel, pause)
 *   {"op":"fail"}                     fails with reason "asked to fail"
 *   {"op":"log","level":L,"text":T}   logs T at level L, state + 1
 *   {"op":"log_then_fail","text":T}   logs T at info, then fails
 *   {"op":"send","target":@A,"count":N}   sends N x {"op":"add","value":1} to A, state + 1
 *   {"op":"reply"}                    sends the state to the sender, state unchanged
 *   {"op":"forward","target":@A}      sends {"op":"reply"} to A with this message's sender
 *                                     as the sender (send_from), state unchanged
 *   {"op":"call","target":@A,"message":M,"timeout":MS}
 *                                     calls A with M; state = the reply (an integer) or the
 *                                     SDK's error code (REEF_E_TIMEOUT, ...); if the message
 *                                     has "then":"fail", fails after the call instead
 * on_shutdown: state + 1000; a state {"call": @A} instead calls A with null and becomes
 * the reply. */
#include "reef.h"

enum { F_OP, F_VALUE, F_LEVEL, F_TEXT, F_TARGET, F_COUNT, F_MESSAGE, F_TIMEOUT, F_THEN, F_N };
static const reef_str kKeys[F_N] = {REEF_STR("op"),      REEF_STR("value"),   REEF_STR("level"),
                                    REEF_STR("text"),    REEF_STR("target"),  REEF_STR("count"),
                                    REEF_STR("message"), REEF_STR("timeout"), REEF_STR("then")};

static int64_t int_field(reef_cbor field, int64_t fallback) {
  int64_t v;
  return reef_read_int(&field, &v) == REEF_OK ? v : fallback;
}

static reef_cbor handle(reef_cbor state, reef_cbor sender, reef_cbor message) {
  int64_t count = 0;
  if (reef_read_int(&state, &count) != REEF_OK) reef_fail("probe: state must be an integer");
  reef_cbor f[F_N];
  reef_str op;
  int rc = reef_fields(message, F_N, kKeys, f);
  if ((rc != REEF_OK && rc != REEF_E_NOT_FOUND) || reef_read_text(&f[F_OP], &op) != REEF_OK) {
    reef_fail("probe: message must be a record with a text field 'op'");
  }
  if (reef_str_eq(op, "add")) return reef_value_int(count + int_field(f[F_VALUE], 0));
  if (reef_str_eq(op, "spin")) {
    for (volatile int i = 0;; i++) {
    }
  }
  if (reef_str_eq(op, "fail")) reef_fail("asked to fail");
  if (reef_str_eq(op, "log") || reef_str_eq(op, "log_then_fail")) {
    reef_str text = {"", 0};
    reef_read_text(&f[F_TEXT], &text);
    reef_log((int)int_field(f[F_LEVEL], REEF_INFO), text.ptr, text.len);
    if (reef_str_eq(op, "log_then_fail")) reef_fail("failed after logging");
    return reef_value_int(count + 1);
  }
  if (reef_str_eq(op, "send")) {
    reef_actor_ref target;
    if (reef_read_actor(&f[F_TARGET], &target) != REEF_OK) reef_fail("probe: send needs target");
    int64_t n = int_field(f[F_COUNT], 1);
    for (int64_t i = 0; i < n; i++) {
      reef_writer w = reef_writer_new();
      reef_write_record(&w, 2);
      reef_write_cstr(&w, "op");
      reef_write_cstr(&w, "add");
      reef_write_cstr(&w, "value");
      reef_write_int(&w, 1);
      if (reef_send(&target, reef_writer_finish(&w)) != REEF_OK) reef_fail("probe: send refused");
    }
    return reef_value_int(count + 1);
  }
  if (reef_str_eq(op, "forward")) { /* passes the message on with the sender it came with */
    reef_actor_ref target, from;
    if (reef_read_actor(&f[F_TARGET], &target) != REEF_OK) reef_fail("probe: forward needs target");
    if (reef_read_actor(&sender, &from) != REEF_OK) reef_fail("probe: forward needs a sender");
    reef_writer w = reef_writer_new();
    reef_write_record(&w, 1);
    reef_write_cstr(&w, "op");
    reef_write_cstr(&w, "reply");
    if (reef_send_from(&from, &target, reef_writer_finish(&w)) != REEF_OK) {
      reef_fail("probe: forward refused");
    }
    return reef_value_int(count);
  }
  if (reef_str_eq(op, "reply")) {
    reef_actor_ref to;
    if (reef_read_actor(&sender, &to) != REEF_OK) reef_fail("probe: reply needs an actor sender");
    if (reef_send(&to, reef_value_int(count)) != REEF_OK) reef_fail("probe: reply refused");
    return reef_value_int(count);
  }
  if (reef_str_eq(op, "call")) {
    reef_actor_ref target;
    if (reef_read_actor(&f[F_TARGET], &target) != REEF_OK) reef_fail("probe: call needs target");
    reef_cbor message = {NULL, 0}, reply;
    reef_skip(&f[F_MESSAGE], &message); /* the field's one item, not the rest of the record */
    int64_t outcome = reef_call(&target, message, (uint32_t)int_field(f[F_TIMEOUT], 5000), &reply);
    reef_str then = {"", 0};
    reef_read_text(&f[F_THEN], &then);
    if (reef_str_eq(then, "fail")) reef_fail("failed after the call");
    if (outcome == REEF_OK && reef_read_int(&reply, &outcome) != REEF_OK) outcome = 0;
    return reef_value_int(outcome);
  }
  reef_failf("probe: unknown op '%.*s'", (int)op.len, op.ptr);
}

static reef_cbor shutdown(reef_cbor state) {
  int64_t count = 0;
  reef_actor_ref target;
  if (reef_field_actor(state, "call", &target) == REEF_OK) { /* a call from the hook */
    reef_cbor reply;
    reef_cbor message = reef_value_null();
    if (reef_call(&target, message, 60000, &reply) != REEF_OK) reef_fail("probe: call failed");
    return reply;
  }
  reef_read_int(&state, &count);
  return reef_value_int(count + 1000);
}

REEF_ACTOR_WITH_SHUTDOWN(handle, shutdown);
