// The durable image (issue 16; docs/operations.md "Durable image"): opening the journal in
// <data dir>/image, bringing the recorded actors back, and the output gate of the ops.
#include "actor/durable_open.h"
#include "image/detail/image_state.h"

namespace reef::image {

Status Image::State::OpenDurable() {
  actor::DurableImageOptions durable_options;
  actor::JournalOptions& journal = durable_options.journal;
  journal.dir = options.data_dir / "image";
  // A whole mailbox is one record when set-messages replaces it.
  journal.max_record_bytes = 256u << 20;
  journal.segment_bytes = options.journal_bytes;
  durable_options.compact_after_bytes = options.journal_bytes;
  durable_options.value_limits = runtime->options().value_limits;
  REEF_ASSIGN_OR_RETURN(
      actor::OpenedGroup opened,
      actor::OpenDurableGroup(*runtime, actor::SchedulingMode::kManual, durable_options, "image"));
  durable = std::move(opened.durable);
  group = std::move(opened.group);
  // The labels of pending installs (reload, become), which inspect shows.
  MutexLock lock(mu);
  for (auto& [ref, label] : opened.pending_installs) pending_labels[ref] = std::move(label);
  return Status::Ok();
}

void Image::State::AfterDurable(std::function<void(Status)> done) {
  if (!durable) return done(Status::Ok());
  runtime->WhenDurable(*group, std::nullopt, std::move(done));
}

}  // namespace reef::image
