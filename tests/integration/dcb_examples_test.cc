// Acceptance test of Reef's command modules against the public DCB example scenarios
// (tests/fixtures/dcb-examples, from dcb.events): every test case of every block of every
// scenario file runs on a fresh `reef serve` over real HTTP, with the embedded store and (test
// dcb_examples_postgresql) with the PostgreSQL store.
//
// Given: the block's command modules (examples/dcb, built as ${REEF_GUEST_DIR}/dcb_*.wasm)
// uploaded and activated, and the case's givenEvents appended with POST /events/append, their
// tags from the block's tagResolvers (`prefix:{data.field}`) and, for `metadata.daysAgo = N`,
// `timestamp_ms` = now - N days.
// When: POST /commands/{name}/execute with the whenCommand's data.
// Then: thenExpectedEvent -> 200 and exactly that one event appended (type, data, and the tags
// its resolvers give); thenExpectedError -> 422 command_rejected with exactly that message and
// nothing appended. Both are re-checked with POST /events/read.
//
// The scenario files are read at test start; a block `extends` an earlier one by meta.id and
// inherits its eventDefinitions and commandHandlerDefinitions. One server per case, because
// cases reuse ids (course c1, username u1) and start from an empty store.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "support/http_test_client.h"
#include "support/pg_test_database.h"
#include "support/reef_server.h"

namespace reef::testing {
namespace {

namespace fs = std::filesystem;
namespace http = boost::beast::http;
using nlohmann::json;

constexpr char kReefBinary[] = REEF_BINARY;
constexpr char kGuestDir[] = REEF_GUEST_DIR;
constexpr char kFixturesDir[] = REEF_DCB_FIXTURES_DIR;

constexpr int64_t kMsPerDay = 86'400'000;

// ---- The command modules --------------------------------------------------------------------

// A command module of examples/dcb: the scenario block that defines (or redefines) the
// command, the module's name and version in Reef, and its .wasm in the guest dir.
struct CommandModule {
  std::string_view block;    // meta.id
  std::string_view command;  // commandName in the scenario
  std::string_view name;     // POST /commands/{name}/...
  std::string_view version;
  std::string_view wasm;  // file stem in REEF_GUEST_DIR
};

// Blocks that extend one of these use its module unless they have their own row.
constexpr CommandModule kModules[] = {
    {"unique_username_01", "registerAccount", "register-account", "1.0.0",
     "dcb_register_account_v1"},
    {"unique_username_02", "registerAccount", "register-account", "2.0.0",
     "dcb_register_account_v2"},
    {"unique_username_03", "registerAccount", "register-account", "3.0.0",
     "dcb_register_account_v3"},
    {"unique_username_04", "registerAccount", "register-account", "4.0.0",
     "dcb_register_account_v4"},
    {"invoice_number_01", "createInvoice", "create-invoice", "1.0.0", "dcb_create_invoice"},
    {"course_subscription_01", "defineCourse", "define-course", "1.0.0", "dcb_define_course"},
    {"course_subscription_02", "changeCourseCapacity", "change-course-capacity", "1.0.0",
     "dcb_change_course_capacity"},
    {"course_subscription_03", "subscribeStudentToCourse", "subscribe-student-to-course", "1.0.0",
     "dcb_subscribe_student_to_course"},
};

// ---- The scenarios --------------------------------------------------------------------------

// One test case with what its block and the blocks it extends define.
struct DcbCase {
  std::string name;  // the test's name: block id + description in CamelCase
  std::string file;
  std::string block;
  std::string description;
  std::string load_error;  // set when the scenario could not be turned into a case
  std::map<std::string, std::vector<std::string>> tag_resolvers;  // event type -> templates
  std::vector<CommandModule> modules;  // every command the block has a handler for
  json given_events = json::array();
  json when_command;
  std::optional<json> expected_event;
  std::optional<std::string> expected_error;
};

void PrintTo(const DcbCase& c, std::ostream* os) {
  *os << c.file << " / " << c.block << " / " << c.description;
}

// What a block leaves to the blocks that extend it.
struct BlockScope {
  std::vector<std::string> chain;  // this block's id, then its ancestors'
  std::map<std::string, std::vector<std::string>> tag_resolvers;
  std::vector<std::string> commands;  // commandName of every commandHandlerDefinition
};

// "Register account with claimed username" -> "RegisterAccountWithClaimedUsername".
std::string CamelCase(const std::string& text) {
  std::string out;
  bool upper = true;
  for (char ch : text) {
    if (std::isalnum(static_cast<unsigned char>(ch)) == 0) {
      upper = true;
    } else {
      out += upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(ch))) : ch;
      upper = false;
    }
  }
  return out;
}

// The module row for `command` in the nearest block of `chain`, or nullopt.
std::optional<CommandModule> ModuleFor(const std::vector<std::string>& chain,
                                       const std::string& command) {
  for (const std::string& block : chain) {
    for (const CommandModule& m : kModules) {
      if (m.block == block && m.command == command) return m;
    }
  }
  return std::nullopt;
}

// The cases of one scenario file, or one case holding the error.
void LoadFile(const fs::path& path, std::vector<DcbCase>& cases) {
  std::ifstream in(path);
  json blocks = json::parse(in, nullptr, false);
  if (!blocks.is_array()) {
    cases.push_back({.name = "Unreadable_" + CamelCase(path.stem().string()),
                     .file = path.filename().string(),
                     .load_error = path.string() + " is not a JSON array"});
    return;
  }
  std::map<std::string, BlockScope> scopes;
  for (const json& block : blocks) {
    const std::string id = block.at("meta").at("id").get<std::string>();
    BlockScope scope;
    std::string error;
    if (block.at("meta").contains("extends")) {
      auto parent = scopes.find(block["meta"]["extends"].get<std::string>());
      if (parent == scopes.end()) {
        error = "extends unknown block " + block["meta"]["extends"].dump();
      } else {
        scope = parent->second;
      }
    }
    scope.chain.insert(scope.chain.begin(), id);
    for (const json& def : block.value("eventDefinitions", json::array())) {
      scope.tag_resolvers[def.at("name").get<std::string>()] =
          def.value("tagResolvers", std::vector<std::string>{});
    }
    for (const json& handler : block.value("commandHandlerDefinitions", json::array())) {
      const std::string command = handler.at("commandName").get<std::string>();
      if (std::ranges::find(scope.commands, command) == scope.commands.end()) {
        scope.commands.push_back(command);
      }
    }
    std::vector<CommandModule> modules;
    for (const std::string& command : scope.commands) {
      if (auto module = ModuleFor(scope.chain, command)) {
        modules.push_back(*module);
      } else {
        error = "no module in examples/dcb for command " + command + " of block " + id;
      }
    }
    scopes[id] = scope;
    for (const json& test : block.value("testCases", json::array())) {
      const std::string description = test.at("description").get<std::string>();
      DcbCase c{.name = id + "_" + CamelCase(description),
                .file = path.filename().string(),
                .block = id,
                .description = description,
                .load_error = error,
                .tag_resolvers = scope.tag_resolvers,
                .modules = modules,
                .when_command = test.at("whenCommand")};
      if (test.contains("givenEvents") && !test["givenEvents"].is_null()) {
        c.given_events = test["givenEvents"];
      }
      if (test.contains("thenExpectedEvent")) c.expected_event = test["thenExpectedEvent"];
      if (test.contains("thenExpectedError")) {
        c.expected_error = test["thenExpectedError"].get<std::string>();
      }
      if (c.expected_event.has_value() == c.expected_error.has_value()) {
        c.load_error = "needs exactly one of thenExpectedEvent and thenExpectedError";
      }
      cases.push_back(std::move(c));
    }
  }
}

std::vector<DcbCase> LoadCases() {
  std::vector<DcbCase> cases;
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(kFixturesDir, ec)) {
    if (entry.path().extension() == ".json") files.push_back(entry.path());
  }
  std::ranges::sort(files);
  for (const fs::path& file : files) {
    try {
      LoadFile(file, cases);
    } catch (const json::exception& e) {
      cases.push_back({.name = "Malformed_" + CamelCase(file.stem().string()),
                       .file = file.filename().string(),
                       .load_error = e.what()});
    }
  }
  if (cases.empty()) {
    cases.push_back(
        {.name = "NoScenarios", .load_error = std::string("no scenario files in ") + kFixturesDir});
  }
  std::map<std::string, int> seen;  // test names must be unique
  for (DcbCase& c : cases) {
    if (int n = seen[c.name]++; n > 0) c.name += "_" + std::to_string(n + 1);
  }
  return cases;
}

// A tag resolver or filter template over `scope`: each `{a.b}` is replaced by the value at
// that path (strings as they are, other values as JSON text).
std::string FillTemplate(const std::string& templ, const json& scope, std::string& error) {
  static const std::regex kPlaceholder(R"(\{([^}]*)\})");
  std::string out;
  auto last = templ.cbegin();
  for (std::sregex_iterator it(templ.begin(), templ.end(), kPlaceholder), end; it != end; ++it) {
    out.append(last, templ.cbegin() + it->position());
    const json* value = &scope;
    std::stringstream path((*it)[1].str());
    for (std::string key; std::getline(path, key, '.');) {
      if (!value->is_object() || !value->contains(key)) {
        error = "template " + templ + ": no " + (*it)[1].str();
        return "";
      }
      value = &(*value)[key];
    }
    out += value->is_string() ? value->get<std::string>() : value->dump();
    last = templ.cbegin() + it->position() + it->length();
  }
  out.append(last, templ.cend());
  return out;
}

// The tags the block's tagResolvers give an event of `type` with `data`.
std::vector<std::string> ResolveTags(const DcbCase& c, const std::string& type, const json& data,
                                     std::string& error) {
  std::vector<std::string> tags;
  auto resolvers = c.tag_resolvers.find(type);
  if (resolvers == c.tag_resolvers.end()) {
    error = "no eventDefinition for " + type;
    return tags;
  }
  for (const std::string& templ : resolvers->second) {
    tags.push_back(FillTemplate(templ, json{{"data", data}}, error));
  }
  return tags;
}

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// ---- HTTP -----------------------------------------------------------------------------------

HttpResult Post(uint16_t port, const std::string& target, const json& body) {
  return HttpCall(port, http::verb::post, target, body.dump());
}

// Every event in the store, oldest first.
json ReadAll(uint16_t port) {
  HttpResult read = Post(port, "/events/read", json::object());
  EXPECT_EQ(read.status, 200u) << read.text;
  return read.body.is_object() ? read.body.value("events", json::array()) : json::array();
}

std::vector<std::string> Strings(const json& list) {
  std::vector<std::string> out;
  if (!list.is_array()) return out;
  for (const json& item : list) out.push_back(item.is_string() ? item.get<std::string>() : "");
  return out;
}

// ---- The test -------------------------------------------------------------------------------

class DcbExamplesTest : public ::testing::TestWithParam<DcbCase> {};

TEST_P(DcbExamplesTest, CommandDecidesAsTheScenarioExpects) {
  const DcbCase& c = GetParam();
  ASSERT_TRUE(c.load_error.empty()) << c.file << " / " << c.block << ": " << c.load_error;
  SCOPED_TRACE(c.file + " / " + c.block + " / " + c.description);

  // Given: a fresh server (on the PostgreSQL store too: REEF_TEST_STORE=postgresql, with a
  // fresh database per case) with the block's command modules ...
  std::optional<PgTestDatabase> db;
  std::vector<std::string> args;
  if (const char* store = std::getenv("REEF_TEST_STORE");
      store && std::string(store) == "postgresql") {
    db.emplace();
    args = {"--store", db->uri()};
  }
  ReefServer server(kReefBinary, args);
  std::string started = server.Start();
  ASSERT_EQ(started, "");
  const uint16_t port = server.port();
  for (const CommandModule& module : c.modules) {
    fs::path wasm = fs::path(kGuestDir) / (std::string(module.wasm) + ".wasm");
    std::ifstream in(wasm, std::ios::binary);
    ASSERT_TRUE(in) << "missing " << wasm << " (build target guest_" << module.wasm << ")";
    std::string bytes((std::istreambuf_iterator<char>(in)), {});
    std::string target = "/commands/" + std::string(module.name) + "/versions/" +
                         std::string(module.version) + "?activate=true";
    HttpResult upload = HttpCall(port, http::verb::post, target, bytes, "",
                                 std::chrono::seconds(10), "application/wasm");
    ASSERT_EQ(upload.status, 201u) << "POST " << target << ": " << upload.text;
  }

  // ... and the given events, tagged by the block's tag resolvers.
  json events = json::array();
  const int64_t now_ms = NowMs();
  for (const json& given : c.given_events) {
    std::string error;
    const std::string type = given.at("type").get<std::string>();
    json event = {{"type", type},
                  {"tags", ResolveTags(c, type, given.at("data"), error)},
                  {"data", given.at("data")}};
    ASSERT_EQ(error, "") << given.dump();
    if (given.contains("metadata") && !given["metadata"].is_null()) {
      for (const auto& [key, value] : given["metadata"].items()) {
        ASSERT_EQ(key, "daysAgo") << "unsupported given event metadata: " << given.dump();
        event["metadata"] = {{"timestamp_ms", now_ms - value.get<int64_t>() * kMsPerDay}};
      }
    }
    events.push_back(std::move(event));
  }
  const uint64_t given_count = events.size();
  if (given_count > 0) {
    HttpResult append = Post(port, "/events/append", {{"events", events}});
    ASSERT_EQ(append.status, 200u) << append.text;
    ASSERT_EQ(append.body.value("position", uint64_t{0}), given_count) << append.text;
  }

  // When: the command runs.
  const std::string command = c.when_command.at("type").get<std::string>();
  auto module = std::ranges::find(c.modules, command, &CommandModule::command);
  ASSERT_NE(module, c.modules.end()) << "the block has no handler for " << command;
  const std::string execute = "/commands/" + std::string(module->name) + "/execute";
  HttpResult result = Post(port, execute, c.when_command.value("data", json::object()));

  // Then: the expected error and nothing appended ...
  if (c.expected_error) {
    EXPECT_EQ(result.status, 422u) << result.text;
    ASSERT_TRUE(result.body.is_object()) << result.text;
    const json rejection = result.body.value("error", json::object());
    EXPECT_EQ(rejection.value("code", ""), "command_rejected") << result.text;
    EXPECT_EQ(rejection.value("message", ""), *c.expected_error) << result.text;
    EXPECT_EQ(ReadAll(port).size(), given_count) << "a rejected command appended events";
    return;
  }

  // ... or exactly the expected event, with the tags its resolvers give.
  std::string error;
  const json& expected = *c.expected_event;
  const std::string expected_type = expected.at("type").get<std::string>();
  const std::vector<std::string> expected_tags =
      ResolveTags(c, expected_type, expected.at("data"), error);
  ASSERT_EQ(error, "");
  ASSERT_EQ(result.status, 200u) << result.text;
  ASSERT_TRUE(result.body.is_object()) << result.text;
  ASSERT_TRUE(result.body["events"].is_array()) << result.text;
  ASSERT_EQ(result.body["events"].size(), 1u) << result.text;
  const json& appended = result.body["events"][0];
  ASSERT_TRUE(appended.is_object()) << result.text;
  EXPECT_EQ(appended.value("type", ""), expected_type) << result.text;
  EXPECT_EQ(appended.value("data", json()).dump(), expected.at("data").dump()) << result.text;
  EXPECT_EQ(Strings(appended.value("tags", json())), expected_tags) << result.text;
  EXPECT_EQ(appended.value("position", uint64_t{0}), given_count + 1) << result.text;
  EXPECT_EQ(result.body.value("position", uint64_t{0}), given_count + 1) << result.text;

  // The store holds it, after the given events.
  json stored = ReadAll(port);
  ASSERT_EQ(stored.size(), given_count + 1) << stored.dump();
  const json& last = stored.back();
  ASSERT_TRUE(last.is_object()) << stored.dump();
  EXPECT_EQ(last.value("position", uint64_t{0}), given_count + 1);
  EXPECT_EQ(last.value("id", ""), appended.value("id", "")) << last.dump();
  EXPECT_EQ(last.value("type", ""), expected_type) << last.dump();
  EXPECT_EQ(last.value("data", json()).dump(), expected.at("data").dump()) << last.dump();
  EXPECT_EQ(Strings(last.value("tags", json())), expected_tags) << last.dump();
}

// The test's name: "<block id>_<description in CamelCase>".
std::string CaseName(const ::testing::TestParamInfo<DcbCase>& param) {
  return param.param.name;
}

INSTANTIATE_TEST_SUITE_P(Scenarios, DcbExamplesTest, ::testing::ValuesIn(LoadCases()), CaseName);

}  // namespace
}  // namespace reef::testing
