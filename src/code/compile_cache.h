// CompileCache: compiled actor implementations, keyed so an unchanged source never recompiles.
//
// Two in-memory maps (nothing is persisted; spec 001, "The cache is in-memory only"):
//   (SourceId, path, Compiler::Fingerprint(kind)) -> implementation id, or the compile error
//   implementation id -> shared_ptr<const actor::Implementation>
// The implementation id is actor::ImplementationId with the origin SourceOrigin(SourceId,
// path, fingerprint): the exact source text, the path it is compiled under (a compile input:
// diagnostics and the module's names carry it) and the compiler, plus the engine, ABI/host
// manifest and target (spec 001 "implementation identity"). Textually different sources are
// different implementations even when they compile to the same module, and so are the same
// text at two paths: each implementation's label is its path, which `reload` recompiles and
// the durable image records with it (one label per implementation id). Deterministic failures
// (compile errors, missing actor exports: InvalidArgument) are cached too; transient ones
// (timeouts, no temporary directory) are not.
//
// Thread ownership: any thread; the maps are protected by an internal mutex, which is not
// held while compiling. Two threads missing on the same key at once may both compile; the
// first result stored wins and both get it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <variant>

#include "actor/actor.h"
#include "code/compiler.h"
#include "code/source.h"
#include "code/source_store.h"
#include "core/mutex.h"
#include "core/status.h"

namespace reef::code {

// The implementation origin (actor::ImplementationId) of a source at `path` compiled by a
// compiler with `fingerprint` (Compiler::Fingerprint):
// "source <source_id>\npath <path>\ncompiler <SHA-256 of fingerprint>".
std::string SourceOrigin(std::string_view source_id, std::string_view path,
                         std::string_view fingerprint);

class CompileCache {
 public:
  // REQUIRES: compiler != nullptr.
  explicit CompileCache(std::shared_ptr<const Compiler> compiler)
      : compiler_(std::move(compiler)) {}

  // The implementation of `bytes` of kind `kind` at path `label`: from the cache, else compiled
  // with Compiler::Compile(kind, bytes, label) and wrapped by actor::MakeImplementation. Its
  // label is `label` (the same bytes under another label are another implementation).
  // Errors: those of Compiler::Compile and actor::MakeImplementation (InvalidArgument
  // "compile error:\n..." for a source that does not compile).
  Result<std::shared_ptr<const actor::Implementation>> Get(SourceKind kind, std::string_view bytes,
                                                           std::string_view label);

  // Get(file.kind, file.text, file.path): the implementation of a working source or revision.
  Result<std::shared_ptr<const actor::Implementation>> Get(const SourceFile& file) {
    return Get(file.kind, file.text, file.path);
  }

  // The cached implementation with id `implementation_id`, or nullptr.
  std::shared_ptr<const actor::Implementation> Find(std::string_view implementation_id) const;

  // How many compiles ran (cache misses); hits do not count.
  uint64_t compile_count() const;
  // How many implementations are cached.
  std::size_t size() const;

  const Compiler& compiler() const { return *compiler_; }

 private:
  using Entry = std::variant<std::string, Status>;  // implementation id, or the error

  // Constant after construction.
  const std::shared_ptr<const Compiler> compiler_;

  // Protected by mu_.
  mutable Mutex mu_;
  std::map<std::string, Entry, std::less<>> by_source_
      GUARDED_BY(mu_);  // SourceId + '\n' + fingerprint
  std::map<std::string, std::shared_ptr<const actor::Implementation>, std::less<>> implementations_
      GUARDED_BY(mu_);
  uint64_t compile_count_ GUARDED_BY(mu_) = 0;
};

}  // namespace reef::code
