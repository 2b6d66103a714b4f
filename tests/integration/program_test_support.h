// Support of the integration tests of programs and units (issue 7, spec 003), shared by
// program_test.cc and program_lifecycle_test.cc: the real `reef serve` on loopback, one fresh
// server per test, driven over HTTP (docs/http-api.md "Programs").
//
// The program is the example of examples/program, built into REEF_PROGRAM_V1_DIR and
// REEF_PROGRAM_V2_DIR (program.json + counter.wasm + worker.wasm each):
//   counter  singleton, handler counter_handle, state an integer from 0:
//            {"op":"add"} -> {"count": n + 1}; {"op":"get"} -> {"count": n}; {"op":"fail"} fails
//   worker   replicated: {"op":"spin"} loops until killed, {"op":"fail"} fails, anything else
//            -> {"version": 1 | 2, "echo": <the message>, "served": <this instance's count>}
// v2 differs from v1 in the worker module only. Tests deploy it through POST /programs with a
// body they build (manifest + base64 modules), some with unit fields overridden.
//
// Holds the reply readers, the request helpers and the ProgramTest fixture (a fresh server per
// test); everything is inline in reef::testing so that both test files can include it.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <iostream>
#include <iterator>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "support/http_test_client.h"
#include "support/program_body.h"
#include "support/reef_server.h"

namespace reef::testing {

namespace fs = std::filesystem;
namespace http = boost::beast::http;
using Clock = std::chrono::steady_clock;
using nlohmann::json;
using std::chrono::milliseconds;

inline constexpr char kReefBinary[] = REEF_BINARY;
inline constexpr char kProgramV1Dir[] = REEF_PROGRAM_V1_DIR;
inline constexpr char kProgramV2Dir[] = REEF_PROGRAM_V2_DIR;

// ---- Reading replies ------------------------------------------------------------------------

// `j[key]` when `j` is an object holding `key`, else null (never throws).
inline json Sub(const json& j, const std::string& key) {
  return j.is_object() && j.contains(key) ? j[key] : json(nullptr);
}

// `j[key]` as a T when `j` is an object holding `key` of that type, else `fallback`.
template <typename T>
T Get(const json& j, const std::string& key, T fallback) {
  try {
    return j.is_object() && j.contains(key) ? j[key].get<T>() : fallback;
  } catch (const json::exception&) {
    return fallback;
  }
}
inline std::string Get(const json& j, const std::string& key, const char* fallback) {
  return Get<std::string>(j, key, fallback);
}

// The "result" of a `wait` reply, or null.
inline json ResultOf(const HttpResult& r) {
  return Sub(r.body, "result");
}

// ---- Requests ---------------------------------------------------------------------------------

inline HttpResult Post(uint16_t port, const std::string& target, const json& body) {
  return HttpCall(port, http::verb::post, target, body.dump());
}

// POST /units/{unit}/invoke?{query} with `message`; `query` e.g. "mode=try&instance=2".
// `wait`: how long the client waits for the reply (the server's timeout_ms is in `query`).
inline HttpResult Invoke(uint16_t port, const std::string& unit, const json& message,
                         const std::string& query = "", milliseconds wait = milliseconds(15000)) {
  return HttpCall(port, http::verb::post,
                  "/units/" + unit + "/invoke" + (query.empty() ? "" : "?" + query), message.dump(),
                  "", wait);
}

inline std::string ErrorCode(const HttpResult& r) {
  return Get(Sub(r.body, "error"), "code", "");
}

inline std::string ErrorMessage(const HttpResult& r) {
  return Get(Sub(r.body, "error"), "message", "");
}

// Polls `done` every 20 ms until it holds or `timeout` passes; returns its last answer.
inline bool Eventually(const std::function<bool()>& done, milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    if (done()) return true;
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(milliseconds(20));
  }
}

// ---- Fixture ----------------------------------------------------------------------------------

// A fresh `reef serve` per test; Deploy() puts a version of the example program on it.
class ProgramTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string started = server_.Start();
    ASSERT_EQ(started, "");
    port_ = server_.port();
  }

  void TearDown() override {
    // A spinning instance would hold up the server's shutdown: kill what still runs.
    if (port_ != 0) StopSpinning("worker");
    if (HasFailure()) std::cerr << "---- reef serve log ----\n" << server_.Log();
  }

  // Deploys `dir` with `overrides`; returns the 200 body (units added/changed/...), or null.
  json Deploy(const char* dir, const json& overrides = json::object()) {
    std::string error;
    json body = ProgramBody(dir, overrides, error);
    EXPECT_EQ(error, "");
    if (!error.empty()) return nullptr;
    HttpResult r =
        HttpCall(port_, http::verb::post, "/programs", body.dump(), "", std::chrono::seconds(30));
    EXPECT_EQ(r.status, 200u) << "POST /programs: " << r.text;
    return r.status == 200 ? r.body : json(nullptr);
  }

  // GET /units/{unit}/instances -> its "instances" array (empty on error).
  json Instances(const std::string& unit) {
    HttpResult r = HttpGet(port_, "/units/" + unit + "/instances");
    EXPECT_EQ(r.status, 200u) << r.text;
    if (!r.body.is_object() || !r.body["instances"].is_array()) return json::array();
    return r.body["instances"];
  }

  // Invokes the worker 5 times from each of 4 clients at once, so instances spread (each must
  // answer 200).
  void InvokeWorkersFromFourClients() {
    std::vector<std::thread> clients;
    for (int c = 0; c < 4; ++c) {
      clients.emplace_back([&, c] {
        for (int i = 0; i < 5; ++i) EXPECT_EQ(Invoke(port_, "worker", {{"c", c}}).status, 200u);
      });
    }
    for (std::thread& t : clients) t.join();
  }

  // The instance numbered `n` of `unit`, or null.
  json InstanceNumbered(const std::string& unit, int64_t n) {
    for (const json& i : Instances(unit)) {
      if (Get(i, "instance", int64_t{-1}) == n) return i;
    }
    return nullptr;
  }

  // The row of `unit` in GET /units, or null.
  json UnitRow(const std::string& unit) {
    HttpResult r = HttpGet(port_, "/units");
    EXPECT_EQ(r.status, 200u) << r.text;
    if (!r.body.is_object() || !r.body["units"].is_array()) return nullptr;
    for (const json& row : r.body["units"]) {
      if (Get(row, "unit", "") == unit) return row;
    }
    return nullptr;
  }

  json Reactors() {
    HttpResult r = HttpGet(port_, "/reactors");
    EXPECT_EQ(r.status, 200u) << r.text;
    if (!r.body.is_object() || !r.body["reactors"].is_array()) return json::array();
    return r.body["reactors"];
  }

  HttpResult Kill(const std::string& unit, int64_t instance) {
    return Post(port_, "/units/" + unit + "/instances/" + std::to_string(instance) + "/kill",
                json::object());
  }

  // The counter's count from {"op":"get"}, or -1.
  int64_t CounterCount() {
    HttpResult r = Invoke(port_, "counter", {{"op", "get"}});
    EXPECT_EQ(r.status, 200u) << r.text;
    return Get(ResultOf(r), "count", int64_t{-1});
  }

  // Kills `unit`'s running instances until none runs (each kill drops one spinning
  // invocation; queued spins start after it), at most 32 rounds.
  void StopSpinning(const std::string& unit) {
    for (int round = 0; round < 32; ++round) {
      HttpResult r = HttpGet(port_, "/units/" + unit + "/instances");
      if (r.status != 200 || !r.body.is_object() || !r.body["instances"].is_array()) return;
      bool running = false;
      for (const json& i : r.body["instances"]) {
        if (Get(i, "status", "") != "running") continue;
        running = true;
        Kill(unit, Get(i, "instance", int64_t{0}));
      }
      if (!running) return;
      std::this_thread::sleep_for(milliseconds(20));
    }
  }

  ReefServer server_{kReefBinary};
  uint16_t port_ = 0;
};

}  // namespace reef::testing
