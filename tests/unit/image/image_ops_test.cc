// The image's operations over the real protocol (docs/protocol.md "Image operations"):
// spec 001's counter walk-through, the source store ops, reload/become at the handler
// boundary, compile errors, argument validation, and bad frames next to a working client.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "image/detail/args.h"
#include "image_test_support.h"

namespace reef::image {
namespace {

using test_support::Client;
using test_support::ConstantActorWat;
using test_support::json;

class ImageOpsTest : public test_support::ImageFixture {
 protected:
  // Writes a new working source and returns its source_id.
  std::string Create(Client& client, const std::string& path, const std::string& kind,
                     const std::string& text) {
    json result =
        client.Ok("write", {{"path", path}, {"kind", kind}, {"text", text}, {"expected", nullptr}});
    return result.value("source_id", "");
  }
  std::string SpawnActor(Client& client, const std::string& path, json state) {
    return client.Ok("spawn", {{"path", path}, {"state", std::move(state)}}).value("actor", "");
  }
  // An actor whose handler practically never ends, with one message queued: its ref.
  std::string SpawnSpinner(Client& client) {
    Create(client, "actors/spin", "wat", ConstantActorWat(1, 2000000000));
    std::string actor = SpawnActor(client, "actors/spin", 0);
    client.Ok("send", {{"actor", actor}, {"message", 1}});
    return actor;
  }
  // Kills `actor` once its handler has run (within 10,000 inspects): the kill's answer.
  json KillOnceRunning(Client& client, const std::string& actor) {
    for (int i = 0; i < 10000; ++i) {
      json snapshot = client.Ok("inspect", {{"actor", actor}});
      if (snapshot["telemetry"].is_object() && snapshot["telemetry"].value("instructions", 0) > 0) {
        break;
      }
    }
    return client.Ok("kill", {{"actor", actor}});
  }
};

TEST_F(ImageOpsTest, BundledCounterIsInWorkingSource) {
  auto client = Connect();
  json sources = client->Ok("sources")["sources"];
  bool found = false;
  for (const json& row : sources) {
    if (row["path"] == "actors/counter") {
      found = true;
      EXPECT_EQ(row["kind"], "c");
    }
  }
  EXPECT_TRUE(found) << sources.dump();
  json counter = client->Ok("read", {{"path", "actors/counter"}});
  EXPECT_EQ(counter["text"], test_support::SourceTreeFile("examples/counter/counter.c"));
}

TEST_F(ImageOpsTest, BundledCounterDoesNotOverwriteAnEditedSource) {
  auto client = Connect();
  json before = client->Ok("read", {{"path", "actors/counter"}});
  client->Ok("write", {{"path", "actors/counter"},
                       {"kind", "c"},
                       {"text", "/* mine */"},
                       {"expected", before["source_id"]}});
  client.reset();
  StopImage();
  StartImage();
  auto again = Connect();
  EXPECT_EQ(again->Ok("read", {{"path", "actors/counter"}})["text"], "/* mine */");
}

TEST_F(ImageOpsTest, Spec001CounterWalkThrough) {
  if (!HaveClang()) GTEST_SKIP() << "no clang for wasm32 configured";
  auto client = Connect();
  // Given two counters spawned from the bundled working source with states 0 and 10
  std::string sender = SpawnActor(*client, "actors/counter", 0);
  std::string receiver = SpawnActor(*client, "actors/counter", 10);
  // when the sender is told to send 5 to the receiver and the image ticks 100 times
  EXPECT_EQ(
      client->Ok("send",
                 {{"actor", "@" + sender},
                  {"message", {{"op", "send"}, {"value", 5}, {"target", {{"$actor", receiver}}}}}}),
      (json{{"queued", true}}));
  json report = client->Ok("tick", {{"count", 100}});
  // then the sender committed 1 and the receiver 15
  EXPECT_EQ(client->Ok("inspect", {{"actor", sender}})["state"], 1);
  EXPECT_EQ(client->Ok("inspect", {{"actor", receiver}})["state"], 15);
  EXPECT_EQ(report["commits"], 2) << report.dump();
  EXPECT_EQ(report["failures"], 0) << report.dump();
  json ps = client->Ok("ps")["actors"];
  ASSERT_EQ(ps.size(), 2u);
  EXPECT_EQ(ps[0]["implementation"]["label"], "actors/counter");
}

TEST_F(ImageOpsTest, SpawnResultAndSnapshotShapes) {
  auto client = Connect();
  std::string id = Create(*client, "actors/seven", "wat", ConstantActorWat(7));
  json spawned = client->Ok("spawn", {{"path", "actors/seven"}, {"state", {{"k", {1, 2}}}}});
  EXPECT_EQ(spawned["source_id"], id);
  EXPECT_EQ(spawned["implementation"]["label"], "actors/seven");
  EXPECT_EQ(spawned["actor"].get<std::string>().size(), 21u);
  json snapshot = client->Ok("inspect", {{"actor", spawned["actor"]}});
  for (const char* field : {"actor", "implementation", "incarnation", "status", "paused_from",
                            "state", "reserved", "queued", "mailbox_capacity", "telemetry",
                            "stopping", "pending_install", "failure", "log_level", "reactor"}) {
    EXPECT_TRUE(snapshot.contains(field)) << field << " missing in " << snapshot.dump();
  }
  EXPECT_EQ(snapshot["state"], (json{{"k", {1, 2}}}));
  EXPECT_EQ(snapshot["status"], "idle");
  EXPECT_EQ(snapshot["incarnation"], 1);
}

TEST_F(ImageOpsTest, WriteConflictLeavesTheStoredTextUnchanged) {
  auto alice = Connect();
  auto bob = Connect();
  // Given a source both clients read
  std::string original = Create(*alice, "notes/shared", "wat", "(module)");
  // when Alice saves first and Bob saves with the identity he read
  json saved = alice->Ok("write", {{"path", "notes/shared"},
                                   {"kind", "wat"},
                                   {"text", "(module) ;; alice"},
                                   {"expected", original}});
  json conflict = bob->Error("write", {{"path", "notes/shared"},
                                       {"kind", "wat"},
                                       {"text", "(module) ;; bob"},
                                       {"expected", original}});
  // then Bob gets a conflict and Alice's text stays
  EXPECT_EQ(conflict["code"], "conflict") << conflict.dump();
  json stored = bob->Ok("read", {{"path", "notes/shared"}});
  EXPECT_EQ(stored["text"], "(module) ;; alice");
  EXPECT_EQ(stored["source_id"], saved["source_id"]);
  // and creating an existing path or updating a missing one are errors too
  EXPECT_EQ(
      bob->Error(
          "write",
          {{"path", "notes/shared"}, {"kind", "wat"}, {"text", ""}, {"expected", nullptr}})["code"],
      "already_exists");
  EXPECT_EQ(bob->Error("write", {{"path", "notes/missing"},
                                 {"kind", "wat"},
                                 {"text", ""},
                                 {"expected", original}})["code"],
            "not_found");
  EXPECT_EQ(bob->Error("write", {{"path", "notes/x"}, {"kind", "wat"}, {"text", ""}})["code"],
            "invalid_argument");
}

TEST_F(ImageOpsTest, CommitHistoryRollbackRoundTripTextExactly) {
  auto client = Connect();
  const std::string first = "line one\r\n\ttab \"quoted\" \\ ünïcode ✓\n\n  trailing  ";
  const std::string second = "(module)";
  std::string first_id = Create(*client, "docs/readme", "wat", first);
  json commit1 = client->Ok("commit", {{"path", "docs/readme"}, {"message", "first"}});
  ASSERT_EQ(commit1["revision"].get<std::string>().size(), 12u);
  json written = client->Ok(
      "write", {{"path", "docs/readme"}, {"kind", "c"}, {"text", second}, {"expected", first_id}});
  json commit2 = client->Ok("commit", {{"path", "docs/readme"}});

  json history = client->Ok("history", {{"path", "docs/readme"}})["revisions"];
  ASSERT_EQ(history.size(), 2u);
  EXPECT_EQ(history[0]["revision"], commit2["revision"]);  // newest first
  EXPECT_EQ(history[0]["message"], nullptr);
  EXPECT_EQ(history[0]["kind"], "c");
  EXPECT_EQ(history[1]["revision"], commit1["revision"]);
  EXPECT_EQ(history[1]["message"], "first");
  EXPECT_EQ(history[1]["source_id"], first_id);
  EXPECT_GT(history[1]["unix_ms"].get<int64_t>(), 0);

  json old = client->Ok("read", {{"path", "docs/readme"}, {"revision", commit1["revision"]}});
  EXPECT_EQ(old["text"], first);
  json rolled =
      client->Ok("rollback", {{"path", "docs/readme"}, {"revision", commit1["revision"]}});
  EXPECT_EQ(rolled["source_id"], first_id);
  json now = client->Ok("read", {{"path", "docs/readme"}});
  EXPECT_EQ(now["text"], first);
  EXPECT_EQ(now["kind"], "wat");
  EXPECT_EQ(client->Ok("history", {{"path", "docs/readme"}})["revisions"].size(), 2u)
      << "rollback does not commit";
  EXPECT_EQ(
      client->Error("rollback", {{"path", "docs/readme"}, {"revision", "zzzzzzzzzzzz"}})["code"],
      "not_found");
}

TEST_F(ImageOpsTest, ReloadSwitchesAtTheNextHandlerBoundary) {
  auto client = Connect();
  // Given an actor whose handler spans many slices, mid-invocation
  std::string v1 = Create(*client, "actors/slow", "wat", ConstantActorWat(1, 200));
  std::string actor = SpawnActor(*client, "actors/slow", 0);
  client->Ok("send", {{"actor", actor}, {"message", nullptr}});
  client->Ok("tick");
  ASSERT_EQ(client->Ok("inspect", {{"actor", actor}})["status"], "running");
  // when its source changes and it is reloaded
  client->Ok("write", {{"path", "actors/slow"},
                       {"kind", "wat"},
                       {"text", ConstantActorWat(2, 200)},
                       {"expected", v1}});
  json reloaded = client->Ok("reload", {{"actor", actor}});
  // then the switch waits for the boundary: the active handler finishes on the old code
  EXPECT_EQ(reloaded["pending_install"]["label"], "actors/slow");
  EXPECT_EQ(reloaded["installed"], false);
  json during = client->Ok("inspect", {{"actor", actor}});
  EXPECT_EQ(during["pending_install"]["id"], reloaded["pending_install"]["id"]);
  EXPECT_EQ(during["pending_install"]["label"], "actors/slow");
  EXPECT_NE(during["implementation"]["id"], reloaded["pending_install"]["id"]);
  client->Ok("tick", {{"count", 1000}});
  json after = client->Ok("inspect", {{"actor", actor}});
  EXPECT_EQ(after["state"], 1) << "the old handler committed";
  EXPECT_EQ(after["pending_install"], nullptr);
  EXPECT_EQ(after["implementation"]["id"], reloaded["pending_install"]["id"]);
  // and the next message runs the new code
  client->Ok("send", {{"actor", actor}, {"message", nullptr}});
  client->Ok("tick", {{"count", 1000}});
  EXPECT_EQ(client->Ok("inspect", {{"actor", actor}})["state"], 2);
}

TEST_F(ImageOpsTest, BecomeSwitchesToAnotherPathAtTheBoundary) {
  auto client = Connect();
  Create(*client, "actors/slow", "wat", ConstantActorWat(1, 200));
  Create(*client, "actors/nine", "wat", ConstantActorWat(9));
  std::string actor = SpawnActor(*client, "actors/slow", 0);
  client->Ok("send", {{"actor", actor}, {"message", nullptr}});
  client->Ok("send", {{"actor", actor}, {"message", nullptr}});
  client->Ok("tick");
  json became = client->Ok("become", {{"actor", actor}, {"path", "actors/nine"}});
  EXPECT_EQ(became["pending_install"]["label"], "actors/nine");
  EXPECT_EQ(client->Ok("inspect", {{"actor", actor}})["pending_install"]["label"], "actors/nine");
  client->Ok("tick", {{"count", 1000}});
  json after = client->Ok("inspect", {{"actor", actor}});
  EXPECT_EQ(after["state"], 9) << "first message on the old code, second on the new";
  EXPECT_EQ(after["implementation"]["label"], "actors/nine");
  // and reload now recompiles the new path
  EXPECT_EQ(client->Ok("reload", {{"actor", actor}})["pending_install"]["label"], "actors/nine");
}

TEST_F(ImageOpsTest, IdleActorInstallsAtOnce) {
  auto client = Connect();
  Create(*client, "actors/one", "wat", ConstantActorWat(1));
  Create(*client, "actors/two", "wat", ConstantActorWat(2));
  std::string actor = SpawnActor(*client, "actors/one", 0);
  json became = client->Ok("become", {{"actor", actor}, {"path", "actors/two"}});
  EXPECT_EQ(became["installed"], true);
  EXPECT_EQ(client->Ok("inspect", {{"actor", actor}})["implementation"]["label"], "actors/two");
}

TEST_F(ImageOpsTest, CompileErrorReturnsDiagnosticsAndChangesNothing) {
  if (!HaveClang()) GTEST_SKIP() << "no clang for wasm32 configured";
  auto client = Connect();
  Create(*client, "actors/broken", "c", "#include \"reef.h\"\nint f(void) {\n  return 1 +;\n}\n");
  json error = client->Error("spawn", {{"path", "actors/broken"}, {"state", 0}});
  EXPECT_EQ(error["code"], "invalid_argument");
  std::string message = error["message"];
  EXPECT_TRUE(message.starts_with("compile error:\n")) << message;
  EXPECT_NE(message.find("actors/broken.c:3:"), std::string::npos) << message;
  EXPECT_TRUE(client->Ok("ps")["actors"].empty());

  // become with the broken source keeps the actor's implementation
  Create(*client, "actors/fine", "wat", ConstantActorWat(3));
  std::string actor = SpawnActor(*client, "actors/fine", 0);
  json become = client->Error("become", {{"actor", actor}, {"path", "actors/broken"}});
  EXPECT_TRUE(become["message"].get<std::string>().starts_with("compile error:\n"));
  json snapshot = client->Ok("inspect", {{"actor", actor}});
  EXPECT_EQ(snapshot["implementation"]["label"], "actors/fine");
  EXPECT_EQ(snapshot["pending_install"], nullptr);
}

TEST_F(ImageOpsTest, SpawnOfASourceIncludingServerFilesEchoesNoneOfThem) {
  if (!HaveClang()) GTEST_SKIP() << "no clang for wasm32 configured";
  // Given a file of the server next to the data directory, and one inside it
  std::string beside = data_dir_.string() + "-secret.h";
  std::ofstream(beside) << "int leaked = 1; /* SECRET-BESIDE */\n";
  std::ofstream(data_dir_ / "secret.h") << "int leaked = 2; /* SECRET-INSIDE */\n";
  auto client = Connect();
  const std::vector<std::string> sources = {
      "#include \"/etc/passwd\"\n", "#include \"" + beside + "\"\n",
      "#include \"../../../../../../../../.." + beside + "\"\n",
      "#define F \"" + (data_dir_ / "secret.h").string() + "\"\n#include F\n",
      "__asm__(\".include \\\"/etc/passwd\\\"\");\n"};
  for (size_t i = 0; i < sources.size(); ++i) {
    std::string path = "actors/nosy" + std::to_string(i);
    Create(*client, path, "c", sources[i] + "#include \"reef.h\"\n");
    // when a protocol client spawns it
    json error = client->Error("spawn", {{"path", path}, {"state", 0}});
    // then it is a compile error that shows no line of those files, and nothing is spawned
    EXPECT_EQ(error["code"], "invalid_argument") << sources[i];
    std::string message = error["message"];
    EXPECT_TRUE(message.starts_with("compile error:\n" + path + ".c:")) << message;
    EXPECT_EQ(message.find("root:x:0:0"), std::string::npos) << message;
    EXPECT_EQ(message.find("SECRET-"), std::string::npos) << message;
  }
  EXPECT_TRUE(client->Ok("ps")["actors"].empty());
  std::filesystem::remove(beside);
}

TEST_F(ImageOpsTest, WatCompileErrorNamesTheLine) {
  auto client = Connect();
  Create(*client, "actors/badwat", "wat", "(module\n  (func (foo)))");
  json error = client->Error("spawn", {{"path", "actors/badwat"}, {"state", 0}});
  EXPECT_TRUE(
      error["message"].get<std::string>().starts_with("compile error:\nactors/badwat.wat:2:"))
      << error.dump();
}

TEST_F(ImageOpsTest, ArgumentsAreValidatedStrictly) {
  auto client = Connect();
  Create(*client, "actors/one", "wat", ConstantActorWat(1));
  std::string actor = SpawnActor(*client, "actors/one", 0);
  struct Case {
    std::string op;
    json args;
    std::string code;
    std::string fragment;
  };
  const Case cases[] = {
      {"spawn",
       {{"path", "actors/one"}, {"state", 0}, {"colour", 1}},
       "invalid_argument",
       "'colour'"},
      {"spawn", {{"path", "actors/one"}}, "invalid_argument", "'state'"},
      {"spawn", {{"path", "actors/none"}, {"state", 0}}, "not_found", ""},
      {"spawn", {{"path", "../etc"}, {"state", 0}}, "invalid_argument", ""},
      {"spawn",
       {{"path", "actors/one"}, {"state", 0}, {"mailbox_capacity", 0}},
       "invalid_argument",
       "mailbox_capacity"},
      {"send", {{"actor", "nope"}, {"message", 1}}, "invalid_argument", "'actor'"},
      {"send", {{"actor", 42}, {"message", 1}}, "invalid_argument", "'actor'"},
      {"send", {{"actor", "V1StGXR8_Z5jdHi6B-myT"}, {"message", 1}}, "not_found", ""},
      {"send", {{"actor", actor}, {"message", {{"$actor", "short"}}}}, "invalid_argument", ""},
      {"tick", {{"count", 0}}, "invalid_argument", "1..100000"},
      {"tick", {{"count", 100001}}, "invalid_argument", "1..100000"},
      {"tick", {{"count", -1}}, "invalid_argument", "count"},
      {"tick", {{"count", 1.5}}, "invalid_argument", "count"},
      {"tick", {{"budget", 10000001}}, "invalid_argument", "budget"},
      {"tick",
       {{"count", 100000}, {"budget", 10000000}},
       "limit_exceeded",
       "max_tick_instructions"},
      {"events", {{"limit", 0}}, "invalid_argument", "limit"},
      {"events", {{"kinds", {"exploded"}}}, "invalid_argument", "kinds"},
      {"logs", {{"min_level", "loud"}}, "invalid_argument", "min_level"},
      {"log-level", {{"actor", actor}, {"level", "verbose"}}, "invalid_argument", "level"},
      {"subscribe", {{"topic", "weather"}}, "invalid_argument", "topic"},
      {"subscribe", {{"topic", "changes"}, {"min_level", "info"}}, "invalid_argument", "min_level"},
      {"write",
       {{"path", "a/b"}, {"kind", "rust"}, {"text", ""}, {"expected", nullptr}},
       "invalid_argument",
       "kind"},
      {"set-state", {{"actor", actor}, {"state", 1}}, "failed_precondition", ""},
      {"set-messages",
       {{"actor", actor}, {"reserved", {1, 2}}, {"queued", json::array()}},
       "invalid_argument",
       "reserved"},
      {"ps", {{"all", true}}, "invalid_argument", "'all'"},
  };
  for (const Case& c : cases) {
    json error = client->Error(c.op, c.args);
    EXPECT_EQ(error["code"], c.code) << c.op << " " << c.args.dump() << " -> " << error.dump();
    EXPECT_NE(error.value("message", "").find(c.fragment), std::string::npos)
        << c.op << " " << c.args.dump() << " -> " << error.dump();
  }
  // and the image still works
  EXPECT_EQ(client->Ok("inspect", {{"actor", "@" + actor}})["state"], 0);
}

TEST_F(ImageOpsTest, LifecycleAndRepairOps) {
  auto client = Connect();
  Create(*client, "actors/one", "wat", ConstantActorWat(1));
  std::string actor = SpawnActor(*client, "actors/one", 0);
  json paused = client->Ok("pause", {{"actor", actor}});
  EXPECT_EQ(paused, (json{{"actor", actor}, {"status", "paused"}, {"incarnation", 1}}));
  client->Ok("set-state", {{"actor", actor}, {"state", {{"repaired", true}}}});
  client->Ok("set-messages", {{"actor", actor}, {"reserved", json::array()}, {"queued", {1, 2}}});
  json snapshot = client->Ok("inspect", {{"actor", actor}});
  EXPECT_EQ(snapshot["state"], (json{{"repaired", true}}));
  EXPECT_EQ(snapshot["queued"],
            (json{{{"sender", nullptr}, {"message", 1}}, {{"sender", nullptr}, {"message", 2}}}));
  EXPECT_EQ(client->Ok("resume", {{"actor", actor}})["status"], "idle");
  EXPECT_EQ(client->Ok("log-level", {{"actor", actor}, {"level", "debug"}}),
            (json{{"actor", actor}, {"level", "debug"}}));
  client->Ok("tick", {{"count", 10}});
  EXPECT_EQ(client->Ok("inspect", {{"actor", actor}})["state"], 1);
  EXPECT_EQ(client->Ok("stop", {{"actor", actor}})["status"], "stopped");
  EXPECT_EQ(client->Error("send", {{"actor", actor}, {"message", 1}})["code"],
            "failed_precondition");
  EXPECT_EQ(client->Ok("restart", {{"actor", actor}})["incarnation"], 2);
  EXPECT_EQ(client->Ok("kill", {{"actor", actor}})["status"], "stopped");
}

TEST_F(ImageOpsTest, MalformedAndOversizedFramesGetErrorsWhileAnotherClientWorks) {
  auto bad = Connect();
  auto good = Connect();
  Create(*good, "actors/one", "wat", ConstantActorWat(1));
  std::string actor = SpawnActor(*good, "actors/one", 0);

  ASSERT_FALSE(bad->SendText("{\"v\":1,\"id\":"));
  json malformed = bad->Receive();
  EXPECT_EQ(malformed["ok"], false);
  EXPECT_EQ(malformed["id"], nullptr);
  EXPECT_EQ(malformed["error"]["code"], "invalid_argument");

  std::string frame = R"({"v":1,"id":1,"op":"send","args":{"actor":")" + actor +
                      R"(","message":")" + std::string((1 << 20) + 1, 'x') + "\"}}";
  ASSERT_FALSE(bad->SendText(frame));
  json oversized = bad->Receive();
  EXPECT_EQ(oversized["error"]["code"], "limit_exceeded");

  EXPECT_EQ(good->Ok("inspect", {{"actor", actor}})["queued"], json::array());
  EXPECT_EQ(bad->Ok("ps")["actors"].size(), 1u);
}

TEST_F(ImageOpsTest, OtherClientsGetTheirTurnDuringALongTick) {
  auto ticker = Connect();
  auto other = Connect();
  // Given an actor whose handler practically never ends
  std::string actor = SpawnSpinner(*other);
  // when one client asks for 100,000 ticks of 1,000 instructions
  ASSERT_FALSE(
      ticker->SendText(R"({"v":1,"id":"long","op":"tick","args":{"count":100000,"budget":1000}})"));
  // and another client, once the handler is running, kills the actor
  EXPECT_EQ(KillOnceRunning(*other, actor)["status"], "stopped");
  // then the kill landed between two ticks: the long tick ran out of runnable actors
  // before its last tick instead of holding the image for all of them
  json response = ticker->NextResponse();
  ASSERT_EQ(response["ok"], true) << response.dump();
  EXPECT_LT(response["result"]["slices"].get<uint64_t>(), 100000u) << response.dump();
  EXPECT_EQ(other->Ok("inspect", {{"actor", actor}})["status"], "stopped");
}

TEST_F(ImageOpsTest, TicksHoldNoServerThread) {
  // Given an actor whose handler practically never ends, and two clients each asking for
  // 100,000 ticks: more waiting ticks than the server has handler threads (2)
  auto first = Connect();
  auto second = Connect();
  auto other = Connect();
  std::string actor = SpawnSpinner(*other);
  ASSERT_FALSE(
      first->SendText(R"({"v":1,"id":"a","op":"tick","args":{"count":100000,"budget":1000}})"));
  ASSERT_FALSE(
      second->SendText(R"({"v":1,"id":"b","op":"tick","args":{"count":100000,"budget":1000}})"));
  // when a third client's ops run while both ticks wait on the fleet
  EXPECT_EQ(KillOnceRunning(*other, actor)["status"], "stopped");
  // then both ticks end early: the kill ran before either finished
  for (auto* ticker : {first.get(), second.get()}) {
    json response = ticker->NextResponse();
    ASSERT_EQ(response["ok"], true) << response.dump();
    EXPECT_LT(response["result"]["slices"].get<uint64_t>(), 100000u) << response.dump();
  }
}

TEST_F(ImageOpsTest, OpsOnActorsHoldNoServerThreadWhileTheirReactorIsBusy) {
  auto setup = Connect();
  Create(*setup, "actors/seven", "wat", ConstantActorWat(7));
  std::string actor = SpawnActor(*setup, "actors/seven", 3);
  // Given the image's reactor busy with a task that waits for this test
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  ASSERT_TRUE(image_->runtime().Post(image_->group().home, [released] { released.wait(); }).ok());
  // when two clients (as many as the server has handler threads) ask about the actor
  auto inspector = Connect();
  auto lister = Connect();
  ASSERT_FALSE(inspector->SendText(
      json{{"v", 1}, {"id", "i"}, {"op", "inspect"}, {"args", {{"actor", actor}}}}.dump()));
  ASSERT_FALSE(lister->SendText(R"({"v":1,"id":"p","op":"ps","args":{}})"));
  // then a third client is served while they wait
  auto pinger = Connect();
  EXPECT_EQ(pinger->Ok("ping")["pong"], true);
  EXPECT_EQ(pinger->Ok("read", {{"path", "actors/seven"}})["kind"], "wat");
  release.set_value();
  // and both answer once the reactor is free
  json inspected = inspector->NextResponse();
  ASSERT_EQ(inspected["ok"], true) << inspected.dump();
  EXPECT_EQ(inspected["result"]["state"], 3);
  json listed = lister->NextResponse();
  ASSERT_EQ(listed["ok"], true) << listed.dump();
  EXPECT_EQ(listed["result"]["actors"].size(), 1u);
}

TEST_F(ImageOpsTest, CompilesHoldNoServerThread) {
  if (!HaveClang()) GTEST_SKIP() << "no C compiler";
  // Given three clients each spawning from a C source of its own (three compiles: more than
  // the server's two handler threads)
  auto reader = Connect();
  const std::string counter = reader->Ok("read", {{"path", "actors/counter"}})["text"];
  using Clock = std::chrono::steady_clock;
  std::vector<Clock::time_point> spawned(3);
  std::vector<std::thread> spawners;
  for (int i = 0; i < 3; ++i) {
    const std::string path = "actors/copy" + std::to_string(i);
    Create(*reader, path, "c", counter + "\n/* copy " + std::to_string(i) + " */\n");
    spawners.emplace_back([this, path, &spawned, i] {
      auto client = Connect();
      EXPECT_NE(SpawnActor(*client, path, 0), "");
      spawned[i] = Clock::now();
    });
  }
  // when a fourth client pings while they compile
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  auto pinger = Connect();
  EXPECT_EQ(pinger->Ok("ping")["pong"], true);
  const Clock::time_point pinged = Clock::now();
  for (std::thread& spawner : spawners) spawner.join();
  // then the ping was answered before any compile ended: none held a server thread
  for (int i = 0; i < 3; ++i) EXPECT_LT(pinged, spawned[i]) << "spawn " << i;
  EXPECT_EQ(reader->Ok("ps")["actors"].size(), 3u);
}

TEST_F(ImageOpsTest, UnknownActorsAndPathsAreNotFoundForLogsAndHistory) {
  auto client = Connect();
  EXPECT_EQ(client->Error("logs", {{"actors", {"AAAAAAAAAAAAAAAAAAAAA"}}})["code"], "not_found");
  EXPECT_EQ(client->Error("subscribe",
                          {{"topic", "logs"}, {"actors", {"AAAAAAAAAAAAAAAAAAAAA"}}})["code"],
            "not_found");
  EXPECT_EQ(client->Error("history", {{"path", "actors/none"}})["code"], "not_found");
  // while an existing path that was never committed has an empty history
  EXPECT_EQ(client->Ok("history", {{"path", "actors/counter"}})["revisions"], json::array());
}

TEST_F(ImageOpsTest, ModulesThatCannotBeInstantiatedAreRefusedAtSpawn) {
  auto client = Connect();
  // An unknown import and a memory over the engine's page limit (default 256 pages)
  std::string unknown_import = ConstantActorWat(1);
  unknown_import.replace(unknown_import.find("(memory"), 0,
                         "(import \"reef\" \"no_such_import\" (func (param i32)))\n  ");
  std::string big_memory = ConstantActorWat(1);
  big_memory.replace(big_memory.find("(memory (export \"memory\") 1)"),
                     std::string("(memory (export \"memory\") 1)").size(),
                     "(memory (export \"memory\") 300)");
  Create(*client, "actors/imports", "wat", unknown_import);
  Create(*client, "actors/big", "wat", big_memory);

  json imports = client->Error("spawn", {{"path", "actors/imports"}, {"state", 0}});
  EXPECT_EQ(imports["code"], "invalid_argument") << imports.dump();
  EXPECT_NE(imports["message"].get<std::string>().find("no_such_import"), std::string::npos)
      << imports.dump();
  json big = client->Error("spawn", {{"path", "actors/big"}, {"state", 0}});
  EXPECT_EQ(big["code"], "limit_exceeded") << big.dump();
  EXPECT_NE(big["message"].get<std::string>().find("max_memory_pages"), std::string::npos)
      << big.dump();
  // and nothing was spawned
  EXPECT_EQ(client->Ok("ps")["actors"], json::array());
  // while a sound module still spawns
  Create(*client, "actors/fine", "wat", ConstantActorWat(1));
  SpawnActor(*client, "actors/fine", 0);
  EXPECT_EQ(client->Ok("ps")["actors"].size(), 1u);
}

}  // namespace
}  // namespace reef::image
