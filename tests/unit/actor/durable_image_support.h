// Support of the durable group tests (durable_image_test.cc, durable_routed_test.cc): a
// fleet with one durable group on a journal in a temporary directory, reopened as a restart
// would, and what a restore must keep of an actor. Everything is inline in
// reef::actor::durable_testing.
#pragma once

#include <gtest/gtest.h>

#include <future>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "actor/durable_image.h"
#include "actor/runtime.h"
#include "unit/actor/test_guests.h"

namespace reef::actor::durable_testing {

using test_support::Json;
using test_support::LoadGuest;

inline Value MessageOf(std::string_view json) {
  return Json(json);
}

inline Value SendTo(const ActorRef& target, int64_t value) {
  Record fields;
  fields.emplace("op", Value::String("send"));
  fields.emplace("value", Value::Int(value));
  fields.emplace("target", Value::Ref(target));
  return Value::RecordOf(std::move(fields));
}

// One open durable group: a two-reactor fleet with a durable group of `mode` on it (manual:
// the live image's kind; free-running: unit instances' kind, spread over both reactors).
struct Opened {
  std::unique_ptr<Runtime> runtime;
  std::shared_ptr<DurableImage> durable;
  std::shared_ptr<ActorGroup> group;
  RecoveredImage recovered{ValueLimits{}};
  JournalRecovery recovery;
  Status status;  // of DurableImage::Open

  explicit Opened(const std::filesystem::path& dir, uint64_t segment_bytes = 64ull << 20,
                  size_t max_record_bytes = 64u << 20,
                  SchedulingMode mode = SchedulingMode::kManual) {
    RuntimeOptions options;
    options.mode = SchedulingMode::kFreeRunning;
    options.reactors = 2;
    runtime = std::move(*Runtime::Create(options));
    DurableImageOptions durable_options;
    durable_options.journal.dir = dir;
    durable_options.journal.segment_bytes = segment_bytes;
    durable_options.journal.max_record_bytes = max_record_bytes;
    durable_options.compact_after_bytes = 0;  // CompactNow only
    auto opened = DurableImage::Open(durable_options, &recovered, &recovery);
    status = opened.status();
    if (!opened.ok()) return;
    durable = std::move(*opened);
    group = *runtime->CreateGroup(mode, durable);
  }
  ~Opened() {
    if (group) {
      EXPECT_TRUE(runtime->RemoveGroup(*group).ok());
    }
  }

  // Restores what the journal held, with the implementations the test spawned from.
  Status Restore(const std::map<std::string, std::shared_ptr<const Implementation>>& known) {
    std::vector<ActorRecord> actors;
    for (auto& [ref, actor] : recovered.actors()) actors.push_back(std::move(actor));
    Status restored = runtime->Restore(group, std::move(actors), [&](std::string_view id) {
      auto it = known.find(std::string(id));
      return it == known.end() ? nullptr : it->second;
    });
    return restored.ok() ? runtime->StartRestored(*group) : restored;
  }

  ActorRef Spawn(const std::shared_ptr<const Implementation>& implementation, int64_t state,
                 std::optional<uint32_t> reactor = std::nullopt) {
    SpawnOptions options;
    options.group = group;
    options.reactor = reactor;
    options.mailbox_capacity = 1000;
    auto ref = runtime->Spawn(implementation, Value::Int(state), options);
    EXPECT_TRUE(ref.ok()) << ref.status().ToString();
    return *ref;
  }

  // Waits until every change made so far is on disk.
  void Settle() {
    for (uint32_t reactor = 0; reactor < 2; ++reactor) {
      ASSERT_TRUE(runtime->PostAndWait(reactor, [] {}).ok());
    }
    std::promise<Status> durable_now;
    durable->WhenAppendedDurable([&](Status done) { durable_now.set_value(done); });
    ASSERT_TRUE(durable_now.get_future().get().ok());
  }
};

// The parts of a snapshot a restore keeps (an invocation in progress is not one of them).
inline void ExpectSameActor(const ActorSnapshot& want, const ActorSnapshot& got) {
  SCOPED_TRACE(want.ref.str());
  EXPECT_EQ(got.ref, want.ref);
  EXPECT_EQ(got.implementation_id, want.implementation_id);
  EXPECT_EQ(got.incarnation, want.incarnation);
  EXPECT_EQ(got.status, want.status);
  EXPECT_EQ(got.paused_from, want.paused_from);
  EXPECT_EQ(got.state, want.state);
  EXPECT_EQ(got.reserved, want.reserved);
  EXPECT_EQ(got.queued, want.queued);
  EXPECT_EQ(got.mailbox_capacity, want.mailbox_capacity);
  EXPECT_EQ(got.stopping, want.stopping);
  EXPECT_EQ(got.failure, want.failure);
  EXPECT_EQ(got.log_level, want.log_level);
  EXPECT_EQ(got.pending_install, want.pending_install);
}

}  // namespace reef::actor::durable_testing
