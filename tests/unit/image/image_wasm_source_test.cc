// Working sources of kind `wasm` (docs/protocol.md "write"): binaries built by another
// toolchain (AssemblyScript, Rust) travel as base64, are stored byte for byte, validated at
// spawn and run like any other implementation; the text fields of the other kinds are refused.
#include <gtest/gtest.h>

#include <string>

#include "core/base64.h"
#include "image_test_support.h"
#include "wasm/module.h"

namespace reef::image {
namespace {

using test_support::Client;
using test_support::ConstantActorWat;
using test_support::json;

class ImageWasmSourceTest : public test_support::ImageFixture {
 protected:
  // The binary of an actor whose every message sets the state to `state`.
  static std::string ConstantActorBinary(int state) {
    auto module = wasm::Module::FromText(ConstantActorWat(state));
    EXPECT_TRUE(module.ok()) << module.status().message();
    auto bytes = (*module)->bytes();
    return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  }
};

TEST_F(ImageWasmSourceTest, ABinaryIsStoredExactlyAndSpawnsAnActorThatRuns) {
  auto client = Connect();
  std::string binary = ConstantActorBinary(7);
  json written = client->Ok("write", {{"path", "actors/seven"},
                                      {"kind", "wasm"},
                                      {"base64", Base64Encode(binary)},
                                      {"expected", nullptr}});
  json read = client->Ok("read", {{"path", "actors/seven"}});
  EXPECT_EQ(read["kind"], "wasm");
  EXPECT_FALSE(read.contains("text")) << read.dump();
  auto decoded = Base64Decode(read.value("base64", ""));
  ASSERT_TRUE(decoded.ok()) << read.dump();
  EXPECT_EQ(*decoded, binary);
  EXPECT_EQ(read["source_id"], written["source_id"]);
  json sources = client->Ok("sources")["sources"];
  bool listed = false;
  for (const json& s : sources) listed |= s["path"] == "actors/seven" && s["kind"] == "wasm";
  EXPECT_TRUE(listed) << sources.dump();

  std::string actor =
      client->Ok("spawn", {{"path", "actors/seven"}, {"state", 0}}).value("actor", "");
  client->Ok("send", {{"actor", actor}, {"message", "go"}});
  json report = client->Ok("tick", {{"count", 10}, {"budget", 100000}});
  EXPECT_EQ(report["commits"], 1) << report.dump();
  EXPECT_EQ(client->Ok("inspect", {{"actor", actor}})["state"], 7);

  // A new binary is a new working source, and `become` switches the actor to it.
  client->Ok("write", {{"path", "actors/eight"},
                       {"kind", "wasm"},
                       {"base64", Base64Encode(ConstantActorBinary(8))},
                       {"expected", nullptr}});
  client->Ok("become", {{"actor", actor}, {"path", "actors/eight"}});
  client->Ok("send", {{"actor", actor}, {"message", "go"}});
  client->Ok("tick", {{"count", 10}, {"budget", 100000}});
  EXPECT_EQ(client->Ok("inspect", {{"actor", actor}})["state"], 8);
}

TEST_F(ImageWasmSourceTest, EachKindCarriesItsOwnFieldAndBadBinariesAreRefused) {
  auto client = Connect();
  auto write = [&](const std::string& path, json args) {
    args["path"] = path;
    args["expected"] = nullptr;
    return client->Error("write", std::move(args));
  };
  json e = write("actors/a", {{"kind", "wasm"}, {"text", "(module)"}});
  EXPECT_EQ(e["code"], "invalid_argument");
  EXPECT_NE(e["message"].get<std::string>().find("base64"), std::string::npos) << e.dump();
  e = write("actors/a", {{"kind", "wat"}, {"base64", "AAAA"}});
  EXPECT_EQ(e["code"], "invalid_argument");
  e = write("actors/a", {{"kind", "wasm"}, {"base64", "not base64!"}});
  EXPECT_EQ(e["code"], "invalid_argument");
  EXPECT_NE(e["message"].get<std::string>().find("base64"), std::string::npos) << e.dump();
  e = write("actors/a", {{"kind", "wasm"}});
  EXPECT_EQ(e["code"], "invalid_argument");
  EXPECT_EQ(client->Error("read", {{"path", "actors/a"}})["code"], "not_found");

  // Bytes that are no module are stored (as any invalid source is) but do not spawn.
  client->Ok("write", {{"path", "actors/junk"},
                       {"kind", "wasm"},
                       {"base64", Base64Encode("junk")},
                       {"expected", nullptr}});
  e = client->Error("spawn", {{"path", "actors/junk"}, {"state", 0}});
  EXPECT_EQ(e["code"], "invalid_argument");
  EXPECT_NE(e["message"].get<std::string>().find("actors/junk.wasm"), std::string::npos)
      << e.dump();
}

TEST_F(ImageWasmSourceTest, TheSameBinaryAtTwoPathsKeepsEachActorsPathAcrossARestart) {
  auto client = Connect();
  std::string seven = Base64Encode(ConstantActorBinary(7));
  for (const char* path : {"actors/seven", "actors/copy"}) {
    client->Ok("write",
               {{"path", path}, {"kind", "wasm"}, {"base64", seven}, {"expected", nullptr}});
  }
  std::string original = client->Ok("spawn", {{"path", "actors/seven"}, {"state", 0}})["actor"];
  std::string copy = client->Ok("spawn", {{"path", "actors/copy"}, {"state", 0}})["actor"];
  auto label = [](Client& c, const std::string& actor) {
    return c.Ok("inspect", {{"actor", actor}})["implementation"].value("label", "");
  };
  EXPECT_EQ(label(*client, original), "actors/seven");
  EXPECT_EQ(label(*client, copy), "actors/copy");
  client.reset();
  StopImage();
  StartImage();
  auto again = Connect();
  EXPECT_EQ(label(*again, original), "actors/seven");
  EXPECT_EQ(label(*again, copy), "actors/copy");
  // reload recompiles the actor's own path.
  json current = again->Ok("read", {{"path", "actors/copy"}});
  again->Ok("write", {{"path", "actors/copy"},
                      {"kind", "wasm"},
                      {"base64", Base64Encode(ConstantActorBinary(8))},
                      {"expected", current["source_id"]}});
  again->Ok("reload", {{"actor", copy}});
  again->Ok("send", {{"actor", copy}, {"message", "go"}});
  again->Ok("send", {{"actor", original}, {"message", "go"}});
  again->Ok("tick", {{"count", 10}, {"budget", 100000}});
  EXPECT_EQ(again->Ok("inspect", {{"actor", copy}})["state"], 8);
  EXPECT_EQ(again->Ok("inspect", {{"actor", original}})["state"], 7);
}

// A server that takes larger requests than the default still refuses a wasm source over the
// source limit, from the base64's length, before decoding it.
class ImageWasmSourceLargeRequestTest : public ImageWasmSourceTest {
 protected:
  void ConfigureServer(server::ServerOptions& options) override {
    options.limits.max_request_bytes = 4u << 20;
  }
};

TEST_F(ImageWasmSourceLargeRequestTest, ABinaryOverTheSourceLimitIsRefusedBeforeDecoding) {
  auto client = Connect();
  json e = client->Error("write", {{"path", "actors/big"},
                                   {"kind", "wasm"},
                                   {"base64", std::string(1500000, 'A')},
                                   {"expected", nullptr}});
  EXPECT_EQ(e["code"], "limit_exceeded") << e.dump();
  EXPECT_NE(e["message"].get<std::string>().find("a wasm source is at most 1048576 bytes"),
            std::string::npos)
      << e.dump();
  EXPECT_EQ(client->Error("read", {{"path", "actors/big"}})["code"], "not_found");
}

}  // namespace
}  // namespace reef::image
