// Durable free-running groups (actor/durable_image.h "routed commits"): actors spread over
// reactors send each other messages that are in flight between a commit and an arrival; a
// reopened journal brings every mailbox back in the order it had, also across a drain that
// moves actors while messages fly; a message a crash caught in flight arrives after the restore,
// once; snapshots keep messages in flight. Run under ThreadSanitizer (test-tsan).
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "actor/durable_image.h"
#include "actor/image_snapshot.h"
#include "actor/journal.h"
#include "actor/runtime.h"
#include "unit/actor/durable_image_support.h"
#include "unit/events/event_store_test_support.h"

namespace reef::actor {
namespace {

using namespace durable_testing;  // NOLINT: the harness
using events::testing::TempDir;

constexpr auto kFreeRunning = SchedulingMode::kFreeRunning;

// Waits (up to 10 s) until `done` holds for the group's snapshot.
bool WaitFor(Runtime& runtime, const ActorGroup& group,
             const std::function<bool(const std::vector<ActorSnapshot>&)>& done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    if (done(runtime.List(&group))) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return false;
}

size_t Queued(const std::vector<ActorSnapshot>& actors, const ActorRef& ref) {
  for (const ActorSnapshot& a : actors) {
    if (a.ref == ref) return a.queued.size() + (a.reserved ? 1 : 0);
  }
  return 0;
}

// Senders on both reactors send to paused receivers on both reactors (some sends within a
// commit, some in flight across), while the host sends to the receivers too: each receiver's
// mailbox interleaves the two. With `drain`, reactor 0 is drained halfway, so actors move
// while messages are on their way to them.
void ExpectMailboxesSurviveAReopen(bool drain) {
  TempDir dir;
  auto counter = LoadGuest("counter");
  ASSERT_TRUE(counter);
  std::map<std::string, std::shared_ptr<const Implementation>> known{{counter->id, counter}};
  std::vector<ActorSnapshot> before;
  constexpr int kRounds = 60;
  {
    Opened group(dir.path(), 64ull << 20, 64u << 20, kFreeRunning);
    ASSERT_TRUE(group.group);
    Runtime& rt = *group.runtime;
    ActorRef r0 = group.Spawn(counter, 0, 0), r1 = group.Spawn(counter, 0, 1);
    ActorRef s0 = group.Spawn(counter, 0, 0), s1 = group.Spawn(counter, 0, 1);
    ASSERT_TRUE(rt.Pause(r0).ok());
    ASSERT_TRUE(rt.Pause(r1).ok());
    for (int i = 1; i <= kRounds; ++i) {
      if (drain && i == kRounds / 2) {
        ASSERT_TRUE(rt.Drain(0).ok());
      }
      for (const auto& [from, to] : {std::pair{s0, r1}, std::pair{s1, r0}, std::pair{s0, r0}}) {
        ASSERT_TRUE(rt.Send(from, SendTo(to, i), std::chrono::seconds(5)).status.ok());
      }
      for (const ActorRef& to : {r0, r1}) {
        ASSERT_TRUE(rt.Send(to, MessageOf(R"({"op": "add", "value": -1})"), std::chrono::seconds(5))
                        .status.ok());
      }
    }
    ASSERT_TRUE(WaitFor(rt, *group.group, [&](const std::vector<ActorSnapshot>& now) {
      return Queued(now, r0) == 3u * kRounds && Queued(now, r1) == 2u * kRounds &&
             Queued(now, s0) == 0 && Queued(now, s1) == 0;
    }));
    group.Settle();
    before = rt.List(group.group.get());
  }
  Opened again(dir.path(), 64ull << 20, 64u << 20, kFreeRunning);
  ASSERT_TRUE(again.group);
  EXPECT_TRUE(again.recovered.in_flight().empty());
  ASSERT_TRUE(again.Restore(known).ok());
  std::vector<ActorSnapshot> after = again.runtime->List(again.group.get());
  ASSERT_EQ(after.size(), before.size());
  for (size_t i = 0; i < before.size(); ++i) ExpectSameActor(before[i], after[i]);
}

TEST(DurableRoutedTest, MailboxesComeBackInOrderAcrossReactors) {
  ExpectMailboxesSurviveAReopen(/*drain=*/false);
}

TEST(DurableRoutedTest, MailboxesComeBackInOrderWhenActorsMovedWhileMessagesFlew) {
  ExpectMailboxesSurviveAReopen(/*drain=*/true);
}

// The records of a journal a crash cut between a routed commit's send and its arrival.
struct CutJournal {
  std::shared_ptr<const Implementation> counter = LoadGuest("counter");
  ActorRef sender = test_support::NumberedRef(1), target = test_support::NumberedRef(2);
  CborValue add = *CborValue::Encode(MessageOf(R"({"op": "add", "value": 1})"), {});
  CborValue host = *CborValue::Encode(MessageOf(R"({"op": "add", "value": 7})"), {});

  std::vector<std::string> Records() const {
    std::vector<std::string> records(5);
    EncodeImplementationRecord(*counter, &records[0]);
    for (const ActorRef& ref : {sender, target}) {
      ActorRecord header{ref};
      header.implementation_id = counter->id;
      header.state = *CborValue::Encode(Value::Int(0), {});
      header.mailbox_capacity = 8;
      EncodeActorRecord(header, /*spawned=*/true, /*dropped_first=*/false,
                        &records[ref == sender ? 1 : 2]);
    }
    std::optional<ActorRef> from = sender;
    RecordedSend send{&target, &from, &add, /*origin=*/41};
    EncodeCommitRecord(sender, *CborValue::Encode(Value::Int(0), {}), /*acknowledges=*/false,
                       /*stopped=*/false, /*routed=*/true, {send}, &records[3]);
    // The host's message reached the target first: the routed one was still on its way.
    EncodeDeliveryRecord(target, Envelope{std::nullopt, host}, &records[4]);
    return records;
  }
};

// Writes `records` as a new journal in `dir`, durably.
Status WriteJournal(const std::filesystem::path& dir, std::vector<std::string> records) {
  JournalOptions options;
  options.dir = dir;
  auto replay_nothing = [](uint64_t, std::string_view) { return Status::Ok(); };
  REEF_ASSIGN_OR_RETURN(auto journal, Journal::Open(options, replay_nothing));
  uint64_t last = 0;
  for (std::string& record : records) {
    REEF_ASSIGN_OR_RETURN(last, journal->Append(std::move(record)));
  }
  return journal->WaitDurable(last);
}

TEST(DurableRoutedTest, AMessageACrashCaughtInFlightArrivesOnceAfterTheRestore) {
  TempDir dir;
  CutJournal cut;
  ASSERT_TRUE(cut.counter);
  ASSERT_TRUE(WriteJournal(dir.path(), cut.Records()).ok());
  for (int open = 0; open < 2; ++open) {  // the arrival is recorded once, not again
    SCOPED_TRACE(open);
    Opened group(dir.path(), 64ull << 20, 64u << 20, kFreeRunning);
    ASSERT_TRUE(group.group) << group.status.ToString();
    EXPECT_TRUE(group.recovered.in_flight().empty());
    EXPECT_GT(group.recovered.last_origin(), 0u);
    const ActorRecord& target = group.recovered.actors().at(cut.target);
    ASSERT_EQ(target.messages.size(), 2u);
    EXPECT_EQ(target.messages[0].message, cut.host);
    EXPECT_EQ(target.messages[1].message, cut.add);
    EXPECT_EQ(target.messages[1].sender, std::optional<ActorRef>(cut.sender));
  }
}

TEST(DurableRoutedTest, RestoredActorsRunOnlyOnceEveryBatchIsThere) {
  TempDir dir;
  CutJournal cut;
  ASSERT_TRUE(cut.counter);
  {  // the sender's first message sends 5 to the target
    std::vector<std::string> records = cut.Records();
    records.resize(3);  // the implementation and the two spawns
    std::string send;
    EncodeDeliveryRecord(
        cut.sender, Envelope{std::nullopt, *CborValue::Encode(SendTo(cut.target, 5), {})}, &send);
    records.push_back(std::move(send));
    ASSERT_TRUE(WriteJournal(dir.path(), std::move(records)).ok());
  }
  Opened group(dir.path(), 64ull << 20, 64u << 20, kFreeRunning);
  ASSERT_TRUE(group.group) << group.status.ToString();
  auto known = [&](std::string_view id) { return id == cut.counter->id ? cut.counter : nullptr; };
  // The sender first, alone: it must not run before its target is restored.
  std::vector<ActorRecord> first, second;
  first.push_back(std::move(group.recovered.actors().at(cut.sender)));
  second.push_back(std::move(group.recovered.actors().at(cut.target)));
  ASSERT_TRUE(group.runtime->Restore(group.group, std::move(first), known).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // time to run, if it could
  ASSERT_TRUE(group.runtime->Restore(group.group, std::move(second), known).ok());
  ASSERT_TRUE(group.runtime->StartRestored(*group.group).ok());
  ASSERT_TRUE(WaitFor(*group.runtime, *group.group, [&](const std::vector<ActorSnapshot>& now) {
    for (const ActorSnapshot& a : now) {
      if (a.ref == cut.target) return a.state == Value::Int(5);
    }
    return false;
  }));
  auto sender = group.runtime->Inspect(cut.sender);
  ASSERT_TRUE(sender.ok());
  EXPECT_EQ(sender->status, ActorStatus::kIdle) << sender->failure.value_or("");
}

TEST(DurableRoutedTest, ArrivalsMustMatchAMessageInFlight) {
  CutJournal cut;
  ASSERT_TRUE(cut.counter);
  RecoveredImage image{ValueLimits{}};
  for (const std::string& record : cut.Records()) ASSERT_TRUE(image.Apply(record).ok());
  std::string record;
  EncodeArrivalRecord(cut.sender, 41, &record);  // in flight, but to the other actor
  EXPECT_EQ(image.Apply(record).code(), Code::kDataLoss);
  EncodeArrivalRecord(cut.target, 42, &record);  // never sent
  EXPECT_EQ(image.Apply(record).code(), Code::kDataLoss);
  // The same origin sent again while in flight.
  std::optional<ActorRef> from = cut.sender;
  RecordedSend again{&cut.target, &from, &cut.add, 41};
  EncodeCommitRecord(cut.sender, *CborValue::Encode(Value::Int(0), {}), false, false, true, {again},
                     &record);
  EXPECT_EQ(image.Apply(record).code(), Code::kDataLoss);
  EncodeArrivalRecord(cut.target, 41, &record);
  ASSERT_TRUE(image.Apply(record).ok());
  EXPECT_EQ(image.Apply(record).code(), Code::kDataLoss) << "it arrived already";
  EXPECT_EQ(image.actors().at(cut.target).messages.size(), 2u);
}

TEST(DurableRoutedTest, ASnapshotKeepsMessagesInFlight) {
  TempDir dir;
  CutJournal cut;
  ASSERT_TRUE(cut.counter);
  RecoveredImage image{ValueLimits{}};
  for (const std::string& record : cut.Records()) ASSERT_TRUE(image.Apply(record).ok());
  ASSERT_EQ(image.in_flight().size(), 1u);
  ASSERT_TRUE(WriteImageSnapshot(dir.path(), 5, image).ok());
  RecoveredImage loaded{ValueLimits{}};
  auto seq = LoadImageSnapshot(dir.path(), &loaded);
  ASSERT_TRUE(seq.ok()) << seq.status().ToString();
  EXPECT_EQ(*seq, 5u);
  ASSERT_EQ(loaded.in_flight().size(), 1u);
  EXPECT_EQ(loaded.in_flight().begin()->first, 41u);
  EXPECT_EQ(loaded.in_flight().begin()->second.target, cut.target);
  EXPECT_EQ(loaded.in_flight().begin()->second.envelope.message, cut.add);
  EXPECT_EQ(loaded.last_origin(), 41u);
  std::string record;
  EncodeArrivalRecord(cut.target, 41, &record);  // the arrival after the snapshot still fits
  EXPECT_TRUE(loaded.Apply(record).ok());
}

}  // namespace
}  // namespace reef::actor
