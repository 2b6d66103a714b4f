// The module runtime and its artifact cache (cache/<sha256>.wasm): a cache file is verified
// before it is parsed, and a bad one is rebuilt from the module store.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>

#include "../events/event_store_test_support.h"
#include "apps/module_runtime.h"
#include "core/ids.h"

namespace reef::apps {
namespace {

using events::testing::MakeEvent;
using events::testing::TempDir;
using store::ModuleKind;

std::vector<uint8_t> ReadBytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

class ModuleCacheTest : public ::testing::Test {
 protected:
  void Open() {
    auto opened = events::OpenEventStore(dir_.path() / "events");
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    events_ = std::move(*opened);
    RuntimeOptions options;
    options.data_dir = dir_.path();
    auto runtime = ModuleRuntime::Open(*events_, options);
    ASSERT_TRUE(runtime.ok()) << runtime.status().ToString();
    runtime_ = std::move(*runtime);
  }

  void Close() {
    runtime_.reset();
    events_.reset();
  }

  bool WaitForPosition(uint64_t position) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < deadline) {
      auto status = runtime_->StatusOf(ModuleKind::kProjector, "ticks");
      if (status && status->position == position) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

  void AppendTick(int n) {
    std::vector<events::Event> batch;
    batch.push_back(MakeEvent("Tick", {"tick"}, fmt::format("{{\"n\":{}}}", n)));
    ASSERT_TRUE(events_->Append(std::move(batch), std::nullopt).ok());
  }

  TempDir dir_;
  std::unique_ptr<events::EventStore> events_;
  std::unique_ptr<ModuleRuntime> runtime_;
};

TEST_F(ModuleCacheTest, AHostileCacheFileIsRebuiltFromTheStoreAndNeverParsed) {
  // Given an active projector, whose module is cached as cache/<sha256>.wasm,
  Open();
  const auto wasm = ReadBytes(std::string(REEF_GUEST_DIR) + "/test_projector_v1.wasm");
  ASSERT_FALSE(wasm.empty());
  auto uploaded = runtime_->Upload(ModuleKind::kProjector, "ticks", "1.0.0", wasm, true);
  ASSERT_TRUE(uploaded.ok()) << uploaded.status().ToString();
  AppendTick(0);
  ASSERT_TRUE(WaitForPosition(1));
  Close();
  const auto cached = dir_.path() / "cache" / (Sha256Hex(wasm) + ".wasm");
  ASSERT_EQ(ReadBytes(cached), wasm);

  // when the cache file is replaced by the module whose DataCount declares 2^32-1 segments
  // and the runtime starts again,
  std::ofstream(cached, std::ios::binary | std::ios::trunc)
      << std::string("\x00\x61\x73\x6d\x01\x00\x00\x00\x0c\x05\xff\xff\xff\xff\x0f", 15);
  Open();

  // then the projector runs the stored module, and the cache holds its bytes again.
  AppendTick(1);
  EXPECT_TRUE(WaitForPosition(2));
  EXPECT_EQ(ReadBytes(cached), wasm);
}

}  // namespace
}  // namespace reef::apps
