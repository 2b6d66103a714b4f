#include "code/compile_cache.h"

namespace reef::code {

Result<std::shared_ptr<const actor::Implementation>> CompileCache::Get(SourceKind kind,
                                                                       std::string_view bytes,
                                                                       std::string_view label) {
  std::string key = SourceId(kind, bytes) + "\n" + compiler_->Fingerprint(kind);
  {
    std::lock_guard lock(mu_);
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
      compiled.ok() ? actor::MakeImplementation(compiled->module, std::string(label))
                    : Result<std::shared_ptr<const actor::Implementation>>(compiled.status());

  std::lock_guard lock(mu_);
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
  std::lock_guard lock(mu_);
  auto found = implementations_.find(implementation_id);
  return found == implementations_.end() ? nullptr : found->second;
}

uint64_t CompileCache::compile_count() const {
  std::lock_guard lock(mu_);
  return compile_count_;
}

std::size_t CompileCache::size() const {
  std::lock_guard lock(mu_);
  return implementations_.size();
}

}  // namespace reef::code
