// The module HTTP API (docs/http-api.md "Modules") on a real Server over loopback, with the
// event routes beside it as `reef serve` has them; /metrics is checked with promtool.
#include "apps/http/module_routes.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <thread>

#include "../events/event_store_test_support.h"
#include "apps/http/metrics_route.h"
#include "events/http/event_routes.h"
#include "support/http_test_client.h"

namespace reef::apps {
namespace {

using boost::beast::http::verb;
using events::testing::TempDir;
using json = nlohmann::json;
using reef::testing::HttpCall;
using reef::testing::HttpResult;

std::string GuestText(const std::string& name) {
  std::ifstream in(std::string(REEF_GUEST_DIR) + "/" + name + ".wasm", std::ios::binary);
  EXPECT_TRUE(in.good()) << name;
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

class ModuleRoutesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = events::OpenEventStore(dir_.path() / "events");
    ASSERT_TRUE(store.ok());
    events_ = std::move(*store);
    RuntimeOptions options;
    options.data_dir = dir_.path();
    auto runtime = ModuleRuntime::Open(*events_, options);
    ASSERT_TRUE(runtime.ok()) << runtime.status().ToString();
    runtime_ = std::move(*runtime);
    server::ServerOptions server_options;
    server_options.listen = "127.0.0.1:0";
    server_options.handler_threads = 4;
    events::http::EventRouteOptions event_options;  // as `reef serve` wires them
    event_options.reserved_data_prefix = std::string(KeyRing::kMarker);
    event_options.encrypt = [this](std::string_view scope, std::string_view data) {
      return runtime_->keys().Encrypt(scope, data);
    };
    event_options.decrypt = [this](std::string_view stored) {
      return runtime_->keys().Open(stored);
    };
    server_options.routes = events::http::EventRoutes(*events_, event_options);
    for (auto& route : http::ModuleRoutes(*runtime_)) server_options.routes.push_back(route);
    auto collector = metrics_.Register(
        "modules", [this](MetricFamilies& out) { runtime_->CollectMetrics(out); });
    ASSERT_TRUE(collector.ok()) << collector.status().ToString();
    metrics_collector_ = std::move(*collector);
    server_options.routes.push_back(http::MetricsRoute(metrics_));
    auto started = server::Server::Start(std::move(server_options));
    ASSERT_TRUE(started.ok()) << started.status().ToString();
    server_ = std::move(*started);
  }
  void TearDown() override {
    server_.reset();
    metrics_collector_.Reset();
    runtime_.reset();
    events_.reset();
  }

  HttpResult Call(verb method, const std::string& target, const std::string& body = "",
                  const std::vector<std::pair<std::string, std::string>>& headers = {}) {
    return HttpCall(server_->port(), method, target, body, "", std::chrono::seconds(20),
                    "application/json", headers);
  }
  HttpResult UploadGuest(const std::string& kind, const std::string& name,
                         const std::string& version, const std::string& guest,
                         bool activate = true) {
    return HttpCall(
        server_->port(), verb::post,
        "/" + kind + "/" + name + "/versions/" + version + (activate ? "?activate=true" : ""),
        GuestText(guest), "", std::chrono::seconds(20), "application/wasm");
  }
  void ExpectError(const HttpResult& r, unsigned status, const std::string& code,
                   const std::string& message_part) {
    EXPECT_EQ(r.status, status) << r.text;
    EXPECT_EQ(r.body["error"]["code"], code) << r.text;
    EXPECT_NE(r.body["error"]["message"].get<std::string>().find(message_part), std::string::npos)
        << r.text;
  }

  TempDir dir_;
  std::unique_ptr<events::EventStore> events_;
  std::unique_ptr<ModuleRuntime> runtime_;
  MetricsRegistry metrics_;  // GET /metrics: the runtime's collector
  MetricsRegistration metrics_collector_;
  std::unique_ptr<server::Server> server_;
};

TEST_F(ModuleRoutesTest, UploadListShowActivateAndDelete) {
  auto created = UploadGuest("commands", "count", "1.0.0", "test_command", false);
  ASSERT_EQ(created.status, 201u) << created.text;
  EXPECT_EQ(created.body["created"], true);
  EXPECT_EQ(created.body["sha256"].get<std::string>().size(), 64u);
  auto again = UploadGuest("commands", "count", "1.0.0", "test_command", false);
  EXPECT_EQ(again.status, 200u) << again.text;
  EXPECT_EQ(again.body["created"], false);
  ExpectError(UploadGuest("commands", "count", "1.0.0", "bank_deposit", false), 409,
              "already_exists", "1.0.0");
  ASSERT_EQ(UploadGuest("commands", "count", "1.1.0", "bank_deposit", false).status, 201u);

  auto list = Call(verb::get, "/commands");
  ASSERT_EQ(list.status, 200u) << list.text;
  ASSERT_EQ(list.body["modules"].size(), 1u);
  EXPECT_EQ(list.body["modules"][0]["versions"].size(), 2u);
  EXPECT_TRUE(list.body["modules"][0]["active_version"].is_null());

  auto activated = Call(verb::put, "/commands/count/active", R"({"version": "1.0.0"})");
  ASSERT_EQ(activated.status, 200u) << activated.text;
  EXPECT_EQ(activated.body["active_version"], "1.0.0");
  EXPECT_EQ(activated.body["status"]["state"], "active");
  ExpectError(Call(verb::delete_, "/commands/count/versions/1.0.0"), 412, "failed_precondition",
              "active");
  ExpectError(Call(verb::delete_, "/commands/count"), 412, "failed_precondition", "active");
  auto deleted = Call(verb::delete_, "/commands/count/versions/1.1.0");
  ASSERT_EQ(deleted.status, 200u) << deleted.text;
  EXPECT_EQ(deleted.body["versions"].size(), 1u);
  ASSERT_EQ(Call(verb::delete_, "/commands/count/active").status, 200u);
  ASSERT_EQ(Call(verb::delete_, "/commands/count").status, 200u);
  ExpectError(Call(verb::get, "/commands/count"), 404, "not_found", "count");
}

TEST_F(ModuleRoutesTest, BadRequestsGetClearErrors) {
  ExpectError(UploadGuest("commands", "Bad_Name", "1.0.0", "test_command"), 400, "invalid_argument",
              "name");
  ExpectError(UploadGuest("commands", "x", "1.0", "test_command"), 400, "invalid_argument", "1.0");
  ExpectError(UploadGuest("projectors", "x", "1.0.0", "test_command"), 400, "invalid_argument",
              "missing export `reef_project`");
  ExpectError(HttpCall(server_->port(), verb::post, "/commands/x/versions/1.0.0", "not wasm", "",
                       std::chrono::seconds(10), "application/wasm"),
              400, "invalid_argument", "x.wasm");
  ExpectError(UploadGuest("commands", "x", "1.0.0", "test_command").status == 201
                  ? Call(verb::post, "/commands/x/versions/2.0.0?activate=maybe", "x")
                  : HttpResult{},
              400, "invalid_argument", "activate");
  ExpectError(Call(verb::put, "/commands/x/active", R"({"version": "9.9.9"})"), 404, "not_found",
              "9.9.9");
  ExpectError(Call(verb::put, "/commands/x/active", R"({"v": 1})"), 400, "invalid_argument",
              "version");
  ExpectError(Call(verb::post, "/commands/x/replay"), 400, "invalid_argument", "projectors");
  ExpectError(Call(verb::post, "/commands/x/execute", "{not json"), 400, "invalid_argument",
              "not valid JSON");
  ExpectError(Call(verb::post, "/commands/nope/execute", "{}"), 404, "not_found", "nope");
  // Numbers that would be rounded on the way in are refused, never executed changed.
  ExpectError(Call(verb::post, "/commands/x/execute", R"({"tag": "t", "n": 12345678901234567890})"),
              400, "invalid_argument", "outside the int64 range");
  ExpectError(Call(verb::post, "/commands/x/execute", R"({"tag": "t", "n": 1e-400})"), 400,
              "invalid_argument", "too close to zero");
  // A module that fails (here: input without "tag") is a 500 naming the module and reason.
  ExpectError(Call(verb::post, "/commands/x/execute", "{}"), 500, "trapped",
              "input needs a string \"tag\"");
  ExpectError(Call(verb::post, "/projectors/nope/query", R"({"sql": "SELECT 1"})"), 404,
              "not_found", "nope");
  ExpectError(Call(verb::delete_, "/crypto-keys/nobody"), 404, "not_found", "nobody");
  ExpectError(Call(verb::put, "/commands/x/env/1BAD", R"({"value": "v"})"), 400, "invalid_argument",
              "1BAD");
  // The server keeps serving.
  EXPECT_EQ(Call(verb::get, "/health").status, 200u);
}

// Issue 13: modules whose declarations would make the loader allocate without bound.
TEST_F(ModuleRoutesTest, HostileModulesAreRefusedNamingTheSectionOrTheLimit) {
  const std::string huge_data_count("\x00\x61\x73\x6d\x01\x00\x00\x00\x0c\x05\xff\xff\xff\xff\x0f",
                                    15);
  ExpectError(HttpCall(server_->port(), verb::post, "/commands/x/versions/1.0.0", huge_data_count,
                       "", std::chrono::seconds(10), "application/wasm"),
              400, "invalid_argument", "x.wasm:000000a: error: malformed data count section");
  // 200,000 functions of one type with 3-byte bodies: honest, but past max_functions.
  std::string many("\x00\x61\x73\x6d\x01\x00\x00\x00\x01\x04\x01\x60\x00\x00", 14);
  const std::string count = "\xc0\x9a\x0c";  // 200,000 as LEB128
  many += "\x03\xc3\x9a\x0c" + count + std::string(200'000, '\x00');
  std::string bodies = count;
  for (int i = 0; i < 200'000; ++i) bodies += std::string("\x02\x00\x0b", 3);
  many += "\x0a\xc3\xcf\x24" + bodies;  // 600,003 bytes
  ExpectError(HttpCall(server_->port(), verb::post, "/commands/y/versions/1.0.0", many, "",
                       std::chrono::seconds(10), "application/wasm"),
              400, "invalid_argument", "limit max_functions=100000");
}

TEST_F(ModuleRoutesTest, ExecuteAppendsRejectsAndHonoursIdempotencyKeys) {
  ASSERT_EQ(UploadGuest("commands", "count", "1.0.0", "test_command").status, 201u);
  auto first = Call(verb::post, "/commands/count/execute", R"({"tag": "t"})",
                    {{"Idempotency-Key", "k-1"}, {"X-Correlation-Id", "corr-1"}});
  ASSERT_EQ(first.status, 200u) << first.text;
  EXPECT_EQ(first.body["position"], 1);
  EXPECT_EQ(first.body["events"][0]["type"], "Counted");
  EXPECT_EQ(first.body["events"][0]["tags"], json({"t"}));
  EXPECT_EQ(first.body["events"][0]["data"]["count"], 0);
  EXPECT_EQ(first.body["replayed"], false);
  auto repeat =
      Call(verb::post, "/commands/count/execute", R"({"tag": "t"})", {{"Idempotency-Key", "k-1"}});
  ASSERT_EQ(repeat.status, 200u) << repeat.text;
  EXPECT_EQ(repeat.body["replayed"], true);
  EXPECT_EQ(repeat.body["events"], first.body["events"]);
  auto stored = Call(verb::post, "/events/read", "{}");
  ASSERT_EQ(stored.body["events"].size(), 1u);
  EXPECT_EQ(stored.body["events"][0]["metadata"]["correlation_id"], "corr-1");
  EXPECT_EQ(stored.body["events"][0]["metadata"]["idempotency_key"], "k-1");
  auto rejected = Call(verb::post, "/commands/count/execute", R"({"tag": "t", "expect": 5})");
  ExpectError(rejected, 422, "command_rejected", "expected 5 events, found 1");
  EXPECT_EQ(rejected.body["error"]["message"], "expected 5 events, found 1");
}

TEST_F(ModuleRoutesTest, AnIdempotencyKeyThatIsNotUtf8IsRefusedNamingTheKeyBeforeRunning) {
  ASSERT_EQ(UploadGuest("commands", "count", "1.0.0", "test_command").status, 201u);
  auto refused = Call(verb::post, "/commands/count/execute", R"({"tag": "t"})",
                      {{"Idempotency-Key", "k-\xff"}});
  ExpectError(refused, 400, "invalid_argument",
              "the idempotency key is not valid UTF-8 (byte 2); nothing was run");
  ExpectError(
      Call(verb::post, "/commands/count/execute", R"({"tag": "t"})", {{"Idempotency-Key", ""}}),
      400, "invalid_argument", "the Idempotency-Key header is empty");
  EXPECT_EQ(Call(verb::post, "/events/read", "{}").body["events"].size(), 0u);
}

TEST_F(ModuleRoutesTest, ProjectorStatusEnvReplayAndQuery) {
  ASSERT_EQ(UploadGuest("projectors", "ticks", "1.0.0", "test_projector_v1").status, 201u);
  ASSERT_EQ(
      Call(
          verb::post, "/events/append",
          R"({"events": [{"type": "Tick", "data": {"n": 1}}, {"type": "Tick", "data": {"n": 2}}]})")
          .status,
      200u);
  json module;
  for (int i = 0; i < 500; ++i) {
    module = Call(verb::get, "/projectors/ticks").body;
    if (module["status"]["position"] == 2) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(module["status"]["position"], 2) << module.dump();
  EXPECT_EQ(module["status"]["up"], true);
  EXPECT_EQ(module["status"]["query"]["items"][0]["types"], json({"Tick", "Poison", "Meddle"}));
  auto rows = Call(verb::post, "/projectors/ticks/query",
                   R"({"sql": "SELECT n FROM ticks WHERE n > ?1 ORDER BY n", "params": [0]})");
  ASSERT_EQ(rows.status, 200u) << rows.text;
  EXPECT_EQ(rows.body["rows"], json::parse(R"([{"n": 1}, {"n": 2}])"));
  ExpectError(Call(verb::post, "/projectors/ticks/query", R"({"sql": "DELETE FROM ticks"})"), 400,
              "invalid_argument", "read-only");
  // A query that never ends is interrupted instead of holding a handler thread.
  ExpectError(
      Call(
          verb::post, "/projectors/ticks/query",
          R"({"sql": "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT count(*) FROM r"})"),
      413, "limit_exceeded", "longer than 5 s");
  auto env = Call(verb::put, "/projectors/ticks/env/MODE", R"({"value": "fast"})");
  ASSERT_EQ(env.status, 200u) << env.text;
  EXPECT_EQ(env.body["env"]["MODE"], "fast");
  EXPECT_EQ(Call(verb::get, "/projectors/ticks/env").body["env"]["MODE"], "fast");
  EXPECT_EQ(Call(verb::delete_, "/projectors/ticks/env/MODE").body["env"], json::object());
  auto replayed = Call(verb::post, "/projectors/ticks/replay");
  ASSERT_EQ(replayed.status, 200u) << replayed.text;
  for (int i = 0; i < 500; ++i) {
    module = Call(verb::get, "/projectors/ticks").body;
    if (module["status"]["position"] == 2) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(module["status"]["position"], 2);
  EXPECT_GE(module["status"]["restarts"].get<int>(), 2);  // two env changes and a replay
  auto count =
      Call(verb::post, "/projectors/ticks/query", R"({"sql": "SELECT count(*) AS c FROM ticks"})");
  EXPECT_EQ(count.body["rows"][0]["c"], 2);
}

TEST_F(ModuleRoutesTest, CryptoKeyDeletionShredsOverHttp) {
  ASSERT_EQ(UploadGuest("commands", "count", "1.0.0", "test_command").status, 201u);
  ASSERT_EQ(Call(verb::post, "/commands/count/execute",
                 R"({"tag": "u", "secret": "s3cret", "scope": "user:9"})")
                .status,
            200u);
  auto seen = Call(verb::post, "/commands/count/execute", R"({"tag": "u"})");
  EXPECT_EQ(seen.body["events"][0]["data"]["last_secret"], "s3cret");
  auto shred = Call(verb::delete_, "/crypto-keys/user:9");
  ASSERT_EQ(shred.status, 200u) << shred.text;
  EXPECT_EQ(shred.body, json::parse(R"({"scope": "user:9", "shredded": true})"));
  auto after = Call(verb::post, "/commands/count/execute", R"({"tag": "u"})");
  EXPECT_TRUE(after.body["events"][0]["data"]["last_secret"].is_null()) << after.text;
}

TEST_F(ModuleRoutesTest, EventsAppendedOverHttpWithAScopeAreEncryptedAndShreddable) {
  ASSERT_EQ(UploadGuest("commands", "count", "1.0.0", "test_command").status, 201u);
  auto appended =
      Call(verb::post, "/events/append",
           R"({"events": [{"type": "Profile", "tags": ["u"], "encryption_scope": "user:5",
                                       "data": {"secret": "bob@example.com"}}]})");
  ASSERT_EQ(appended.status, 200u) << appended.text;
  auto stored = Call(verb::post, "/events/read", "{}");
  EXPECT_TRUE(stored.body["events"][0].contains("data_base64")) << stored.text;
  EXPECT_EQ(stored.text.find("bob@"), std::string::npos);
  auto seen = Call(verb::post, "/commands/count/execute", R"({"tag": "u"})");
  EXPECT_EQ(seen.body["events"][0]["data"]["last_secret"], "bob@example.com") << seen.text;
  ASSERT_EQ(Call(verb::delete_, "/crypto-keys/user:5").status, 200u);
  auto gone = Call(verb::post, "/commands/count/execute", R"({"tag": "u"})");
  EXPECT_EQ(gone.body["events"][0]["data"]["count"], 2);
  EXPECT_TRUE(gone.body["events"][0]["data"]["last_secret"].is_null()) << gone.text;
  ExpectError(
      Call(verb::post, "/events/append", R"({"events": [{"type": "P", "encryption_scope": 7}]})"),
      400, "invalid_argument", "events[0].encryption_scope");
  // A client cannot forge encrypted data: the marker is refused as plain data.
  ExpectError(Call(verb::post, "/events/append",
                   R"({"events": [{"type": "P", "tags": ["u"], "data_base64": "AFJDMQ=="}]})"),
              400, "invalid_argument", "reserved for encrypted data");
}

TEST_F(ModuleRoutesTest, AnEncryptedEventWithAnIdIsRetriedSafelyAndItsIdStaysUnique) {
  const std::string event =
      R"({"events": [{"id": "77777777-2222-4333-8444-555555555555", "type": "Secret",
                      "tags": ["s:1"], "encryption_scope": "person:ada", "data": {"name": "Ada"}}]})";
  auto first = Call(verb::post, "/events/append", event);
  ASSERT_EQ(first.status, 200u) << first.text;
  // The same append again (its ciphertext would differ): a retry, answered with the position.
  auto retry = Call(verb::post, "/events/append", event);
  EXPECT_EQ(retry.status, 200u) << retry.text;
  EXPECT_EQ(retry.body["position"], first.body["position"]);
  // The same id with other data is still a reuse of the id.
  std::string other = event;
  other.replace(other.find("Ada"), 3, "Bob");
  ExpectError(Call(verb::post, "/events/append", other), 409, "duplicate_event_id",
              "77777777-2222-4333-8444-555555555555");
  EXPECT_EQ(events_->Head(), 1u);
}

// promtool (Debian package prometheus, installed by scripts/setup.sh) lints the exposition.
TEST_F(ModuleRoutesTest, MetricsPassPromtoolCheck) {
  ASSERT_EQ(UploadGuest("commands", "count", "1.0.0", "test_command").status, 201u);
  ASSERT_EQ(UploadGuest("projectors", "ticks", "1.0.0", "test_projector_v1").status, 201u);
  ASSERT_EQ(UploadGuest("effects", "jobs", "1.0.0", "test_effect").status, 201u);
  ASSERT_EQ(Call(verb::post, "/commands/count/execute", R"({"tag": "t"})").status, 200u);
  auto metrics = Call(verb::get, "/metrics");
  ASSERT_EQ(metrics.status, 200u);
  EXPECT_EQ(metrics.content_type, "text/plain; version=0.0.4; charset=utf-8");
  for (const char* family :
       {"reef_module_up", "reef_module_position", "reef_module_lag_positions",
        "reef_module_failures_total", "reef_module_restarts_total", "reef_module_backoff_seconds",
        "reef_event_store_head", "reef_command_executions_total"}) {
    EXPECT_NE(metrics.text.find(std::string("# TYPE ") + family), std::string::npos) << family;
  }
  EXPECT_NE(metrics.text.find("reef_event_store_head 1\n"), std::string::npos) << metrics.text;
  std::string path = (dir_.path() / "metrics.txt").string();
  std::ofstream(path) << metrics.text;
  std::string command = "promtool check metrics < " + path + " 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char buffer[512];
  while (size_t n = std::fread(buffer, 1, sizeof buffer, pipe)) output.append(buffer, n);
  int status = ::pclose(pipe);
  EXPECT_EQ(status, 0) << "promtool check metrics failed (is the prometheus package installed? "
                          "scripts/setup.sh installs it):\n"
                       << output << "\n"
                       << metrics.text;
}

}  // namespace
}  // namespace reef::apps
