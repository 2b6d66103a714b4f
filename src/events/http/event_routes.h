// The event store's HTTP routes, for tools and tests (docs/http-api.md "Event store"):
//
//   POST /events/append   {"events": [event...], "condition": condition?}  -> {"position": N}
//                         (an event may carry "encryption_scope": its data is stored encrypted)
//   POST /events/read     {"query": query?, "from": N?, "backwards": bool?, "limit": N?,
//                          "data_encoding": "auto" | "base64"?}
//                         -> {"events": [...], "head": N, "truncated": bool}
//   GET  /events/head     -> {"head": N}
//
// JSON shapes: events/http/event_json.h. Errors use the server's error body with the status
// of their code: 400 invalid_argument, 409 conflict, 413 limit_exceeded, 503 unavailable.
//
// Thread ownership: the handlers run on the server's handler threads; `store` must outlive
// the server that serves these routes.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "events/event_store.h"
#include "server/server.h"

namespace reef::events::http {

struct EventRouteOptions {
  // Events one read returns at most, whatever its "limit"; a cut read says "truncated".
  uint64_t max_read_events = 10'000;
  // Bytes of event data and metadata one read returns at most (approximate: stored bytes).
  uint64_t max_read_bytes = 16u << 20;
  // Encrypts the data of an appended event that has "encryption_scope": returns the bytes to
  // store (crypto-shredding, apps::KeyRing::Encrypt). Unset: such events are refused with
  // FailedPrecondition.
  std::function<Result<std::string>(std::string_view scope, std::string_view data)> encrypt;
  // Opens stored encrypted data (apps::KeyRing::Open): the plaintext, or nullopt when its key
  // was shredded. Lets an exact retry of an encrypted event with an id be told from a reuse of
  // the id (the ciphertext differs on every encryption); unset, such a retry gets 409.
  std::function<Result<std::optional<std::string>>(std::string_view stored)> decrypt;
  // Data a client may not store as plain data (the marker of encrypted data, so a client cannot
  // forge an "encrypted" event); empty = none.
  std::string reserved_data_prefix;
};

// The three routes above over `store`. The append route accepts bodies up to twice the
// store's max_append_bytes plus 1 MiB (base64 and JSON escaping make bodies larger than the
// events they carry); the others use the server's max_request_bytes.
std::vector<server::HttpRoute> EventRoutes(EventStore& store,
                                           const EventRouteOptions& options = {});

}  // namespace reef::events::http
