// The image journal (actor/journal.h): records come back in order after a reopen, concurrent
// appenders share fdatasyncs, a torn tail is cut, damage is refused with nothing replayed,
// files and directory are private, and sequence numbers run on across files.
#include "actor/journal.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <thread>
#include <vector>

#include "unit/events/event_store_test_support.h"

namespace reef::actor {
namespace {

using events::testing::TempDir;

struct Replayed {
  std::vector<std::pair<uint64_t, std::string>> records;
  Journal::Replay Collect() {
    return [this](uint64_t seq, std::string_view record) {
      records.emplace_back(seq, std::string(record));
      return Status::Ok();
    };
  }
};

// The journal's files, in order (not its LOCK).
std::vector<std::filesystem::path> Files(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() == ".log") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

class JournalTest : public ::testing::Test {
 protected:
  JournalOptions Options() const {
    JournalOptions options;
    options.dir = dir_.path() / "image";
    return options;
  }
  std::unique_ptr<Journal> OpenJournal(Replayed* replayed, JournalRecovery* recovery = nullptr,
                                       JournalOptions options = {}) {
    if (options.dir.empty()) options = Options();
    auto journal = Journal::Open(options, replayed->Collect(), recovery);
    EXPECT_TRUE(journal.ok()) << journal.status().ToString();
    return journal.ok() ? std::move(*journal) : nullptr;
  }
  // Appends "record-<i>" for i in [from, to), each waited for (one frame each).
  void AppendEach(Journal& journal, int from, int to) {
    for (int i = from; i < to; ++i) {
      auto seq = journal.Append("record-" + std::to_string(i));
      ASSERT_TRUE(seq.ok()) << seq.status().ToString();
      ASSERT_TRUE(journal.WaitDurable(*seq).ok());
    }
  }

  TempDir dir_;
};

TEST_F(JournalTest, RecordsComeBackInOrderAfterAReopen) {
  {
    Replayed none;
    auto journal = OpenJournal(&none);
    ASSERT_NE(journal, nullptr);
    EXPECT_TRUE(none.records.empty());
    AppendEach(*journal, 0, 20);
    auto big = journal->Append(std::string(100'000, 'x'));  // one large record
    ASSERT_TRUE(big.ok());
    EXPECT_EQ(*big, 21u);
    ASSERT_TRUE(journal->WaitDurable(*big).ok());
    EXPECT_EQ(journal->durable(), 21u);
  }
  Replayed replayed;
  JournalRecovery recovery;
  auto journal = OpenJournal(&replayed, &recovery);
  ASSERT_NE(journal, nullptr);
  ASSERT_EQ(replayed.records.size(), 21u);
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(replayed.records[i].first, static_cast<uint64_t>(i + 1));
    EXPECT_EQ(replayed.records[i].second, "record-" + std::to_string(i));
  }
  EXPECT_EQ(replayed.records[20].second, std::string(100'000, 'x'));
  EXPECT_EQ(recovery.records, 21u);
  EXPECT_EQ(recovery.torn_bytes, 0u);
  auto next = journal->Append("after");
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(*next, 22u) << "numbering goes on after a reopen";
}

TEST_F(JournalTest, ConcurrentAppendersShareFrames) {
  constexpr int kThreads = 32, kEach = 40;
  {
    Replayed none;
    auto journal = OpenJournal(&none);
    ASSERT_NE(journal, nullptr);
    std::atomic<int> durable{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < kEach; ++i) {
          auto seq = journal->Append(std::to_string(t) + ":" + std::to_string(i));
          if (seq.ok() && journal->WaitDurable(*seq).ok()) ++durable;
        }
      });
    }
    for (auto& thread : threads) thread.join();
    EXPECT_EQ(durable.load(), kThreads * kEach);
    JournalStats stats = journal->stats();
    EXPECT_EQ(stats.records, static_cast<uint64_t>(kThreads * kEach));
    EXPECT_LT(stats.batches, stats.records) << "group commit: fewer fdatasyncs than records";
    EXPECT_GT(stats.largest_batch, 1u);
  }
  Replayed replayed;
  auto journal = OpenJournal(&replayed);
  ASSERT_EQ(replayed.records.size(), static_cast<size_t>(kThreads * kEach));
  // Each thread's records in its own order.
  std::vector<int> next(kThreads, 0);
  for (const auto& [seq, record] : replayed.records) {
    int t = std::stoi(record.substr(0, record.find(':')));
    EXPECT_EQ(std::stoi(record.substr(record.find(':') + 1)), next[t]++);
  }
}

TEST_F(JournalTest, ATornTailIsCutAndTheRestLoads) {
  {
    Replayed none;
    auto journal = OpenJournal(&none);
    AppendEach(*journal, 0, 10);
  }
  auto file = Files(Options().dir).at(0);
  const auto full = std::filesystem::file_size(file);
  std::filesystem::resize_file(file, full - 5);  // the last frame loses its last bytes
  {
    Replayed replayed;
    JournalRecovery recovery;
    auto journal = OpenJournal(&replayed, &recovery);
    ASSERT_NE(journal, nullptr);
    EXPECT_EQ(replayed.records.size(), 9u);
    EXPECT_GT(recovery.torn_bytes, 0u);
    EXPECT_EQ(std::filesystem::file_size(file), full - 5 - recovery.torn_bytes);
    AppendEach(*journal, 9, 10);  // numbered 10 again
  }
  const std::string garbage = "garbage written by a crash, no frame header";
  {
    std::ofstream out(file, std::ios::binary | std::ios::app);
    out << garbage;
  }
  Replayed replayed;
  JournalRecovery recovery;
  auto journal = OpenJournal(&replayed, &recovery);
  ASSERT_EQ(replayed.records.size(), 10u);
  EXPECT_EQ(replayed.records.back().first, 10u);
  EXPECT_EQ(replayed.records.back().second, "record-9");
  EXPECT_EQ(recovery.torn_bytes, garbage.size());
}

TEST_F(JournalTest, DamageBeforeIntactFramesIsRefusedAndNothingIsReplayed) {
  {
    Replayed none;
    auto journal = OpenJournal(&none);
    AppendEach(*journal, 0, 10);
  }
  auto file = Files(Options().dir).at(0);
  {
    // A byte in the third frame's body (file header 32 + 2 frames of 32 + 4 + 8 bytes).
    std::fstream io(file, std::ios::binary | std::ios::in | std::ios::out);
    io.seekp(32 + 2 * 44 + 32 + 6);
    io.put('#');
  }
  Replayed replayed;
  auto journal = Journal::Open(Options(), replayed.Collect());
  ASSERT_FALSE(journal.ok());
  EXPECT_EQ(journal.status().code(), Code::kDataLoss);
  EXPECT_NE(journal.status().message().find(file.string()), std::string::npos);
  EXPECT_NE(journal.status().message().find("a frame body fails its checksum at byte 120"),
            std::string::npos)
      << journal.status().message();
  EXPECT_TRUE(replayed.records.empty());
  EXPECT_EQ(std::filesystem::file_size(file), 32u + 10 * 44) << "a damaged file is not cut";
}

TEST_F(JournalTest, FilesAreRotatedAndAMissingOneIsRefused) {
  JournalOptions options = Options();
  options.segment_bytes = 200;  // a new file every few frames
  {
    Replayed none;
    auto journal = OpenJournal(&none, nullptr, options);
    AppendEach(*journal, 0, 30);
  }
  auto files = Files(options.dir);
  ASSERT_GE(files.size(), 3u);
  {
    Replayed replayed;
    JournalRecovery recovery;
    auto journal = OpenJournal(&replayed, &recovery, options);
    ASSERT_EQ(replayed.records.size(), 30u);
    EXPECT_EQ(recovery.files, files.size());
    for (size_t i = 0; i < replayed.records.size(); ++i) {
      EXPECT_EQ(replayed.records[i].first, i + 1);
    }
  }
  std::filesystem::remove(files[1]);
  Replayed replayed;
  auto journal = Journal::Open(options, replayed.Collect());
  ASSERT_FALSE(journal.ok());
  EXPECT_EQ(journal.status().code(), Code::kDataLoss);
  EXPECT_NE(journal.status().message().find("a file is missing"), std::string::npos)
      << journal.status().message();
  EXPECT_TRUE(replayed.records.empty());
}

TEST_F(JournalTest, TheDirectoryIsPrivateAndSoAreTheFiles) {
  Replayed none;
  auto journal = OpenJournal(&none);
  AppendEach(*journal, 0, 1);
  struct stat st {};
  ASSERT_EQ(::stat(Options().dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_EQ(::stat(Files(Options().dir).at(0).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST_F(JournalTest, LimitsAndReplayErrorsAreReported) {
  JournalOptions options = Options();
  options.max_record_bytes = 10;
  {
    Replayed none;
    auto journal = OpenJournal(&none, nullptr, options);
    auto big = journal->Append(std::string(11, 'x'));
    ASSERT_FALSE(big.ok());
    EXPECT_EQ(big.status().code(), Code::kLimitExceeded);
    AppendEach(*journal, 0, 3);
  }
  auto journal = Journal::Open(options, [](uint64_t seq, std::string_view) {
    return seq == 2 ? Status::InvalidArgument("record 2 is not understood") : Status::Ok();
  });
  ASSERT_FALSE(journal.ok());
  EXPECT_EQ(journal.status().message(), "record 2 is not understood");
}

}  // namespace
}  // namespace reef::actor
