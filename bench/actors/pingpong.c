/* Ping-pong actor for the actor benchmarks (bench/actor_bench.cc, docs/benchmarks.md).
 *
 * State: an integer, the number of messages this actor has handled.
 * Message: {"n": N, "peer": @P}. If N > 0, sends {"n": N - 1, "peer": <self>} to P, so two
 * actors started with one message {"n": N, "peer": other} bounce it N times between them.
 * Anything else fails the invocation. */
#include "reef.h"

enum { FIELD_N, FIELD_PEER, FIELD_COUNT };
static const reef_str kKeys[FIELD_COUNT] = {REEF_STR("n"), REEF_STR("peer")};

static reef_cbor handle(reef_cbor state, reef_cbor sender, reef_cbor message) {
  (void)sender;
  int64_t handled;
  if (reef_read_int(&state, &handled) != REEF_OK) reef_fail("pingpong: state must be an integer");
  reef_cbor field[FIELD_COUNT];
  int64_t n;
  reef_actor_ref peer;
  if (reef_fields(message, FIELD_COUNT, kKeys, field) != REEF_OK ||
      reef_read_int(&field[FIELD_N], &n) != REEF_OK ||
      reef_read_actor(&field[FIELD_PEER], &peer) != REEF_OK) {
    reef_fail("pingpong: message must be {\"n\": int, \"peer\": actor}");
  }
  if (n > 0) {
    reef_actor_ref self;
    if (reef_self(&self) != REEF_OK) reef_fail("pingpong: no self ref");
    reef_writer w = reef_writer_new();
    reef_write_record(&w, 2);
    reef_write_cstr(&w, "n");
    reef_write_int(&w, n - 1);
    reef_write_cstr(&w, "peer");
    reef_write_actor(&w, &self);
    int rc = reef_send(&peer, reef_writer_finish(&w));
    if (rc != REEF_OK) reef_failf("pingpong: send failed: %s", reef_strerror(rc));
  }
  return reef_value_int(handled + 1);
}

REEF_ACTOR(handle);
