#include "code/compile_cache.h"

#include <span>

#include "core/ids.h"

namespace reef::code {

std::string SourceOrigin(std::string_view source_id, std::string_view path,
                         std::string_view fingerprint) {
  // The fingerprint may span lines (clang --version); its hash keeps the origin one line each.
  // (A source path has no newline: ValidateSourcePath.)
  return "source " + std::string(source_id) + "\npath " + std::string(path) + "\ncompiler " +
         Sha256Hex(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(fingerprint.data()),
                                            fingerprint.size()));
}

Result<std::shared_ptr<const actor::Implementation>> CompileCache::Get(SourceKind kind,
                                                                       std::string_view bytes,
                                                                       std::string_view label) {
  const std::string source_id = SourceId(kind, bytes);
  std::string key = source_id + "\n" + std::string(label) + "\n" + compiler_->Fingerprint(kind);
  {
    MutexLock lock(mu_);
    auto found = by_source_.find(key);
    if (found != by_source_.end()) {
      if (const Status* error = std::get_if<Status>(&found->second)) return *error;
      auto implementation = implementations_.find(std::get<std::string>(found->second));
      if (implementation != implementations_.end()) return implementation->second;
    }
    ++compile_count_;
  }

  auto compiled = compiler_->Compile(kind, bytes, label);
  Result<std::shared_ptr<const actor::Implementation>> made =
      compiled.ok()
          ? actor::MakeImplementation(compiled->module, std::string(label),
                                      SourceOrigin(source_id, label, compiler_->Fingerprint(kind)))
          : Result<std::shared_ptr<const actor::Implementation>>(compiled.status());

  MutexLock lock(mu_);
  if (!made.ok()) {
    if (made.status().code() == Code::kInvalidArgument) by_source_.emplace(key, made.status());
    return made.status();
  }
  auto [it, inserted] = implementations_.emplace((*made)->id, *made);
  by_source_.insert_or_assign(key, (*made)->id);
  return it->second;
}

std::shared_ptr<const actor::Implementation> CompileCache::Find(
    std::string_view implementation_id) const {
  MutexLock lock(mu_);
  auto found = implementations_.find(implementation_id);
  return found == implementations_.end() ? nullptr : found->second;
}

uint64_t CompileCache::compile_count() const {
  MutexLock lock(mu_);
  return compile_count_;
}

std::size_t CompileCache::size() const {
  MutexLock lock(mu_);
  return implementations_.size();
}

}  // namespace reef::code
