// Issue 16's crash tests of the durable image, on the real `reef serve`. The first: 10,000
// counters exchange messages while the server is killed with SIGKILL 20 times — mid-tick,
// mid-stream of sends, mid-spawns and mid-invocations of a program unit. After every restart
// each acknowledged spawn, send and invocation is there exactly once: the counters, drained,
// hold exactly their expected values (spec 001's count invariant), the streamed counter and
// the unit's counter instance hold between the acknowledged and the attempted count, and every
// acknowledged spawn exists. The second: a torn journal tail is cut, and a
// damaged journal keeps the server from starting (data_loss naming the file).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "support/http_test_client.h"
#include "support/program_body.h"
#include "support/reef_server.h"
#include "support/ws_test_client.h"

namespace reef {
namespace {

using nlohmann::json;
using testing::ReefServer;
using testing::WsClient;
using Clock = std::chrono::steady_clock;

constexpr char kReefBinary[] = REEF_BINARY;
constexpr char kProgramV1Dir[] = REEF_PROGRAM_V1_DIR;
constexpr int kCounters = 10'000;
constexpr int kCycles = 20;
constexpr int kSendsPerCycle = 2'000;

json Request(int id, std::string_view op, json args) {
  return {{"v", 1}, {"id", id}, {"op", op}, {"args", std::move(args)}};
}

json Ref(const std::string& actor) {
  return {{"$actor", actor}};
}

// Sends `requests` on `ws` with at most `window` unanswered; the answers in request order.
// An answer missing (the connection failed) is null.
std::vector<json> Pipeline(WsClient& ws, const std::vector<json>& requests, size_t window = 128) {
  std::vector<json> answers(requests.size());
  std::map<int64_t, size_t> index;
  for (size_t i = 0; i < requests.size(); ++i) index[requests[i]["id"].get<int64_t>()] = i;
  size_t sent = 0, received = 0;
  while (received < requests.size()) {
    while (sent < requests.size() && sent - received < window) {
      if (ws.Send(requests[sent].dump())) return answers;
      ++sent;
    }
    json answer = ws.Receive();
    if (!answer.contains("id")) return answers;
    auto it = index.find(answer["id"].get<int64_t>());
    if (it != index.end()) answers[it->second] = std::move(answer);
    ++received;
  }
  return answers;
}

bool Ok(const json& answer) {
  return answer.is_object() && answer.value("ok", false);
}

// One `add` to the example program's counter unit (a singleton): mode=enqueue answers 202 once
// it is queued, mode=wait 200 with the count once it is handled. True when acknowledged.
bool AddToUnit(uint16_t port, const std::string& mode) {
  testing::HttpResult r =
      testing::HttpCall(port, boost::beast::http::verb::post, "/units/counter/invoke?mode=" + mode,
                        R"({"op":"add"})");
  return r.status == (mode == "wait" ? 200u : 202u);
}

// The counter unit's count (a `get` queued behind every add), or -1.
int64_t UnitCount(uint16_t port) {
  testing::HttpResult r = testing::HttpCall(port, boost::beast::http::verb::post,
                                            "/units/counter/invoke?mode=wait", R"({"op":"get"})");
  EXPECT_EQ(r.status, 200u) << r.text;
  const json result = r.body.is_object() ? r.body.value("result", json()) : json();
  return result.is_object() ? result.value("count", int64_t{-1}) : -1;
}

// Every actor's ps row by ref.
std::map<std::string, json> Ps(WsClient& ws) {
  json answer = ws.Call(Request(1, "ps", json::object()));
  std::map<std::string, json> rows;
  EXPECT_TRUE(Ok(answer)) << answer.dump().substr(0, 300);
  for (const json& row : answer["result"]["actors"]) rows[row["actor"].get<std::string>()] = row;
  return rows;
}

// Ticks until a tick finds nothing to run: every mailbox is empty and no invocation is left.
void Drain(WsClient& ws) {
  for (int round = 0; round < 100; ++round) {
    json ticked = ws.Call(Request(2, "tick", {{"count", 20}, {"budget", 1'000'000}}));
    ASSERT_TRUE(Ok(ticked)) << ticked.dump();
    if (ticked["result"]["slices"] == 0) return;
  }
  FAIL() << "the image did not drain";
}

TEST(DurableImageCrashTest, CountersKeepTheirInvariantAcrossTwentySigkills) {
  // 1 MiB journal files: compactions run between (and are cut short by) the crashes.
  ReefServer server(kReefBinary, {"--engine", "interp", "--image-journal-mib", "1"});
  ASSERT_EQ(server.Start(), "");
  std::mt19937 random(16);

  // Given 10,000 counters at 0, and one more that a client streams sends to
  std::vector<std::string> counters;
  std::map<std::string, int64_t> expected;
  {
    WsClient ws(server.port());
    std::vector<json> spawns;
    for (int i = 0; i <= kCounters; ++i) {
      spawns.push_back(Request(i, "spawn", {{"path", "actors/counter"}, {"state", 0}}));
    }
    auto answers = Pipeline(ws, spawns);
    for (const json& answer : answers) {
      ASSERT_TRUE(Ok(answer)) << answer.dump();
      counters.push_back(answer["result"]["actor"].get<std::string>());
    }
  }
  const std::string streamed = counters.back();
  counters.pop_back();
  for (const std::string& ref : counters) expected[ref] = 0;
  int64_t streamed_value = 0;
  std::vector<std::string> spawned_during_crashes;
  // and a program whose counter unit clients invoke
  std::string body_error;
  json program = testing::ProgramBody(kProgramV1Dir, nullptr, body_error);
  ASSERT_TRUE(program.is_object()) << body_error;
  testing::HttpResult deployed =
      testing::HttpCall(server.port(), boost::beast::http::verb::post, "/programs", program.dump());
  ASSERT_EQ(deployed.status, 200u) << deployed.text;
  int64_t unit_value = 0;

  auto started = Clock::now();
  int next_id = 1'000'000;
  for (int cycle = 0; cycle < kCycles; ++cycle) {
    SCOPED_TRACE("cycle " + std::to_string(cycle));
    // when clients send (every answer awaited, so each of these is acknowledged)
    {
      WsClient ws(server.port());
      // (a first spawn compiles the counter's source, which takes longer than some crashes)
      json warm = ws.Call(Request(0, "spawn", {{"path", "actors/counter"}, {"state", 7}}));
      ASSERT_TRUE(Ok(warm)) << warm.dump();
      spawned_during_crashes.push_back(warm["result"]["actor"].get<std::string>());
      std::vector<json> sends;
      std::vector<std::pair<int, int>> effect;  // who gains 1 when it is handled
      std::uniform_int_distribution<int> pick(0, kCounters - 1);
      for (int i = 0; i < kSendsPerCycle; ++i) {
        int x = pick(random), y = pick(random);
        json message = i % 2 == 0 ? json{{"op", "send"}, {"value", 1}, {"target", Ref(counters[y])}}
                                  : json{{"op", "add"}, {"value", 1}};
        sends.push_back(
            Request(next_id++, "send", {{"actor", counters[x]}, {"message", std::move(message)}}));
        effect.emplace_back(x, i % 2 == 0 ? y : -1);
      }
      auto answers = Pipeline(ws, sends);
      for (size_t i = 0; i < answers.size(); ++i) {
        ASSERT_TRUE(Ok(answers[i])) << answers[i].dump();
        expected[counters[effect[i].first]] += 1;
        if (effect[i].second >= 0) expected[counters[effect[i].second]] += 1;
      }
      for (int i = 0; i < 10; ++i) {
        ASSERT_TRUE(AddToUnit(server.port(), i % 2 == 0 ? "enqueue" : "wait"));
        ++unit_value;
      }
    }
    // and the server is killed while it ticks, while a client streams sends without waiting
    // and while another spawns
    std::atomic<bool> crashed{false};
    std::atomic<int64_t> stream_acked{0}, stream_sent{0};
    std::vector<std::string> spawn_acked;
    std::atomic<int64_t> unit_acked{0}, unit_sent{0};
    std::thread invoker([&] {
      for (int i = 0; !crashed.load(); ++i) {
        unit_sent.fetch_add(1);  // counted before it goes, as the streamed sends
        if (AddToUnit(server.port(), i % 3 == 0 ? "wait" : "enqueue")) unit_acked.fetch_add(1);
      }
    });
    std::thread ticker([&] {
      WsClient ws(server.port());
      for (int id = 0; !crashed.load(); ++id) {
        json answer = ws.Call(Request(id, "tick", {{"count", 1'000}, {"budget", 1'000'000}}));
        if (!answer.contains("id")) return;
      }
    });
    std::thread streamer([&] {
      WsClient ws(server.port());
      const std::string message =
          json{{"actor", streamed}, {"message", {{"op", "add"}, {"value", 1}}}}.dump();
      size_t sent = 0, received = 0;
      while (!crashed.load() || received < sent) {
        while (sent - received < 32 && !crashed.load()) {
          // Counted before it goes: a send cut short by the crash may still have arrived.
          stream_sent.fetch_add(1);
          if (ws.Send(R"({"v":1,"op":"send","id":)" + std::to_string(sent) + R"(,"args":)" +
                      message + "}")) {
            return;
          }
          ++sent;
        }
        json answer = ws.Receive();
        if (!answer.contains("id")) return;
        ++received;
        if (Ok(answer)) stream_acked.fetch_add(1);
      }
    });
    std::thread spawner([&] {
      WsClient ws(server.port());
      for (int id = 0; !crashed.load(); ++id) {
        json answer = ws.Call(Request(id, "spawn", {{"path", "actors/counter"}, {"state", 7}}));
        if (!answer.contains("id")) return;  // the crash
        if (!Ok(answer)) {
          ADD_FAILURE() << "spawn: " << answer.dump();
          return;
        }
        spawn_acked.push_back(answer["result"]["actor"].get<std::string>());
      }
    });
    std::this_thread::sleep_for(
        std::chrono::milliseconds(std::uniform_int_distribution<int>(50, 400)(random)));
    server.Crash();
    crashed.store(true);
    ticker.join();
    streamer.join();
    spawner.join();
    invoker.join();

    // then after a restart everything acknowledged is there, exactly once
    ASSERT_EQ(server.Start(), "");
    WsClient ws(server.port());
    Drain(ws);
    auto rows = Ps(ws);
    int wrong = 0;
    for (const auto& [ref, value] : expected) {
      auto it = rows.find(ref);
      if (it == rows.end() || it->second["state"] != value) {
        if (++wrong <= 5) {
          ADD_FAILURE() << "@" << ref << ": expected " << value << ", found "
                        << (it == rows.end() ? json("no actor") : it->second["state"]);
        }
      }
    }
    EXPECT_EQ(wrong, 0);
    ASSERT_TRUE(rows.contains(streamed));
    int64_t now = rows[streamed]["state"].get<int64_t>();
    EXPECT_GE(now, streamed_value + stream_acked.load()) << "an acknowledged send was lost";
    EXPECT_LE(now, streamed_value + stream_sent.load()) << "a send was handled twice";
    streamed_value = now;
    const int64_t unit_now = UnitCount(server.port());
    EXPECT_GE(unit_now, unit_value + unit_acked.load()) << "an acknowledged invocation was lost";
    EXPECT_LE(unit_now, unit_value + unit_sent.load()) << "an invocation was handled twice";
    unit_value = unit_now;
    spawned_during_crashes.insert(spawned_during_crashes.end(), spawn_acked.begin(),
                                  spawn_acked.end());
    for (const std::string& ref : spawned_during_crashes) {
      EXPECT_TRUE(rows.contains(ref) && rows[ref]["state"] == 7)
          << "acknowledged spawn @" << ref << " is gone";
    }
    std::cout << "[ measured ] cycle " << cycle << ": " << stream_acked.load() << "/"
              << stream_sent.load() << " streamed sends acknowledged, " << unit_acked.load() << "/"
              << unit_sent.load() << " unit invocations acknowledged, " << spawn_acked.size()
              << " spawns acknowledged, " << rows.size() << " actors after the restart\n";
  }
  // The journal's series are on /metrics.
  testing::HttpResult metrics = testing::HttpGet(server.port(), "/metrics");
  EXPECT_NE(metrics.text.find("reef_image_journal_records_total{runtime=\"image\"} "),
            std::string::npos)
      << metrics.text.substr(0, 500);
  EXPECT_NE(metrics.text.find("reef_image_journal_records_total{runtime=\"programs\"} "),
            std::string::npos)
      << "the unit instances' journal";
  const std::string snapshot_series = "\nreef_image_snapshot_record{runtime=\"image\"} ";
  const size_t snapshot_at = metrics.text.find(snapshot_series);
  ASSERT_NE(snapshot_at, std::string::npos);
  const uint64_t snapshot_record =
      std::stoull(metrics.text.substr(snapshot_at + snapshot_series.size()));
  EXPECT_GT(snapshot_record, 0u) << "no compaction ran";
  std::cout << "[ measured ] " << kCycles << " SIGKILL cycles with " << kCounters << " counters: "
            << std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - started).count()
            << " s, " << spawned_during_crashes.size()
            << " spawns acknowledged during them; the last snapshot includes record "
            << snapshot_record << "\n";
}

// The journal file that is being written (the newest).
std::filesystem::path NewestJournalFile(const std::filesystem::path& image) {
  std::filesystem::path newest;
  for (const auto& entry : std::filesystem::directory_iterator(image)) {
    if (entry.path().extension() == ".log" && entry.path() > newest) newest = entry.path();
  }
  return newest;
}

TEST(DurableImageCrashTest, ATornTailIsCutAndDamageIsRefusedByTheServer) {
  // Given a server with a counter at 3 (spawned at 2, then added 1), killed
  ReefServer server(kReefBinary, {"--engine", "interp"});
  ASSERT_EQ(server.Start(), "");
  std::string counter;
  {
    WsClient ws(server.port());
    json spawned = ws.Call(Request(1, "spawn", {{"path", "actors/counter"}, {"state", 2}}));
    ASSERT_TRUE(Ok(spawned)) << spawned.dump();
    counter = spawned["result"]["actor"].get<std::string>();
    // (more batches after the first, so damage to the first is not at the journal's end)
    json sent = ws.Call(
        Request(2, "send", {{"actor", counter}, {"message", {{"op", "add"}, {"value", 1}}}}));
    ASSERT_TRUE(Ok(sent)) << sent.dump();
    json ticked = ws.Call(Request(3, "tick", {{"count", 10}, {"budget", 1'000'000}}));
    ASSERT_TRUE(Ok(ticked)) << ticked.dump();
  }
  server.Crash();
  const std::filesystem::path journal = NewestJournalFile(server.data_dir() / "image");
  ASSERT_FALSE(journal.empty());

  // when the journal ends in half a frame (a write torn by the crash)
  {
    std::ofstream tail(journal, std::ios::binary | std::ios::app);
    tail << std::string("JRNL", 4) << std::string(40, '\x01');
  }
  // then the server cuts it, says so, and the counter is there
  ASSERT_EQ(server.Start(), "");
  EXPECT_NE(server.Log().find("cut 44 bytes"), std::string::npos) << server.Log();
  {
    WsClient ws(server.port());
    auto rows = Ps(ws);
    ASSERT_TRUE(rows.contains(counter));
    EXPECT_EQ(rows[counter]["state"], 3);
  }
  server.Crash();

  // when a byte in the middle of the journal is damaged
  {
    std::fstream file(journal, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(64);
    char byte = 0;
    file.read(&byte, 1);
    file.seekp(64);
    file.put(static_cast<char>(byte ^ 0x5a));
  }
  // then the server refuses to start, naming the file, and leaves it as it was
  const auto size_before = std::filesystem::file_size(journal);
  std::string started = server.Start();
  EXPECT_NE(started.find("data_loss"), std::string::npos) << started;
  EXPECT_NE(started.find(journal.filename().string()), std::string::npos) << started;
  EXPECT_EQ(std::filesystem::file_size(journal), size_before);
}

}  // namespace
}  // namespace reef
