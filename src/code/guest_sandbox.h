// GuestSandbox: what a guest C compile may read, and what its diagnostics may show.
//
// Guest C sources come from protocol clients, and clang runs with the server's privileges, so a
// source must not be able to read the server's files (`#include "/etc/passwd"` used to come back
// in the compile error). The compile of a guest source therefore sees only:
//   - the source itself,
//   - the C SDK headers (reef.h, reef_*.h) and the C11 freestanding headers of clang's resource
//     directory (stdint.h, stddef.h, ...), as include/<name>,
//   - a prelude that forbids inline assembly (its `.incbin` and `.include` directives read files
//     outside the preprocessor).
// Three layers enforce it:
//   1. CheckIncludes refuses, before clang runs, an `#include` (or #include_next, #import,
//      #embed) whose name is an absolute path or has a `..` component, naming the rule;
//   2. clang runs with -nostdinc and a virtual file system overlay (`-ivfsoverlay`) that lists
//      exactly the files above with `'fallthrough': false`: every other path, however it is
//      spelled (macros, __has_include, #pragma GCC dependency, symlinks), does not exist;
//      `#pragma GCC poison __asm__ __asm` in the prelude (given with -include) refuses inline
//      assembly even when a macro builds the keyword;
//   3. FilterDiagnostics drops every diagnostic located in a file outside the sandbox, clang's
//      crash dumps (they list paths of the server) and the sandbox directory's path.
//
// Thread ownership: pure functions and plain values; any thread.
#pragma once

#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace reef::code {

// The file the prelude is written to, relative to the sandbox directory (given to clang with
// -include), and its text.
inline constexpr std::string_view kSandboxPreludeFile = "reef-sandbox.h";
std::string_view SandboxPrelude();

// The overlay file, relative to the sandbox directory (given to clang with -ivfsoverlay).
inline constexpr std::string_view kSandboxOverlayFile = "reef-vfs.yaml";

// The include directory of the sandbox, relative to the sandbox directory (given with -I).
inline constexpr std::string_view kSandboxIncludeDir = "include";

// The C11 freestanding headers a guest may include, found in clang's resource include
// directory (with stddef.h's helper __stddef_max_align_t.h).
std::span<const std::string_view> FreestandingHeaders();

// One file visible inside the sandbox: `name` relative to the sandbox directory (e.g.
// "actors/counter.c", "include/reef.h"), read from `file` on disk.
struct SandboxFile {
  std::string name;
  std::filesystem::path file;
};

// Refuses an include directive of `source` (the text of `file_name`, for the message) whose
// header name is an absolute path or has a ".." component. Recognises `#`, `%:` and `??=` as
// the directive's introducer and joins lines continued with a backslash. Only names written
// literally are seen; the overlay stops the rest.
// Errors: InvalidArgument "compile error:\n<file_name>:<line>: #include "<name>" refused: ...".
Status CheckIncludes(std::string_view source, std::string_view file_name);

// The overlay (clang's VFS YAML, written as JSON) that makes exactly `files` visible under
// `sandbox_dir` (an absolute path) and nothing else.
std::string SandboxOverlay(const std::filesystem::path& sandbox_dir,
                           std::span<const SandboxFile> files);

// clang's output with the sandbox's traces removed: "<sandbox_dir>/" is cut from paths; a
// diagnostic (its location line and the source lines and notes under it) located in a file
// that is not one of `visible` (names relative to the sandbox directory) is replaced by one
// line saying so; a crash dump is replaced by one line; a use of a poisoned identifier gets a
// note that inline assembly is not allowed.
std::string FilterDiagnostics(std::string_view output, const std::filesystem::path& sandbox_dir,
                              std::span<const std::string> visible);

}  // namespace reef::code
