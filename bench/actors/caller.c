/* Call round-trip actor for the actor benchmarks (bench/actor_bench.cc, docs/benchmarks.md),
 * both ends of it:
 *
 * - the client gets {"n": N, "server": @S} from the host and makes N calls to S, one after the
 *   other, each waiting for its reply (the `call` import: the client is awaiting meanwhile);
 * - the server gets null from a caller and replies with its count of calls handled.
 *
 * State: an integer, the number of messages this actor handled; the client adds N at once when
 * its N calls are done (so client + server states reach 2N together). A call that fails, or a
 * reply that is not the server's next count, fails the invocation. Each reply stays in the
 * arena until the invocation ends (a few bytes per call). */
#include "reef.h"

enum { FIELD_N, FIELD_SERVER, FIELD_COUNT };
static const reef_str kKeys[FIELD_COUNT] = {REEF_STR("n"), REEF_STR("server")};

static reef_cbor handle(reef_cbor state, reef_cbor sender, reef_cbor message) {
  int64_t handled;
  if (reef_read_int(&state, &handled) != REEF_OK) reef_fail("caller: state must be an integer");
  reef_cbor probe = message;
  if (reef_read_null(&probe) == REEF_OK) { /* a call: the server's side */
    int rc = reef_reply(sender, reef_value_int(handled + 1));
    if (rc != REEF_OK) reef_failf("caller: reply failed: %s", reef_strerror(rc));
    return reef_value_int(handled + 1);
  }
  reef_cbor field[FIELD_COUNT];
  int64_t n;
  reef_actor_ref server;
  if (reef_fields(message, FIELD_COUNT, kKeys, field) != REEF_OK ||
      reef_read_int(&field[FIELD_N], &n) != REEF_OK ||
      reef_read_actor(&field[FIELD_SERVER], &server) != REEF_OK) {
    reef_fail("caller: message must be null or {\"n\": int, \"server\": actor}");
  }
  int64_t first = -1;
  for (int64_t i = 0; i < n; i++) {
    reef_cbor reply;
    int rc = reef_call(&server, reef_value_null(), 60000, &reply);
    if (rc != REEF_OK) reef_failf("caller: call %lld failed: %s", (long long)i, reef_strerror(rc));
    int64_t count;
    if (reef_read_int(&reply, &count) != REEF_OK) reef_fail("caller: the reply is not an int");
    if (first < 0) first = count;
    if (count != first + i) reef_fail("caller: a reply came out of order");
  }
  return reef_value_int(handled + n);
}

REEF_ACTOR(handle);
