/* The asker: an actor that calls another and waits for the answer (the `call` import,
 * docs/abi.md "Calling another actor").
 *
 * State: the last answer (anything; 0 at first).
 * Message: {"op": "ask", "target": @A} -> calls A with {"op": "get"} (a counter answers with
 * its value) and keeps the reply as its state. While it waits, the asker is "awaiting" and
 * `inspect` shows whom it waits for; its reactor runs other actors meanwhile.
 * A call that fails (A unknown or stopped, no reply within 60 s, A failed, or A waiting for
 * this asker) fails the invocation with the reason, so nothing commits. */
#include "reef.h"

enum { FIELD_OP, FIELD_TARGET, FIELD_COUNT };
static const reef_str kFieldKeys[FIELD_COUNT] = {REEF_STR("op"), REEF_STR("target")};

static reef_cbor handle(reef_cbor state, reef_cbor sender, reef_cbor message) {
  (void)state;
  (void)sender;
  reef_cbor fields[FIELD_COUNT];
  reef_str op;
  reef_actor_ref target;
  int rc = reef_fields(message, FIELD_COUNT, kFieldKeys, fields);
  if (rc != REEF_OK || reef_read_text(&fields[FIELD_OP], &op) != REEF_OK ||
      !reef_str_eq(op, "ask") || reef_read_actor(&fields[FIELD_TARGET], &target) != REEF_OK) {
    reef_fail("asker: message must be {\"op\": \"ask\", \"target\": actor}");
  }

  reef_writer get = reef_writer_new();
  reef_write_record(&get, 1);
  reef_write_cstr(&get, "op");
  reef_write_cstr(&get, "get");
  reef_cbor reply;
  rc = reef_call(&target, reef_writer_finish(&get), 60000, &reply);
  if (rc != REEF_OK) reef_failf("asker: asking %s failed: %s", target.id, reef_strerror(rc));
  reef_info("asker: got an answer");
  return reply;
}

REEF_ACTOR(handle);
