/* The worker unit of the example program (examples/program, `reef deploy`).
 *
 * Module "worker", default handler reef_handle (REEF_ACTOR). Built twice, with
 * -DWORKER_VERSION=1 (program v1) and -DWORKER_VERSION=2 (program v2), so a redeploy shows the
 * unit as changed and new invocations answering with the new version.
 * State: null (a fresh instance) or {"served": n}.
 * Messages:
 *   {"op": "fail"} -> fails the invocation (nothing commits; the instance is poisoned)
 *   {"op": "spin"} -> loops (practically) forever, so `kill` has something to stop
 *   anything else  -> state {"served": n + 1}, replies
 *                     {"version": WORKER_VERSION, "echo": <the message>, "served": n + 1}
 * The reply goes to the sender (the host's reply address when a client waits); a message
 * without a sender gets none. */
#include "reef.h"

#ifndef WORKER_VERSION
#error "build with -DWORKER_VERSION=1 or 2"
#endif

/* Messages served so far by this instance: 0 for a null state. */
static int64_t served_of(reef_cbor state) {
  if (reef_read_null(&state) == REEF_OK) return 0;
  int64_t served;
  if (reef_field_int(state, "served", &served) != REEF_OK) {
    reef_fail("worker: state must be null or a record {\"served\": n}");
  }
  return served;
}

/* Never returns in practice: 2^64 iterations of a volatile increment. */
static void spin(void) {
  volatile uint64_t spins = 0;
  while (spins != UINT64_MAX) spins = spins + 1;
}

static reef_cbor handle(reef_cbor state, reef_cbor sender, reef_cbor message) {
  int64_t served = served_of(state);
  reef_str op;
  if (reef_field_text(message, "op", &op) == REEF_OK) {
    if (reef_str_eq(op, "fail")) reef_fail("worker: failed on request (op 'fail')");
    if (reef_str_eq(op, "spin")) spin();
  }

  reef_writer reply = reef_writer_new();
  reef_write_record(&reply, 3);
  reef_write_cstr(&reply, "version");
  reef_write_int(&reply, WORKER_VERSION);
  reef_write_cstr(&reply, "echo");
  reef_write_cbor(&reply, message);
  reef_write_cstr(&reply, "served");
  reef_write_int(&reply, served + 1);
  int rc = reef_reply(sender, reef_writer_finish(&reply));
  if (rc != REEF_OK && rc != REEF_E_NOT_FOUND) {
    reef_failf("worker: reply failed: %s", reef_strerror(rc));
  }

  reef_writer next = reef_writer_new();
  reef_write_record(&next, 1);
  reef_write_cstr(&next, "served");
  reef_write_int(&next, served + 1);
  return reef_writer_finish(&next);
}

REEF_ACTOR(handle);
