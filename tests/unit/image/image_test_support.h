// Test support for the image tests: a real Server on 127.0.0.1:0 with the image's ops, and a
// synchronous reef.v1 client over tests/support's WsClient. Every blocking client step has a
// deadline (kTimeout), so a broken server fails a test instead of hanging it. Test-only; each
// object is used by one test thread.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <string>

#include "image/image.h"
#include "server/server.h"
#include "support/ws_test_client.h"

namespace reef::image::test_support {

namespace beast = boost::beast;
using json = nlohmann::json;

inline constexpr auto kTimeout = std::chrono::seconds(60);

// A synchronous reef.v1 client (a WsClient with a 60 s deadline per step). Events that arrive
// while waiting for a response are kept in `events` in arrival order.
class Client {
 public:
  explicit Client(uint16_t port)
      : ws_(port, "reef.v1", "", kTimeout), handshake_error(ws_.handshake_error) {}

  beast::error_code SendText(const std::string& text) { return ws_.Send(text); }

  // The next message (discarded JSON on a read error).
  json Receive() { return ws_.Receive(); }

  // The next response, keeping events seen before it.
  json NextResponse() {
    while (true) {
      json message = Receive();
      if (message.is_discarded() || !message.contains("event")) return message;
      events.push_back(std::move(message));
    }
  }

  // Sends op with args and returns the whole response.
  json Request(const std::string& op, json args = json::object()) {
    json id = next_id_++;
    EXPECT_FALSE(
        SendText(json{{"v", 1}, {"id", id}, {"op", op}, {"args", std::move(args)}}.dump()));
    json response = NextResponse();
    EXPECT_EQ(response.value("id", json()), id) << response.dump();
    return response;
  }

  // The result of a request that must succeed.
  json Ok(const std::string& op, json args = json::object()) {
    json response = Request(op, args);
    EXPECT_EQ(response.value("ok", false), true)
        << op << " " << args.dump() << " -> " << response.dump();
    return response.value("result", json());
  }

  // The error object of a request that must fail.
  json Error(const std::string& op, json args = json::object()) {
    json response = Request(op, args);
    EXPECT_EQ(response.value("ok", true), false)
        << op << " " << args.dump() << " -> " << response.dump();
    return response.value("error", json::object());
  }

  // The next event: a kept one, or the next message read (which must be an event).
  json NextEvent() {
    if (!events.empty()) {
      json event = std::move(events.front());
      events.pop_front();
      return event;
    }
    json message = Receive();
    EXPECT_TRUE(message.contains("event")) << message.dump();
    return message;
  }

 private:
  reef::testing::WsClient ws_;
  int64_t next_id_ = 1;

 public:
  beast::error_code handshake_error;
  std::deque<json> events;
};

// A fresh image in a temporary data directory, served on 127.0.0.1:0.
class ImageFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "reef-image-test-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    data_dir_ = pattern;
    StartImage();
  }

  void TearDown() override {
    StopImage();
    std::error_code ignored;
    std::filesystem::remove_all(data_dir_, ignored);
  }

  void StartImage() {
    ImageOptions options;
    options.data_dir = data_dir_;
    auto image = Image::Open(std::move(options));
    ASSERT_TRUE(image.ok()) << image.status().ToString();
    image_ = std::move(image).value();
    server::ServerOptions server_options;
    server_options.listen = "127.0.0.1:0";
    ConfigureServer(server_options);
    ASSERT_TRUE(image_->Attach(server_options).ok());
    auto server = server::Server::Start(std::move(server_options));
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(server).value();
  }

  // Lets a test change the server's options (its limits) before it starts.
  virtual void ConfigureServer(server::ServerOptions& options) { (void)options; }

  void StopImage() {
    server_.reset();  // before the image its ops refer to
    image_.reset();
  }

  std::unique_ptr<Client> Connect() {
    auto client = std::make_unique<Client>(server_->port());
    EXPECT_FALSE(client->handshake_error) << client->handshake_error.message();
    return client;
  }

  bool HaveClang() const { return !image_->cache().compiler().options().clang.empty(); }

  std::filesystem::path data_dir_;
  std::unique_ptr<Image> image_;
  std::unique_ptr<server::Server> server_;
};

// The text of a file of the source tree, found from this header's path (tests/unit/image/).
inline std::string SourceTreeFile(const std::string& relative) {
  // REEF_FIXTURES_DIR is <source>/tests/fixtures, absolute (unlike __FILE__ under ccache).
  std::filesystem::path root = std::filesystem::path(REEF_FIXTURES_DIR).parent_path().parent_path();
  std::ifstream in(root / relative, std::ios::binary);
  EXPECT_TRUE(in.good()) << (root / relative);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A .wat actor whose handler loops `spins` times, then commits the integer `state` (0..23,
// one CBOR byte). With spins > 0 one invocation spans several 32-instruction slices.
inline std::string ConstantActorWat(int state, int spins = 0) {
  return R"((module
  (memory (export "memory") 1)
  (func (export "reef_abi_version") (result i32) (i32.const 1))
  (func (export "reef_alloc") (param i32) (result i32) (i32.const 1024))
  (func (export "reef_handle") (param i32 i32 i32 i32 i32 i32) (result i64)
    (local $i i32)
    (block $done
      (loop $spin
        (br_if $done (i32.ge_u (local.get $i) (i32.const )" +
         std::to_string(spins) + R"()))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $spin)))
    (i32.store8 (i32.const 512) (i32.const )" +
         std::to_string(state) + R"())
    (i64.or (i64.const 512) (i64.shl (i64.const 1) (i64.const 32)))))
)";
}

// A .wat actor that logs "<text>" at level `level` (0..5) `repeat` times on every message and
// keeps its state.
inline std::string LoggingActorWat(const std::string& text, int level, int repeat = 1) {
  return R"((module
  (import "reef" "log" (func $log (param i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 256) ")" +
         text + R"(")
  (func (export "reef_abi_version") (result i32) (i32.const 1))
  (func (export "reef_alloc") (param i32) (result i32) (i32.const 1024))
  (func (export "reef_handle") (param $sp i32) (param $sl i32) (param i32 i32 i32 i32) (result i64)
    (local $i i32)
    (block $done
      (loop $again
        (br_if $done (i32.ge_u (local.get $i) (i32.const )" +
         std::to_string(repeat) + R"()))
        (drop (call $log (i32.const )" +
         std::to_string(level) + R"() (i32.const 256) (i32.const )" + std::to_string(text.size()) +
         R"()))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $again)))
    (i64.or (i64.extend_i32_u (local.get $sp))
            (i64.shl (i64.extend_i32_u (local.get $sl)) (i64.const 32)))))
)";
}

}  // namespace reef::image::test_support
