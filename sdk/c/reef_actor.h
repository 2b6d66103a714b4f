/* Reef C guest SDK: the actor entry point and the host imports of ABI v1.
 *
 * Concept: what an actor is to the host (docs/abi.md, spec 001 "handle(ctx, state, sender,
 * message) -> new_state"): REEF_ACTOR(handler) defines the module's exports, REEF_HANDLER adds
 * more handlers for a program's units; the functions below wrap the imports of module "reef"
 * (send, send_from, call, call_reply, log, self, fail).
 * Thread ownership: one invocation at a time; the imports may only be called while a handler
 * (or the shutdown hook) runs.
 *
 * Lifetime of everything a handler sees or builds: the invocation. Inputs live in the arena
 * the host filled; outputs are allocated from the same arena; all of it is reused by the next
 * invocation. Committed state is kept by the host, never in guest memory. */
#ifndef REEF_ACTOR_H
#define REEF_ACTOR_H

#include <stdarg.h>

#include "reef_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* An actor's handler. `state` is the committed state, `sender` is an actor ref or null (for
 * host-originated messages), `message` is the message; each span holds exactly one CBOR item.
 * Returns the new state: one CBOR item, usually from reef_writer_finish or reef_value_int.
 * The invocation fails instead of committing when the handler calls reef_fail, traps, or
 * returns a malformed or empty ({NULL, 0}) state; its sends are then dropped. */
typedef reef_cbor (*reef_handler)(reef_cbor state, reef_cbor sender, reef_cbor message);

/* An optional shutdown hook: runs once on graceful stop; returns the final state. */
typedef reef_cbor (*reef_shutdown_hook)(reef_cbor state);

/* Defines the module's exports reef_abi_version, reef_alloc and reef_handle for `handler`.
 * Use once per module, at file scope:  REEF_ACTOR(handle);  */
#define REEF_ACTOR(handler) \
  REEF__EXPORT_COMMON       \
  REEF__EXPORT_HANDLE(handler) extern int reef__actor_defined

/* Same, plus the export reef_on_shutdown calling `shutdown`. */
#define REEF_ACTOR_WITH_SHUTDOWN(handler, shutdown) \
  REEF__EXPORT_COMMON                               \
  REEF__EXPORT_HANDLE(handler)                      \
  REEF__EXPORT_SHUTDOWN(shutdown) extern int reef__actor_defined

/* ---- Units of a program (docs/abi.md "Handlers of a program's units") -------------------
 * A module may hold several handlers, each exported under its own name and named by a unit's
 * "handler" field in program.json. Every handler export has reef_handle's signature. */

/* Exports `handler` (a reef_handler) under the export name `name`, an identifier
 * (REEF_HANDLER(counter_handle, handle) exports "counter_handle"). Use at file scope, once per
 * export name, next to REEF_ACTOR (which exports "reef_handle") or REEF_UNIT_MODULE. */
#define REEF_HANDLER(name, handler)                                                           \
  __attribute__((export_name(#name))) int64_t reef__export_handler_##name(                    \
      int32_t sp, int32_t sl, int32_t fp, int32_t fl, int32_t mp, int32_t ml) {               \
    return reef__pack((handler)(reef__span(sp, sl), reef__span(fp, fl), reef__span(mp, ml))); \
  }                                                                                           \
  extern int reef__handler_defined

/* Defines only the common exports reef_abi_version and reef_alloc, for a module without a
 * reef_handle (its handlers all come from REEF_HANDLER). Use once per module, instead of
 * REEF_ACTOR:  REEF_UNIT_MODULE();  */
#define REEF_UNIT_MODULE() \
  REEF__EXPORT_COMMON      \
  extern int reef__actor_defined

/* ---- Effects ----------------------------------------------------------------------------
 * Sends are effects of the transition: the host queues them and delivers them only if the
 * invocation commits. Return REEF_OK, REEF_E_INVALID (the host rejected `message` or a ref:
 * malformed CBOR, not a value; also for an empty {NULL, 0} message, without calling the host)
 * or REEF_E_LIMIT (value limits, or more than 4,096 sends in this transition). */

/* Sends `message` to `target`, with this actor as the sender. */
int reef_send(const reef_actor_ref* target, reef_cbor message);

/* Sends `message` to `target` with an explicit `sender` (forwarding); sender NULL sends it as
 * host-originated (sender null). */
int reef_send_from(const reef_actor_ref* sender, const reef_actor_ref* target, reef_cbor message);

/* Replies to the sender of the message being handled: sends `message` to the actor ref in
 * `sender` (the handler's `sender` argument), with this actor as the sender. Returns what
 * reef_send returns, REEF_E_NOT_FOUND when `sender` is null (a host-originated message has no
 * one to reply to), or REEF_E_TYPE / REEF_E_MALFORMED when it is not an actor ref. */
int reef_reply(reef_cbor sender, reef_cbor message);

/* ---- Calls ------------------------------------------------------------------------------
 * Sends `message` to `target` at once (not at commit) and waits for the reply: the invocation
 * is suspended, the actor is "awaiting", and its reactor runs other actors meanwhile. The
 * callee sees a reply address as the sender; its reef_reply (a send to that sender) is the
 * reply. `timeout_ms` is 1..600000. On REEF_OK, *reply holds the reply (one CBOR item in the
 * arena, kept like every allocation until the invocation ends). Errors: REEF_E_INVALID (empty
 * message, bad timeout, rejected by the host), REEF_E_LIMIT, REEF_E_NOMEM (no room for the reply),
 * REEF_E_UNAVAILABLE, REEF_E_TIMEOUT, REEF_E_NO_REPLY, REEF_E_CYCLE (see reef_base.h). The message
 * is delivered even if this invocation later fails: a call is an effect that happens when it is
 * made, unlike reef_send. A stop, kill or restart of this actor while it waits cancels the call
 * (the reply, if one comes, is dropped). */
int reef_call(const reef_actor_ref* target, reef_cbor message, uint32_t timeout_ms,
              reef_cbor* reply);

/* Writes this actor's ref to *out. Returns REEF_OK or REEF_E_MALFORMED (unexpected host
 * answer). */
int reef_self(reef_actor_ref* out);

/* ---- Logs -------------------------------------------------------------------------------
 * Log levels of the log import. */
enum {
  REEF_TRACE = 0,
  REEF_DEBUG = 1,
  REEF_INFO = 2,
  REEF_WARN = 3,
  REEF_ERROR = 4,
  REEF_FATAL = 5,
};

/* Maximum length of one log message in bytes (host limit). */
#define REEF_LOG_MAX 512

/* Logs `len` bytes of UTF-8 at `msg` at `level` (REEF_TRACE..REEF_FATAL). Returns REEF_OK,
 * REEF_E_INVALID (bad level or UTF-8) or REEF_E_LIMIT (more than REEF_LOG_MAX bytes). */
int reef_log(int level, const char* msg, uint32_t len);

/* Logs a formatted message (reef_format below). A message longer than REEF_LOG_MAX bytes is
 * logged as its first bytes (cut at a character boundary) ending with " [cut: N bytes in all]",
 * and the call returns REEF_E_LIMIT; an unsupported conversion is logged as a marker naming it
 * and returns REEF_E_INVALID. Otherwise returns what reef_log returns. */
int reef_logf(int level, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

/* Log a NUL-terminated message at one level; return what reef_log returns. */
int reef_trace(const char* msg);
int reef_debug(const char* msg);
int reef_info(const char* msg);
int reef_warn(const char* msg);
int reef_error(const char* msg);
int reef_fatal(const char* msg);

/* ---- Failure ----------------------------------------------------------------------------
 * Ends the invocation as a failure with a UTF-8 reason: nothing commits, no send is
 * delivered, the actor is marked failed. Never returns. */
_Noreturn void reef_fail(const char* reason);
/* Same with `len` bytes of reason at `reason`. */
_Noreturn void reef_fail_n(const char* reason, uint32_t len);
/* Same with a formatted reason (reef_format), whole (it is formatted into the arena; only when
 * the arena is exhausted is it cut, to REEF_LOG_MAX bytes ending with a marker saying so). */
_Noreturn void reef_failf(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- Formatting -------------------------------------------------------------------------
 * A small printf subset for messages: %s (NUL-terminated), %.*s (int length, then pointer:
 * handy for reef_str), %c, %d %i %u with the l and ll modifiers, %%. Any other conversion
 * (%x, %f, %5d, %zu, ...) is an error: it is written as [unsupported conversion "%x"] and
 * formatting stops there, since the type of its argument is unknown.
 * Writes at most cap - 1 bytes and a NUL into buf, never cutting a UTF-8 character.
 * Returns the length written (without the NUL) when the whole text fit; REEF_E_LIMIT when it
 * did not (buf then holds its first bytes, NUL-terminated); REEF_E_INVALID for an unsupported
 * conversion. Nothing is ever cut silently: check for a negative result.
 * REQUIRES: cap >= 1. */
int reef_format(char* buf, uint32_t cap, const char* fmt, ...)
    __attribute__((format(printf, 3, 4)));
int reef_vformat(char* buf, uint32_t cap, const char* fmt, va_list args);

/* ---- Internals used by the macros above; not part of the API ----------------------------
 * Inline, so the exports expanded in the actor's file can call (and inline) the handler
 * directly instead of through a function pointer with three spans copied in memory. */

/* Formats into the arena at the text's full length (NUL-terminated; *out is "" on failure).
 * Returns REEF_OK, REEF_E_INVALID (an unsupported conversion, written as a marker) or
 * REEF_E_NOMEM. Behind reef_strf, reef_reject, reef_logf and reef_failf. */
int reef__vstrf(reef_str* out, const char* fmt, va_list args);

/* Fails the invocation: the handler returned {NULL, 0}. */
_Noreturn void reef__fail_no_state(void);

/* The span (ptr, len) that the host passed as two i32s. */
static inline reef_cbor reef__span(int32_t ptr, int32_t len) {
  reef_cbor c = {(const uint8_t*)(uintptr_t)(uint32_t)ptr, (uint32_t)len};
  return c;
}

/* The i64 result of reef_handle / reef_on_shutdown: ptr | len << 32 of the new state. */
static inline int64_t reef__pack(reef_cbor state) {
  if (state.ptr == NULL || state.len == 0) reef__fail_no_state();
  return (int64_t)((uint64_t)(uintptr_t)state.ptr | ((uint64_t)state.len << 32));
}

#define REEF__EXPORT_COMMON                                                                 \
  __attribute__((export_name("reef_abi_version"))) int32_t reef__export_abi_version(void) { \
    return 1;                                                                               \
  }                                                                                         \
  __attribute__((export_name("reef_alloc"))) int32_t reef__export_alloc(int32_t len) {      \
    return (int32_t)(uintptr_t)reef_arena_reset_and_alloc((uint32_t)len);                   \
  }

#define REEF__EXPORT_HANDLE(handler)                                                          \
  __attribute__((export_name("reef_handle"))) int64_t reef__export_handle(                    \
      int32_t sp, int32_t sl, int32_t fp, int32_t fl, int32_t mp, int32_t ml) {               \
    return reef__pack((handler)(reef__span(sp, sl), reef__span(fp, fl), reef__span(mp, ml))); \
  }

#define REEF__EXPORT_SHUTDOWN(shutdown)                                                           \
  __attribute__((export_name("reef_on_shutdown"))) int64_t reef__export_on_shutdown(int32_t sp,   \
                                                                                    int32_t sl) { \
    return reef__pack((shutdown)(reef__span(sp, sl)));                                            \
  }

#ifdef __cplusplus
}
#endif

#endif /* REEF_ACTOR_H */
