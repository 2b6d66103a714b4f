#include "actor/durable_image.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace reef::actor {

Result<std::unique_ptr<DurableImage>> DurableImage::Open(const JournalOptions& options,
                                                         RecoveredImage* recovered,
                                                         JournalRecovery* recovery) {
  auto replay = [&](uint64_t seq, std::string_view record) {
    Status applied = recovered->Apply(record);
    if (applied.ok()) return applied;
    return Status::DataLoss(fmt::format("{} (record {} of the journal in {})", applied.message(),
                                        seq, options.dir.string()));
  };
  REEF_ASSIGN_OR_RETURN(std::unique_ptr<Journal> journal, Journal::Open(options, replay, recovery));
  std::unique_ptr<DurableImage> image(new DurableImage(std::move(journal)));
  MutexLock lock(image->mu_);
  for (const auto& [id, implementation] : recovered->implementations()) {
    image->implementations_.insert(id);
  }
  return image;
}

void DurableImage::WhenAppendedDurable(Journal::Done done) {
  {
    MutexLock lock(mu_);
    if (!failed_.ok()) return done(failed_);
  }
  journal_->WhenDurable(journal_->appended(), std::move(done));
}

void DurableImage::Append(std::string record) {
  auto seq = journal_->Append(std::move(record));
  if (seq.ok()) return;
  MutexLock lock(mu_);
  if (!failed_.ok()) return;
  failed_ =
      Status::Unavailable("the durable image could not record a change: " + seq.status().message());
  spdlog::error("durable image: {}; nothing the image does from now on is acknowledged",
                failed_.message());
}

bool DurableImage::FirstUseOf(const std::string& implementation_id) {
  MutexLock lock(mu_);
  return implementations_.insert(implementation_id).second;
}

}  // namespace reef::actor
