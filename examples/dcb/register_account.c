/* Command registerAccount of the DCB example "unique username"
 * (tests/fixtures/dcb-examples/unique-username.json): an account's username must be unique.
 *
 * Each block of the scenario changes what "claimed" means, so this one source builds four
 * module versions of the command register-account, chosen with -DREEF_BLOCK=N:
 *   1  (1.0.0)  AccountRegistered claims the username for ever
 *   2  (2.0.0)  AccountClosed releases it
 *   3  (3.0.0)  UsernameChanged releases the old name and claims the new one
 *   4  (4.0.0)  a closed or changed name stays claimed for a retention period of 3 days
 * Input: {"username": text}.
 * Decision model isUsernameClaimed(username): false, then per event tagged username:{username}
 * as below. Rejects "Username \"{username}\" is claimed"; otherwise appends
 * AccountRegistered {"username"} tagged username:{username}. */
#include "dcb.h"

#if !defined(REEF_BLOCK) || REEF_BLOCK < 1 || REEF_BLOCK > 4
#error "compile with -DREEF_BLOCK=1, 2, 3 or 4: the block of unique-username.json"
#endif

/* Days a closed or changed username stays claimed (block 4). */
#define RETENTION_DAYS 3

#if REEF_BLOCK >= 4
/* `event.metadata?.daysAgo <= 3`. */
static bool within_retention(const reef_event* event) {
  return dcb_days_ago(event, reef_now_ms()) <= RETENTION_DAYS;
}

static reef_cbor account_closed(reef_cbor state, const reef_event* event, const dcb_model* model) {
  (void)state;
  (void)model;
  return reef_value_bool(within_retention(event));
}
#endif

#if REEF_BLOCK >= 3
/* `event.data.newUsername === username`; block 4 adds `|| event.metadata?.daysAgo <= 3`. */
static reef_cbor username_changed(reef_cbor state, const reef_event* event,
                                  const dcb_model* model) {
  (void)state;
  bool claimed = dcb_data_text_is(event, "newUsername", model->params[0]);
#if REEF_BLOCK >= 4
  claimed = claimed || within_retention(event);
#endif
  return reef_value_bool(claimed);
}
#endif

/* isUsernameClaimed's handlers, as the block defines them. */
static const dcb_handler kIsUsernameClaimed[] = {
    {"AccountRegistered", dcb_apply_true},
#if REEF_BLOCK == 2 || REEF_BLOCK == 3
    {"AccountClosed", dcb_apply_false},
#elif REEF_BLOCK >= 4
    {"AccountClosed", account_closed},
#endif
#if REEF_BLOCK >= 3
    {"UsernameChanged", username_changed},
#endif
};

/* The command's one decision model, bound to the input's username. */
static dcb_model is_username_claimed(dcb_input* input) {
  reef_str username = dcb_input_text(input, "username");
  dcb_model model = {
      .name = "isUsernameClaimed",
      .initial = reef_value_bool(false),
      .handlers = kIsUsernameClaimed,
      .handler_count = sizeof kIsUsernameClaimed / sizeof kIsUsernameClaimed[0],
      .tags = {dcb_tag("username:", username)},
      .tag_count = 1,
      .params = {username},
  };
  return model;
}

static reef_cbor init(reef_cbor input, reef_writer* query) {
  dcb_input in = dcb_input_of(input);
  dcb_model model = is_username_claimed(&in);
  return dcb_init(&in, &model, 1, query);
}

static reef_cbor fold(reef_cbor state, reef_cbor input, const reef_event* event) {
  dcb_input in = dcb_input_of(input);
  dcb_model model = is_username_claimed(&in);
  return dcb_fold(state, &model, 1, event);
}

static reef_cbor decide(reef_cbor state, reef_cbor input) {
  dcb_input in = dcb_input_of(input);
  reef_str username = dcb_input_text(&in, "username");
  if (in.error.len > 0) return dcb_reject_input(&in);
  if (dcb_state_bool(state, "isUsernameClaimed")) {
    return reef_reject("Username \"%.*s\" is claimed", (int)username.len, username.ptr);
  }
  reef_writer data = reef_writer_new();
  reef_write_record(&data, 1);
  reef_write_cstr(&data, "username");
  reef_write_str(&data, username);
  reef_str tags[] = {dcb_tag("username:", username)};
  return reef_accept("AccountRegistered", 1, tags, reef_writer_finish(&data));
}

REEF_COMMAND(init, fold, decide);
