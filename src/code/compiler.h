// Compiler: turns one source text into a validated WebAssembly module.
//
// `.wat` compiles in-process (wasm::Module::FromText); a `.wasm` binary (built by another
// toolchain: AssemblyScript, Rust, ...) is only validated (wasm::Module::FromBinary). `.c` compiles
// with clang for wasm32 (C11, freestanding, no libc) together with the C SDK (sdk/c), using the
// flags of cmake/guest.cmake: each file is compiled with -O2 -c -mbulk-memory -flto, then linked by
// wasm-ld through clang without -O (so clang never runs a wasm-opt found on PATH) with
// --no-entry --export-dynamic --stack-first. Clang runs as a child process in its own process
// group, inside a fresh temporary directory, with a wall-clock timeout and an environment of
// PATH only. The compile of the guest's source runs in the sandbox of guest_sandbox.h: it sees
// only that source, the SDK headers and the C freestanding headers (no absolute or `..`
// includes, no system headers, no inline assembly), and its diagnostics are returned without
// any line of another file. Compile never throws and never stores anything: invalid source gives
// an error and no module (spec 001, "Invalid source is retained ... but does not produce a
// compiled artifact").
//
// The SDK's sources are the same for every guest: the first .c compile of a Compiler builds
// their objects into a directory of its own (removed with the Compiler) and every later one
// links those, so a guest compile runs clang twice (its source, the link) instead of once per
// SDK file more (an actor's compile: ~2 s of clang before, ~0.5 s after).
//
// Thread ownership: Compile may run on any thread concurrently (each call has its own
// temporary directory; clang's version is asked once, under a std::once_flag; the SDK objects
// are built once, under sdk_mu_, and read-only after).
// Compile blocks for up to the timeout: never call it on a reactor thread.
#pragma once

#include <chrono>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "code/source.h"
#include "core/mutex.h"
#include "core/status.h"
#include "wasm/module.h"

namespace reef::code {

struct CompilerOptions {
  // The clang driver for wasm32; empty = the one the build found (clang-16), if any.
  std::string clang;
  // The C SDK directory (reef.h and the reef_*.c sources); empty = the source tree's sdk/c.
  std::string sdk_dir;
  // Wall-clock limit of one clang run (compile or link); the process group is killed after it.
  std::chrono::milliseconds timeout{30'000};
  // Largest diagnostics text kept, in bytes; longer output is cut and says so.
  std::size_t max_diagnostics_bytes = 64u << 10;
};

// What a successful compile produced.
struct CompileOutput {
  std::shared_ptr<const wasm::Module> module;
  std::string diagnostics;  // compiler warnings, verbatim; empty when there were none
};

class Compiler {
 public:
  // Resolves the options' defaults. Never fails and runs nothing: clang is asked for its
  // version and resource directory on the first .c compile or Fingerprint(kC), since each of
  // those two runs costs about 0.1 s of CPU and most images never compile C. Without clang,
  // .wat still compiles and .c compiles fail with FailedPrecondition.
  static std::shared_ptr<const Compiler> Create(CompilerOptions options = {});

  // Compiles `bytes` of kind `kind`. `label` names the source in diagnostics: when it is a
  // valid source path, clang reports "<label>.c:LINE:COL: error: ..." and wabt
  // "<label>.wat:LINE:COL: ..." (a binary: "<label>.wasm:OFFSET: ..."); otherwise "source.c" /
  // "source.wat" / "source.wasm".
  // Errors: InvalidArgument "compile error:\n<diagnostics>" when the source does not compile
  // (clang's stderr filtered by FilterDiagnostics, or wabt's message) or includes a file by an
  // absolute or `..` path (CheckIncludes); LimitExceeded for the size
  // (ValidateSourceSize) or when clang exceeds the timeout; FailedPrecondition when .c is
  // asked for but no clang is configured (or it names no resource directory); Unavailable
  // when the temporary directory or the
  // child process cannot be created.
  Result<CompileOutput> Compile(SourceKind kind, std::string_view bytes,
                                std::string_view label) const;

  // A string that changes whenever the output for the same source of kind `kind` may change:
  // for `wat` and `wasm` the in-process engine; for `c` the clang path and `--version` output, the
  // flags and the SHA-256 of the SDK files. Part of the compile cache key (compile_cache.h).
  // The first call for `c` runs clang (ProbeClang) and so blocks like Compile.
  const std::string& Fingerprint(SourceKind kind) const;

  const CompilerOptions& options() const { return options_; }

 private:
  explicit Compiler(CompilerOptions options) : options_(std::move(options)) {}

  Result<CompileOutput> CompileC(std::string_view bytes, std::string_view file_stem) const;

  // The SDK's objects (one per SdkSources file), built on first use. Errors: those of the
  // SDK's compile (Internal: the SDK does not build; LimitExceeded: the timeout), not kept, so
  // the next compile tries again.
  struct SdkObjects;
  Result<std::shared_ptr<const SdkObjects>> BuildSdkObjects() const;
  mutable Mutex sdk_mu_;
  mutable std::shared_ptr<const SdkObjects> sdk_objects_ GUARDED_BY(sdk_mu_);

  // Runs `clang --version` and `clang -print-resource-dir` and hashes the SDK files, once per
  // Compiler (the first caller runs it, concurrent ones wait for it), setting the two members
  // below it; they are constant afterwards.
  void ProbeClang() const;
  mutable std::once_flag clang_probed_;
  mutable std::string c_fingerprint_;
  mutable std::filesystem::path resource_include_dir_;  // clang's headers; empty without clang

  // Constant after Create.
  CompilerOptions options_;
  std::string wat_fingerprint_;
  std::string wasm_fingerprint_;
};

}  // namespace reef::code
