// The durable image (actor/durable_image.h, image_record.h): a durable manual group records
// every change of its actors, and a reopened journal restores the same actors — refs,
// incarnations, states, statuses, mailboxes in order — whatever mix of sends, ticks, lifecycle
// and repair operations made them. An interrupted invocation is retried after a restore;
// records that contradict each other are refused. Run under ThreadSanitizer (test-tsan).
#include "actor/durable_image.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <future>

#include "actor/runtime.h"
#include "unit/actor/durable_image_support.h"
#include "unit/events/event_store_test_support.h"

namespace reef::actor {
namespace {

using namespace durable_testing;  // NOLINT: the harness
using events::testing::TempDir;

TEST(DurableImageTest, ARestoreBringsBackEveryActorAsItWas) {
  TempDir dir;
  auto counter = LoadGuest("counter");
  auto hello = LoadGuest("hello");
  ASSERT_TRUE(counter && hello);
  std::map<std::string, std::shared_ptr<const Implementation>> known{{counter->id, counter},
                                                                     {hello->id, hello}};
  std::vector<ActorSnapshot> before;
  ActorRef removed = test_support::NumberedRef(1);
  {
    Opened image(dir.path());
    ASSERT_TRUE(image.group);
    ActorRef a = image.Spawn(counter, 0), b = image.Spawn(counter, 10), c = image.Spawn(counter, 7);
    ActorRef d = image.Spawn(counter, 1), e = image.Spawn(counter, 2);
    removed = image.Spawn(counter, 3);
    Runtime& rt = *image.runtime;
    ASSERT_TRUE(rt.TrySend(a, SendTo(b, 5)).status.ok());
    ASSERT_TRUE(rt.TrySend(a, SendTo(c, 2)).status.ok());
    ASSERT_TRUE(rt.Tick(20, 1000000, image.group.get()).ok());
    // Queued messages in order, from the host and from an actor.
    ASSERT_TRUE(rt.TrySend(b, MessageOf(R"({"op": "add", "value": 1})")).status.ok());
    ASSERT_TRUE(rt.TrySend(a, SendTo(b, 3)).status.ok());
    ASSERT_TRUE(rt.Pause(b).ok());
    ASSERT_TRUE(rt.Tick(20, 1000000, image.group.get()).ok());
    ASSERT_TRUE(rt.TrySend(b, MessageOf(R"({"op": "add", "value": 4})")).status.ok());
    // A failed actor keeps its input reserved; repair changes a stopped one.
    ASSERT_TRUE(rt.TrySend(c, MessageOf(R"({"op": "nonsense"})")).status.ok());
    ASSERT_TRUE(rt.TrySend(c, MessageOf(R"({"op": "add", "value": 1})")).status.ok());
    ASSERT_TRUE(rt.Tick(20, 1000000, image.group.get()).ok());
    ASSERT_TRUE(rt.Kill(d).ok());
    ASSERT_TRUE(rt.SetState(d, Value::Int(99)).ok());
    ASSERT_TRUE(rt.SetMessages(d, {MessageOf(R"({"op": "add", "value": 1})")},
                               {MessageOf(R"({"op": "add", "value": 2})")})
                    .ok());
    ASSERT_TRUE(rt.SetLogLevel(d, LogLevel::kDebug).ok());
    ASSERT_TRUE(rt.Stop(e).ok());
    ASSERT_TRUE(rt.Tick(5, 1000000, image.group.get()).ok());
    ASSERT_TRUE(rt.Restart(e).ok());
    ASSERT_TRUE(rt.Install(e, hello).ok());
    ASSERT_TRUE(rt.Kill(removed).ok());
    ASSERT_TRUE(rt.RemoveStopped(removed).ok());
    image.Settle();
    before = rt.List(image.group.get());
    ASSERT_EQ(before.size(), 5u);
    auto failed = rt.Inspect(c);
    ASSERT_TRUE(failed.ok());
    EXPECT_EQ(failed->status, ActorStatus::kFailed);
    EXPECT_TRUE(failed->reserved.has_value());
  }
  ActorRef changed = removed;
  Value changed_to;
  {
    Opened again(dir.path());
    ASSERT_TRUE(again.group);
    EXPECT_FALSE(again.recovered.actors().contains(removed));
    ASSERT_TRUE(again.Restore(known).ok());
    std::vector<ActorSnapshot> after = again.runtime->List(again.group.get());
    ASSERT_EQ(after.size(), before.size());
    for (size_t i = 0; i < before.size(); ++i) ExpectSameActor(before[i], after[i]);
    EXPECT_EQ(
        again.runtime->TrySend(removed, MessageOf(R"({"op": "add", "value": 1})")).status.code(),
        Code::kNotFound);
    // The restored image goes on from there, and records again.
    for (const ActorSnapshot& snapshot : after) {
      if (snapshot.status == ActorStatus::kIdle && snapshot.implementation_id == counter->id) {
        changed = snapshot.ref;
        changed_to = Value::Int(snapshot.state.as_int() + 100);
      }
    }
    ASSERT_NE(changed, removed);
    ASSERT_TRUE(
        again.runtime->TrySend(changed, MessageOf(R"({"op": "add", "value": 100})")).status.ok());
    ASSERT_TRUE(again.runtime->Tick(20, 1000000, again.group.get()).ok());
    again.Settle();
  }
  Opened third(dir.path());
  ASSERT_TRUE(third.recovered.actors().contains(changed));
  EXPECT_EQ(third.recovered.actors().at(changed).state.ToValue(), changed_to);
}

TEST(DurableImageTest, AnInterruptedInvocationIsRetriedAfterARestore) {
  TempDir dir;
  auto counter = LoadGuest("counter");
  std::map<std::string, std::shared_ptr<const Implementation>> known{{counter->id, counter}};
  ActorRef a = test_support::NumberedRef(1);
  {
    Opened image(dir.path());
    a = image.Spawn(counter, 40);
    ASSERT_TRUE(image.runtime->TrySend(a, MessageOf(R"({"op": "add", "value": 2})")).status.ok());
    ASSERT_TRUE(image.runtime->TrySend(a, MessageOf(R"({"op": "add", "value": 3})")).status.ok());
    // One instruction per slice: the first message is reserved and its invocation unfinished.
    ASSERT_TRUE(image.runtime->Tick(1, 1, image.group.get()).ok());
    auto running = image.runtime->Inspect(a);
    ASSERT_TRUE(running.ok());
    ASSERT_EQ(running->status, ActorStatus::kRunning);
    // A change recorded mid-invocation (the actor's header, with its input reserved) does not
    // change what comes back.
    ASSERT_TRUE(image.runtime->SetLogLevel(a, LogLevel::kWarn).ok());
    image.Settle();
  }
  Opened again(dir.path());
  ASSERT_TRUE(again.Restore(known).ok());
  auto restored = again.runtime->Inspect(a);
  ASSERT_TRUE(restored.ok());
  EXPECT_EQ(restored->status, ActorStatus::kIdle);
  EXPECT_EQ(restored->state, Value::Int(40));
  EXPECT_EQ(restored->log_level, LogLevel::kWarn);
  EXPECT_FALSE(restored->reserved.has_value());
  ASSERT_EQ(restored->queued.size(), 2u);  // the interrupted input first
  EXPECT_EQ(restored->queued[0].message.ToValue(), MessageOf(R"({"op": "add", "value": 2})"));
  ASSERT_TRUE(again.runtime->Tick(50, 1000000, again.group.get()).ok());
  auto done = again.runtime->Inspect(a);
  ASSERT_TRUE(done.ok());
  EXPECT_EQ(done->state, Value::Int(45));
  EXPECT_TRUE(done->queued.empty());
}

// Every actor of `image`, and their number.
std::vector<ActorSnapshot> All(Opened& image) {
  return image.runtime->List(image.group.get());
}

TEST(DurableImageTest, CompactionReplacesClosedJournalFilesWithASnapshot) {
  TempDir dir;
  auto counter = LoadGuest("counter");
  std::map<std::string, std::shared_ptr<const Implementation>> known{{counter->id, counter}};
  auto journal_files = [&] {
    size_t n = 0;
    for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
      n += entry.path().extension() == ".log" ? 1 : 0;
    }
    return n;
  };
  std::vector<ActorSnapshot> before;
  {
    Opened image(dir.path(), /*segment_bytes=*/4'096);
    ASSERT_TRUE(image.status.ok()) << image.status.ToString();
    std::vector<ActorRef> refs;
    for (int i = 0; i < 20; ++i) refs.push_back(image.Spawn(counter, i));
    auto round = [&] {
      for (size_t i = 0; i < refs.size(); ++i) {
        ASSERT_TRUE(
            image.runtime->TrySend(refs[i], SendTo(refs[(i + 1) % refs.size()], 1)).status.ok());
      }
      ASSERT_TRUE(image.runtime->Tick(3, 1'000'000, image.group.get()).ok());
    };
    for (int i = 0; i < 5; ++i) ASSERT_NO_FATAL_FAILURE(round());
    image.Settle();
    ASSERT_TRUE(image.durable->CompactNow().ok());  // a second one builds on the first
    EXPECT_EQ(image.durable->stats().compactions, 1u);
    // A file is closed only between two batches of records, so how many rounds fill several
    // files depends on how the writer batched them (fewer, larger batches under TSan).
    for (int i = 0; i < 200 && journal_files() <= 3; ++i) {
      ASSERT_NO_FATAL_FAILURE(round());
      ASSERT_NO_FATAL_FAILURE(image.Settle());
    }
    ASSERT_TRUE(image.runtime->Pause(refs[3]).ok());
    ASSERT_TRUE(
        image.runtime->TrySend(refs[3], MessageOf(R"({"op": "add", "value": 1000})")).status.ok());
    image.Settle();
    EXPECT_GT(journal_files(), 3u);
    ASSERT_TRUE(image.durable->CompactNow().ok());
    DurableImageStats stats = image.durable->stats();
    EXPECT_EQ(stats.compactions, 2u);
    EXPECT_GT(stats.snapshot_seq, 0u);
    EXPECT_GT(stats.snapshot_bytes, 0u);
    EXPECT_EQ(journal_files(), 1u) << "only the file being written is left";
    before = All(image);
  }
  {
    Opened again(dir.path(), 4'096);
    ASSERT_TRUE(again.status.ok()) << again.status.ToString();
    ASSERT_TRUE(again.Restore(known).ok());
    std::vector<ActorSnapshot> after = All(again);
    ASSERT_EQ(after.size(), before.size());
    for (size_t i = 0; i < before.size(); ++i) ExpectSameActor(before[i], after[i]);
  }
  // A damaged snapshot is refused, never skipped: the files it replaced are gone.
  std::filesystem::path snapshot;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    if (entry.path().extension() == ".img") snapshot = entry.path();
  }
  ASSERT_FALSE(snapshot.empty());
  {
    std::fstream file(snapshot, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(100);
    file.put('\x5a');
  }
  Opened damaged(dir.path());
  EXPECT_EQ(damaged.status.code(), Code::kDataLoss) << damaged.status.ToString();
  EXPECT_NE(damaged.status.message().find(snapshot.filename().string()), std::string::npos)
      << damaged.status.ToString();
}

TEST(DurableImageTest, AJournalFileMissingAfterTheSnapshotIsRefused) {
  TempDir dir;
  auto counter = LoadGuest("counter");
  {
    Opened image(dir.path(), /*segment_bytes=*/2'048);
    ASSERT_TRUE(image.status.ok());
    ActorRef a = image.Spawn(counter, 0);
    for (int i = 0; i < 200; ++i) {
      ASSERT_TRUE(image.runtime->TrySend(a, MessageOf(R"({"op": "add", "value": 1})")).status.ok());
      ASSERT_TRUE(image.runtime->Tick(1, 1'000'000, image.group.get()).ok());
      if (i == 50) {
        image.Settle();
        ASSERT_TRUE(image.durable->CompactNow().ok());
      }
    }
    image.Settle();
  }
  std::vector<std::filesystem::path> logs;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    if (entry.path().extension() == ".log") logs.push_back(entry.path());
  }
  std::sort(logs.begin(), logs.end());
  ASSERT_GE(logs.size(), 2u);
  std::filesystem::remove(logs.front());  // the first file after the snapshot
  {
    Opened refused(dir.path());
    EXPECT_EQ(refused.status.code(), Code::kDataLoss) << refused.status.ToString();
  }
  for (const auto& log : logs) std::filesystem::remove(log);  // every file after it
  for (int attempt = 0; attempt < 2; ++attempt) {             // a refused open changes nothing
    Opened refused(dir.path());
    EXPECT_EQ(refused.status.code(), Code::kDataLoss) << refused.status.ToString();
    EXPECT_NE(refused.status.message().find("missing"), std::string::npos)
        << refused.status.ToString();
  }
}

TEST(DurableImageTest, AChangeThatCannotBeRecordedStopsTheJournalAtAConsistentPrefix) {
  TempDir dir;
  auto counter = LoadGuest("counter");
  ActorRef a = test_support::NumberedRef(1), b = a;
  {
    // The module fits in a record, a 100 KiB state does not.
    Opened image(dir.path(), 64ull << 20, /*max_record_bytes=*/64 << 10);
    ASSERT_TRUE(image.status.ok()) << image.status.ToString();
    a = image.Spawn(counter, 1);
    ASSERT_TRUE(image.runtime->Pause(a).ok());
    image.Settle();  // acknowledged: these stay
    ASSERT_TRUE(image.runtime->SetState(a, Value::String(std::string(100 << 10, 'x'))).ok());
    b = image.Spawn(counter, 2);  // after the refused record
    ASSERT_TRUE(image.runtime->PostAndWait(image.group->home, [] {}).ok());
    std::promise<Status> gate;
    image.durable->WhenAppendedDurable([&](Status status) { gate.set_value(status); });
    Status answer = gate.get_future().get();
    EXPECT_EQ(answer.code(), Code::kUnavailable) << "nothing is acknowledged any more";
  }
  Opened again(dir.path());
  ASSERT_TRUE(again.status.ok()) << again.status.ToString();
  ASSERT_TRUE(again.recovered.actors().contains(a));
  EXPECT_EQ(again.recovered.actors().at(a).state.ToValue(), Value::Int(1)) << "the old state";
  EXPECT_FALSE(again.recovered.actors().contains(b)) << "nothing after the missing record";
}

TEST(DurableImageTest, AStopAskedMidInvocationStillLetsThatInputFinishAfterARestore) {
  TempDir dir;
  auto counter = LoadGuest("counter");
  std::map<std::string, std::shared_ptr<const Implementation>> known{{counter->id, counter}};
  ActorRef a = test_support::NumberedRef(1);
  {
    Opened image(dir.path());
    a = image.Spawn(counter, 40);
    ASSERT_TRUE(image.runtime->TrySend(a, MessageOf(R"({"op": "add", "value": 2})")).status.ok());
    ASSERT_TRUE(image.runtime->TrySend(a, MessageOf(R"({"op": "add", "value": 3})")).status.ok());
    ASSERT_TRUE(image.runtime->Tick(1, 1, image.group.get()).ok());
    ASSERT_TRUE(image.runtime->Stop(a).ok());  // the handler is to finish first
    image.Settle();
  }
  Opened again(dir.path());
  ASSERT_TRUE(again.Restore(known).ok());
  ASSERT_TRUE(again.runtime->Tick(50, 1'000'000, again.group.get()).ok());
  auto stopped = again.runtime->Inspect(a);
  ASSERT_TRUE(stopped.ok());
  EXPECT_EQ(stopped->status, ActorStatus::kStopped);
  EXPECT_EQ(stopped->state, Value::Int(42)) << "the interrupted input, then the stop";
  ASSERT_EQ(stopped->queued.size(), 1u);
  EXPECT_EQ(stopped->queued[0].message.ToValue(), MessageOf(R"({"op": "add", "value": 3})"));
}

TEST(DurableImageTest, ContradictoryRecordsAreRefused) {
  auto counter = LoadGuest("counter");
  ASSERT_TRUE(counter);
  RecoveredImage image{ValueLimits{}};
  ActorRef a = test_support::NumberedRef(1);
  std::string record;
  EncodeDeliveryRecord(a, Envelope{std::nullopt, *CborValue::Encode(Value::Int(1), {})}, &record);
  Status unknown = image.Apply(record);
  EXPECT_EQ(unknown.code(), Code::kDataLoss) << unknown.ToString();
  EXPECT_NE(unknown.message().find("never spawned"), std::string::npos) << unknown.ToString();

  ActorRecord header{a};
  header.implementation_id = counter->id;
  header.state = *CborValue::Encode(Value::Int(0), {});
  EncodeActorRecord(header, /*spawned=*/true, /*dropped_first=*/false, &record);
  EXPECT_EQ(image.Apply(record).code(), Code::kDataLoss) << "its implementation was not recorded";
  EncodeImplementationRecord(*counter, &record);
  ASSERT_TRUE(image.Apply(record).ok());
  EncodeActorRecord(header, /*spawned=*/true, /*dropped_first=*/false, &record);
  ASSERT_TRUE(image.Apply(record).ok());
  EXPECT_EQ(image.Apply(record).code(), Code::kDataLoss) << "spawned twice";

  EncodeCommitRecord(a, header.state, /*acknowledges=*/true, false, /*routed=*/false, {}, &record);
  EXPECT_EQ(image.Apply(record).code(), Code::kDataLoss) << "acknowledges with no message";
  for (size_t cut = 1; cut < record.size(); ++cut) {
    EXPECT_EQ(image.Apply(std::string_view(record).substr(0, cut)).code(), Code::kDataLoss) << cut;
  }
  EXPECT_EQ(image.Apply(record + "x").code(), Code::kDataLoss);
  EXPECT_EQ(image.Apply("\x0a").code(), Code::kDataLoss);  // no such record kind
  EXPECT_EQ(image.actors().at(a).state, header.state);     // nothing refused changed it
}

TEST(DurableImageTest, AManualRuntimeWithSeveralReactorsHasNoDurableGroups) {
  TempDir dir;
  Opened image(dir.path());
  RuntimeOptions manual;
  manual.reactors = 2;  // a manual runtime spreads a group's actors over its reactors
  auto runtime = std::move(*Runtime::Create(manual));
  EXPECT_EQ(runtime->CreateGroup(SchedulingMode::kManual, image.durable).status().code(),
            Code::kInvalidArgument);
}

TEST(DurableImageTest, ASecondOpenOfTheSameJournalIsRefused) {
  TempDir dir;
  Opened image(dir.path());
  RecoveredImage recovered{ValueLimits{}};
  DurableImageOptions options;
  options.journal.dir = dir.path();
  auto second = DurableImage::Open(options, &recovered);
  EXPECT_EQ(second.status().code(), Code::kUnavailable);
  EXPECT_NE(second.status().message().find("in use by another process"), std::string::npos);
}

}  // namespace
}  // namespace reef::actor
