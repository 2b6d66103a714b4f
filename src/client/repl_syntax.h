// REPL syntax: the pure parts of reading a `reef` command line, shared by the one-shot
// commands and `reef repl` — splitting words, actor refs, `let` bindings, the JSON arguments
// with their {"$actor": NAME} markers, and what a completion at the cursor should offer.
// Nothing here does I/O.
//
// Thread ownership: pure functions; any thread.
#pragma once

#include <cstddef>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"

namespace reef::client {

// REPL names bound with `let NAME = spawn ...`: name -> bare 21-character NanoID.
using Bindings = std::map<std::string, std::string, std::less<>>;

// Takes the next word off the front of `*rest` (leading spaces and tabs skipped) and leaves
// `*rest` after it. A word ends at whitespace; "..." and '...' quote spaces ("..." also takes
// \" and \\ escapes). Returns nullopt when only whitespace is left.
// Errors: InvalidArgument for an unterminated quote. REQUIRES: rest != nullptr.
Result<std::optional<std::string>> NextWord(std::string_view* rest);

// `text` without leading and trailing whitespace.
std::string_view Trim(std::string_view text);

// The bare NanoID of "@V1StGXR8_Z5jdHi6B-myT" or "V1StGXR8_Z5jdHi6B-myT".
// Errors: InvalidArgument saying the text is not an actor ref (length or alphabet).
Result<std::string> ParseActorRef(std::string_view text);

// The NanoID an argument names: a bound name first, then an actor ref (ParseActorRef).
// Errors: InvalidArgument naming the text when it is neither.
Result<std::string> ResolveRef(std::string_view text, const Bindings& bindings);

// True when `name` can be bound by `let`: a letter or '_' then letters, digits, '_' or '-',
// at most 64 characters, and not a 21-character NanoID (which would shadow a ref).
bool IsBindableName(std::string_view name);

// Replaces, in place, every sole-key object {"$actor": S} whose S is a bound name with
// {"$actor": <its NanoID>}, and strips a leading '@' from S when S is an actor ref. Inside
// {"$record": {...}} the wrapped object itself is literal (never a marker), while the values
// nested in it follow the normal rules. Ordinary strings are never converted.
// Errors: InvalidArgument naming the JSON Pointer of a "$actor" string that is neither a
// bound name nor an actor ref.
Status ResolveActorMarkers(nlohmann::json* value, const Bindings& bindings);

// Parses the JSON argument `text` (named `what` in errors, e.g. "STATE") and resolves its
// $actor markers against `bindings`.
// Errors: InvalidArgument for malformed JSON, with the byte offset where parsing stopped;
// InvalidArgument "number out of range" for a number literal no double holds (1e400);
// the ResolveActorMarkers errors; the errors of reef::ValueFromJson for values Reef cannot
// carry (integers outside int64, non-finite floats, depth/node/string limits).
Result<nlohmann::json> ParseJsonArgument(std::string_view text, std::string_view what,
                                         const Bindings& bindings);

// A `let NAME = REST` line split up.
struct LetLine {
  std::string name;
  std::string_view rest;  // the command after '=', a view into the parsed line
};

// Recognizes `let NAME = ...`. Returns nullopt when `line` does not start with the word
// `let`. Errors: InvalidArgument for a missing or unbindable name or a missing '='.
Result<std::optional<LetLine>> ParseLet(std::string_view line);

// What a completion of the word under the cursor should offer.
struct CompletionContext {
  enum class Kind {
    kCommand,      // the first word of a command
    kArgument,     // argument `index` (0-based) of `command`
    kActorString,  // inside the string of a {"$actor": "...} marker: bound names
  };
  Kind kind = Kind::kCommand;
  std::string command;
  std::size_t index = 0;
};

// Classifies a completion given the line before the word being completed (`before`: the
// text up to the start of that word). `let NAME = ` counts as the start of a command.
CompletionContext ClassifyCompletion(std::string_view before);

}  // namespace reef::client
