// The bundled examples as users meet them: built from C by the project, uploaded to or deployed
// on the real `reef serve` over HTTP, and fed the inputs outside testers fed them (issue 13).
// Examples are what users copy, so they validate input, use checked arithmetic, answer a bad
// input with a clear error (HTTP 422 for a command, an error reply for a unit) and never lose
// state or wrap around because of one. Also the C SDK's reef_strf, which must never shorten a
// text: two long idempotency tokens must not become one tag.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "support/http_test_client.h"
#include "support/program_body.h"
#include "support/reef_server.h"

namespace reef::testing {
namespace {

namespace http = boost::beast::http;
using nlohmann::json;

constexpr char kReefBinary[] = REEF_BINARY;
constexpr char kGuestDir[] = REEF_GUEST_DIR;
constexpr char kProgramV1Dir[] = REEF_PROGRAM_V1_DIR;

std::string GuestBytes(const std::string& name) {
  std::ifstream in(std::string(kGuestDir) + "/" + name + ".wasm", std::ios::binary);
  EXPECT_TRUE(in.good()) << name;
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

class ExamplesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error = server_.Start();
    ASSERT_EQ(error, "") << error;
  }

  HttpResult Post(const std::string& target, const json& body) {
    return HttpCall(server_.port(), http::verb::post, target, body.dump());
  }
  HttpResult Get(const std::string& target) { return HttpGet(server_.port(), target); }

  // Uploads and activates `guest` as {kind}/{name} version 1.0.0.
  void Upload(const std::string& kind, const std::string& name, const std::string& guest) {
    HttpResult r = HttpCall(server_.port(), http::verb::post,
                            "/" + kind + "/" + name + "/versions/1.0.0?activate=true",
                            GuestBytes(guest), "", std::chrono::seconds(20), "application/wasm");
    ASSERT_EQ(r.status, 201u) << r.text;
  }

  void UploadBank() {
    Upload("commands", "open-account", "bank_open_account");
    Upload("commands", "deposit", "bank_deposit");
    Upload("commands", "withdraw", "bank_withdraw");
    Upload("projectors", "balances", "bank_balances");
  }

  HttpResult Execute(const std::string& command, const json& input) {
    return Post("/commands/" + command + "/execute", input);
  }

  void ExpectRejected(const HttpResult& r, const std::string& message_part) {
    EXPECT_EQ(r.status, 422u) << r.text;
    EXPECT_EQ(r.body["error"]["code"], "command_rejected") << r.text;
    EXPECT_NE(r.text.find(message_part), std::string::npos) << r.text;
  }

  // Appends one event directly, as anyone with access to the store may.
  void Append(const std::string& type, const std::string& tag, const json& data) {
    HttpResult r =
        Post("/events/append", {{"events", {{{"type", type}, {"tags", {tag}}, {"data", data}}}}});
    ASSERT_EQ(r.status, 200u) << r.text;
  }

  // Waits (5 s at most) until the projector has handled `position` or stopped; returns its
  // status.
  json ProjectorStatus(const std::string& name, int64_t position) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    json status;
    while (std::chrono::steady_clock::now() < deadline) {
      status = Get("/projectors/" + name).body["status"];
      if (status.is_object() &&
          (status["state"] == "failed" || status["position"].get<int64_t>() >= position)) {
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return status;
  }

  int64_t Head() { return Get("/events/head").body["head"].get<int64_t>(); }

  ReefServer server_{kReefBinary};
};

// ---- Item 15: the bank example -----------------------------------------------------------------

TEST_F(ExamplesTest, BankRejectsADepositOfInt64MaxAndKeepsTheBalance) {
  UploadBank();
  ASSERT_EQ(Execute("open-account", {{"account_id", "a1"}, {"owner", "Ada"}}).status, 200u);
  ASSERT_EQ(Execute("deposit", {{"account_id", "a1"}, {"amount", 100}}).status, 200u);
  // When a deposit of 2^63 - 1 comes in
  HttpResult r = Execute("deposit", {{"account_id", "a1"}, {"amount", INT64_MAX}});
  // then it is rejected naming the rule, and nothing is appended
  ExpectRejected(r, "integer \\\"amount\\\" from 1 to 1000000000000");
  ASSERT_EQ(Execute("withdraw", {{"account_id", "a1"}, {"amount", 100}}).status, 200u);
  ExpectRejected(Execute("withdraw", {{"account_id", "a1"}, {"amount", 1}}),
                 "insufficient funds: balance 0");
  // and the read model's balance is an integer
  ASSERT_NE(ProjectorStatus("balances", Head())["state"], "failed");
  HttpResult rows = Post("/projectors/balances/query", {{"sql", "SELECT balance FROM accounts"}});
  ASSERT_EQ(rows.status, 200u) << rows.text;
  EXPECT_EQ(rows.body["rows"], json::parse(R"([{"balance": 0}])")) << rows.text;
}

TEST_F(ExamplesTest, BankRefusesAccountIdsThatWouldNameAnotherAccountOrPassTheScopeLimit) {
  UploadBank();
  ASSERT_EQ(Execute("open-account", {{"account_id", "a"}, {"owner", "Ada"}}).status, 200u);
  const int64_t head = Head();
  // "a\0x" formats into the tag "account:a" ("%.*s" stops at the NUL): it must not act on "a".
  const std::string rule = "1 to 248 bytes without control characters";
  ExpectRejected(Execute("deposit", {{"account_id", std::string("a\0x", 3)}, {"amount", 5}}), rule);
  ExpectRejected(Execute("open-account", {{"account_id", "b\n"}, {"owner", "Bo"}}), rule);
  // "account:" + 249 bytes would pass the 256-byte encryption scope limit: a rejection too,
  // not a 400 from the host; 248 bytes is fine.
  ExpectRejected(Execute("open-account", {{"account_id", std::string(249, 'z')}, {"owner", "Z"}}),
                 rule);
  EXPECT_EQ(Head(), head) << "nothing appended";
  EXPECT_EQ(Execute("open-account", {{"account_id", std::string(248, 'z')}, {"owner", "Z"}}).status,
            200u);
}

TEST_F(ExamplesTest, BankRejectsADepositThatWouldOverflowTheBalance) {
  UploadBank();
  ASSERT_EQ(Execute("open-account", {{"account_id", "a1"}, {"owner", "Ada"}}).status, 200u);
  // Given a balance near 2^63 - 1, from an event appended past the commands
  Append("MoneyDeposited", "account:a1", {{"account_id", "a1"}, {"amount", INT64_MAX - 5}});
  // when a valid deposit would take it over
  HttpResult r = Execute("deposit", {{"account_id", "a1"}, {"amount", 10}});
  // then the command rejects it instead of wrapping around
  ExpectRejected(r, "would overflow the balance 9223372036854775802");
  EXPECT_EQ(Execute("deposit", {{"account_id", "a1"}, {"amount", 5}}).status, 200u);
  // and one more appended past the commands fails loudly in the fold, naming the event
  Append("MoneyDeposited", "account:a1", {{"account_id", "a1"}, {"amount", 1}});
  HttpResult overflow = Execute("withdraw", {{"account_id", "a1"}, {"amount", 1}});
  EXPECT_EQ(overflow.status, 500u) << overflow.text;
  EXPECT_NE(overflow.text.find("overflows the balance"), std::string::npos) << overflow.text;
}

TEST_F(ExamplesTest, BankProjectorStopsOnAnOverflowInsteadOfStoringAFloat) {
  UploadBank();
  ASSERT_EQ(Execute("open-account", {{"account_id", "a1"}, {"owner", "Ada"}}).status, 200u);
  Append("MoneyDeposited", "account:a1", {{"account_id", "a1"}, {"amount", INT64_MAX}});
  ASSERT_NE(ProjectorStatus("balances", Head())["state"], "failed");
  // When one more deposit would overflow the read model's balance
  Append("MoneyDeposited", "account:a1", {{"account_id", "a1"}, {"amount", 1}});
  json status = ProjectorStatus("balances", Head());
  // then the projector stops at that event, saying why, and the balance stays an integer
  EXPECT_EQ(status["state"], "failed") << status.dump();
  EXPECT_NE(status["error"].get<std::string>().find("overflows the balance of account a1"),
            std::string::npos)
      << status.dump();
  HttpResult rows = Post("/projectors/balances/query", {{"sql", "SELECT balance FROM accounts"}});
  EXPECT_EQ(rows.body["rows"], json::parse(R"([{"balance": 9223372036854775807}])")) << rows.text;
}

TEST_F(ExamplesTest, BankAnswersEveryBadInputWith422) {
  UploadBank();
  ASSERT_EQ(Execute("open-account", {{"account_id", "a1"}, {"owner", "Ada"}}).status, 200u);
  for (const json& input : {json::parse("[1, 2]"), json::parse("\"a1\""), json::parse("{}"),
                            json::parse(R"({"account_id": 7, "amount": 5})"),
                            json::parse(R"({"account_id": "a1", "amount": 0})"),
                            json::parse(R"({"account_id": "a1", "amount": -5})"),
                            json::parse(R"({"account_id": "a1", "amount": 1.5})"),
                            json::parse(R"({"account_id": "a1", "amount": "5"})"),
                            json{{"account_id", std::string(300, 'x')}, {"amount", 5}}}) {
    HttpResult r = Execute("deposit", input);
    EXPECT_EQ(r.status, 422u) << input.dump() << " -> " << r.text;
  }
  ExpectRejected(Execute("open-account", {{"account_id", "a2"}, {"owner", 5}}),
                 "\\\"owner\\\" must be a string");
}

// ---- Item 15: the DCB examples
// -------------------------------------------------------------------

TEST_F(ExamplesTest, DcbCommandsAnswerBadInputWith422NamingTheField) {
  Upload("commands", "register-account", "dcb_register_account_v1");
  Upload("commands", "define-course", "dcb_define_course");
  Upload("commands", "create-invoice", "dcb_create_invoice");
  Upload("commands", "change-course-capacity", "dcb_change_course_capacity");
  ExpectRejected(Execute("register-account", json::parse("[1]")),
                 "the command input must be a JSON object, not list");
  ExpectRejected(Execute("register-account", {{"username", 5}}),
                 "the command input field 'username' must be text");
  ExpectRejected(Execute("register-account", {{"username", std::string(600, 'u')}}),
                 "must be text of at most 512 bytes");
  ExpectRejected(Execute("define-course", {{"courseId", "c1"}}),
                 "the command input needs a number field 'capacity'");
  ExpectRejected(Execute("create-invoice", {{"invoiceData", 3}}),
                 "the command input field 'invoiceData' must be an object");
  // A good input still works, and nothing was appended before it.
  EXPECT_EQ(Head(), 0);
  EXPECT_EQ(Execute("register-account", {{"username", "u1"}}).status, 200u);
  EXPECT_EQ(Execute("define-course", {{"courseId", "c1"}, {"capacity", 1e300}}).status, 200u);
  // A number JavaScript writes with an exponent is named in the rejection, not a failure.
  ExpectRejected(Execute("change-course-capacity", {{"courseId", "c1"}, {"newCapacity", 1e300}}),
                 "New capacity 1e+300 is the same as the current capacity");
}

// ---- Item 16: the program counter ---------------------------------------------------------------

TEST_F(ExamplesTest, CounterUnitAnswersABadMessageWithAnErrorAndKeepsItsCount) {
  std::string error;
  json body = ProgramBody(kProgramV1Dir, nullptr, error);
  ASSERT_EQ(error, "");
  HttpResult deployed = HttpCall(server_.port(), http::verb::post, "/programs", body.dump(), "",
                                 std::chrono::seconds(20));
  ASSERT_EQ(deployed.status, 200u) << deployed.text;
  ASSERT_EQ(Post("/units/counter/invoke", {{"op", "add"}}).body["result"]["count"], 1);
  // When valid JSON that is not the counter's message comes in
  for (const json& message : {json::parse("[1, 2]"), json::parse("7"), json::parse("null"),
                              json::parse(R"({"op": 5})"), json::parse(R"({"op": "mul"})")}) {
    HttpResult r = Post("/units/counter/invoke", message);
    // then it answers 200 with an error naming what was wrong
    EXPECT_EQ(r.status, 200u) << message.dump() << " -> " << r.text;
    EXPECT_TRUE(r.body["result"]["error"].is_string()) << message.dump() << " -> " << r.text;
  }
  // and the count is kept: the instance was not poisoned
  EXPECT_EQ(Post("/units/counter/invoke", {{"op", "get"}}).body["result"]["count"], 1);
  json instances = Get("/units/counter/instances").body["instances"];
  ASSERT_EQ(instances.size(), 1u) << instances.dump();
  EXPECT_EQ(instances[0]["incarnation"], 1) << instances.dump();
}

// ---- Item 14: reef_strf never shortens a text ---------------------------------------------------

TEST_F(ExamplesTest, TwoLongIdempotencyTokensAreNeverTakenForOneResubmission) {
  Upload("commands", "place-order", "test_order");
  // Given two different 1,100-byte tokens that share their first 1,050 bytes
  std::string first = std::string(1050, 't') + std::string(50, 'a');
  std::string second = std::string(1050, 't') + std::string(50, 'b');
  HttpResult a = Execute("place-order", {{"token", first}});
  HttpResult b = Execute("place-order", {{"token", second}});
  // then neither is refused as a resubmission of the other: the tags are whole, so the
  // host's 1,024-byte tag limit refuses both, naming it
  for (const HttpResult* r : {&a, &b}) {
    EXPECT_EQ(r->text.find("already placed"), std::string::npos) << r->text;
    EXPECT_EQ(r->status, 413u) << r->text;
    EXPECT_NE(r->text.find("1024"), std::string::npos) << r->text;
  }
  // and short tokens work as before
  EXPECT_EQ(Execute("place-order", {{"token", "t1"}}).status, 200u);
  ExpectRejected(Execute("place-order", {{"token", "t1"}}), "order t1 was already placed");
}

// ---- Issue 14: tier selection -------------------------------------------------------------

// Under the default `--engine auto` every face starts on the interpreter and moves to native
// code at a handler boundary once the module is compiled, with no change but speed: the bank
// keeps executing, its projector and effect keep handling events, and the balances add up.
TEST_F(ExamplesTest, BankMovesToNativeCodeUnderAutoWithoutChangingAnything) {
  UploadBank();
  Upload("effects", "withdrawal-alert", "bank_withdrawal_alert");
  ASSERT_EQ(Execute("open-account", {{"account_id", "a1"}, {"owner", "Ada"}}).status, 200u);
  auto tier = [this](const std::string& path) {
    json status = Get(path).body["status"];
    return status.is_object() ? status.value("tier", "") : "";
  };
  const std::vector<std::string> faces = {"/commands/deposit", "/commands/withdraw",
                                          "/projectors/balances", "/effects/withdrawal-alert"};
  int64_t deposited = 0;
  int64_t withdrawn = 0;
  bool all_native = false;
  // The four modules compile in the background, one at a time (about 2 CPU-s each).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (!all_native && std::chrono::steady_clock::now() < deadline) {
    ASSERT_EQ(Execute("deposit", {{"account_id", "a1"}, {"amount", 2000}}).status, 200u);
    ASSERT_EQ(Execute("withdraw", {{"account_id", "a1"}, {"amount", 1500}}).status, 200u);
    deposited += 2000;
    withdrawn += 1500;
    all_native = true;
    for (const std::string& face : faces) {
      const std::string now = tier(face);
      // "" until the face made its first instance.
      ASSERT_TRUE(now.empty() || now == "interp" || now == "native")
          << face << " tier '" << now << "'";
      all_native = all_native && now == "native";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  ASSERT_TRUE(all_native) << "not every face ran native code within 120 s";
  // One more round on native code; then every event was handled exactly as on the interpreter.
  ASSERT_EQ(Execute("deposit", {{"account_id", "a1"}, {"amount", 2000}}).status, 200u);
  ASSERT_EQ(Execute("withdraw", {{"account_id", "a1"}, {"amount", 1500}}).status, 200u);
  deposited += 2000;
  withdrawn += 1500;
  const int64_t head = Head();
  json projector = ProjectorStatus("balances", head);
  ASSERT_EQ(projector["state"], "running") << projector.dump();
  EXPECT_EQ(projector["failures"], 0) << projector.dump();
  HttpResult rows = Post("/projectors/balances/query", {{"sql", "SELECT balance FROM accounts"}});
  ASSERT_EQ(rows.status, 200u) << rows.text;
  EXPECT_EQ(rows.body["rows"], json::array({{{"balance", deposited - withdrawn}}})) << rows.text;
  // The effect noticed every withdrawal of 1,500 (at least once, in order per account).
  const size_t withdrawals = static_cast<size_t>(withdrawn / 1500);
  auto notices = [this] {
    HttpResult r =
        Post("/events/read", {{"query", {{"items", {{{"types", {"LargeWithdrawalNoticed"}}}}}}}});
    return r.body["events"].size();
  };
  const auto notice_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (notices() < withdrawals && std::chrono::steady_clock::now() < notice_deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_GE(notices(), withdrawals);
  EXPECT_EQ(Get("/effects/withdrawal-alert").body["status"]["failures"], 0);
  for (const char* command : {"/commands/deposit", "/commands/withdraw"}) {
    EXPECT_EQ(Get(command).body["status"]["failures"], 0) << command;
  }
}

// Issue 15: projector queries and command executions run on pools of their own, so 40 slow
// queries (more than the server's 32 handler threads) no longer keep /health from answering
// (before, it waited 4.5 s).
TEST_F(ExamplesTest, HealthAndCommandsAnswerWhileFortySlowProjectorQueriesRun) {
  UploadBank();
  ASSERT_EQ(Execute("open-account", {{"account_id", "a1"}, {"owner", "Ada"}}).status, 200u);
  // A read-only query that counts for a while: a recursive CTE of 150,000 rows, ~0.1 s of CPU.
  // 40 of them keep the 8 query threads busy for seconds on 2 cores, yet each stays far below
  // the 5 s query limit when the machine is also running other tests (500,000 rows, ~0.4 s,
  // passed that limit under a parallel ctest).
  const json slow = {{"sql",
                      "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < "
                      "150000) SELECT count(*) AS n FROM c"}};
  constexpr int kQueries = 40;
  std::vector<HttpResult> answers(kQueries);
  std::vector<std::thread> clients;
  for (int i = 0; i < kQueries; ++i) {
    clients.emplace_back([&, i] {
      answers[i] = HttpCall(server_.port(), http::verb::post, "/projectors/balances/query",
                            slow.dump(), "", std::chrono::seconds(120));
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the queries are running
  auto start = std::chrono::steady_clock::now();
  HttpResult health =
      HttpCall(server_.port(), http::verb::get, "/health", "", "", std::chrono::seconds(3));
  EXPECT_EQ(health.status, 200u) << health.text;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  // A command runs on its own pool: it does not wait behind the queries.
  HttpResult deposit = Execute("deposit", {{"account_id", "a1"}, {"amount", 5}});
  EXPECT_EQ(deposit.status, 200u) << deposit.text;
  for (auto& client : clients) client.join();
  for (int i = 0; i < kQueries; ++i) {
    ASSERT_EQ(answers[i].status, 200u) << "query " << i << ": " << answers[i].text;
    EXPECT_EQ(answers[i].body["rows"], json::parse(R"([{"n": 150000}])"));
  }
}

}  // namespace
}  // namespace reef::testing
