/* Hello, Reef: the smallest useful actor.
 *
 * State: the number of greetings so far (an integer).
 * Message: a record {"name": "..."} (any other message greets "world").
 * Effect: logs "hello, <name>!" and, when another actor sent the message, replies to it with
 * {"greeting": "hello, <name>!"}. */
#include "reef.h"

static reef_cbor handle(reef_cbor state, reef_cbor sender, reef_cbor message) {
  int64_t greetings = 0;
  reef_read_int(&state, &greetings); /* a non-integer state starts over at 0 */

  reef_str name = {"world", 5};
  reef_field_text(message, "name", &name); /* keeps "world" when absent */

  /* The whole greeting, however long the name; the log line says when it had to be cut. */
  reef_str greeting = reef_strf("hello, %.*s!", (int)name.len, name.ptr);
  reef_logf(REEF_INFO, "%.*s", (int)greeting.len, greeting.ptr);

  reef_actor_ref from;
  if (reef_read_actor(&sender, &from) == REEF_OK) {
    reef_writer reply = reef_writer_new();
    reef_write_record(&reply, 1);
    reef_write_cstr(&reply, "greeting");
    reef_write_str(&reply, greeting);
    reef_send(&from, reef_writer_finish(&reply));
  }
  return reef_value_int(greetings + 1);
}

REEF_ACTOR(handle);
