/* A test actor that checks FIFO order: its state is the last integer it received, and each
 * message must be exactly state + 1, or the handler fails naming both. */
#include "reef.h"

static reef_cbor handle(reef_cbor state, reef_cbor sender, reef_cbor message) {
  (void)sender;
  int64_t last = 0, next = 0;
  if (reef_read_int(&state, &last) != REEF_OK || reef_read_int(&message, &next) != REEF_OK) {
    reef_fail("ordered: state and message must be integers");
  }
  if (next != last + 1) reef_failf("ordered: got %lld after %lld", (long long)next, (long long)last);
  return reef_value_int(next);
}

REEF_ACTOR(handle);
