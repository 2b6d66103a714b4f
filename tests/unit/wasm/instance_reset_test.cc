// Instance::Reset on both tiers: whatever mix of writes an invocation made (stores of every
// width, memory.fill, memory.copy, memory.init, memory.grow and host writes through
// GuestMemory), the memory afterwards equals a fresh instance's, byte for byte. The native
// tier restores only the chunks that were written (rt/wasm-rt.h), so these tests are what
// shows that no write path escapes its marks.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "unit/wasm/tier_param.h"
#include "wasm/engine.h"

namespace reef::wasm {
namespace {

// Two pages with data segments that straddle the native tier's 4 KiB chunks, one passive
// segment, and an export per kind of write.
constexpr const char* kWriter = R"((module
  (memory (export "memory") 2 8)
  (data (i32.const 16) "initial bytes at the start")
  (data (i32.const 4090) "\01\02\03\04\05\06\07\08\09\0a\0b\0c")
  (data (i32.const 70000) "second page")
  (data $passive "passive segment bytes")
  (func (export "store8") (param i32 i64) (i64.store8 (local.get 0) (local.get 1)))
  (func (export "store16") (param i32 i64) (i64.store16 (local.get 0) (local.get 1)))
  (func (export "store32") (param i32 i64) (i64.store32 (local.get 0) (local.get 1)))
  (func (export "store64") (param i32 i64) (i64.store (local.get 0) (local.get 1)))
  (func (export "fill") (param i32 i32 i32)
    (memory.fill (local.get 0) (local.get 1) (local.get 2)))
  (func (export "copy") (param i32 i32 i32)
    (memory.copy (local.get 0) (local.get 1) (local.get 2)))
  (func (export "init") (param i32 i32 i32)
    (memory.init $passive (local.get 0) (local.get 1) (local.get 2)))
  (func (export "grow") (param i32) (result i32) (memory.grow (local.get 0)))))";

class InstanceResetTest : public ::testing::TestWithParam<Tier> {
 protected:
  void SetUp() override {
    engine_ = std::make_unique<Engine>(registry_, EngineLimits{}, GetParam());
  }

  std::unique_ptr<Instance> NewInstance() {
    auto module = Module::FromText(kWriter, "writer.wat");
    EXPECT_TRUE(module.ok()) << module.status().ToString();
    auto instance = engine_->Instantiate(*module);
    EXPECT_TRUE(instance.ok()) << instance.status().ToString();
    return instance.ok() ? std::move(*instance) : nullptr;
  }

  static std::vector<uint8_t> Bytes(Instance& instance) {
    auto bytes = instance.memory().Read(0, static_cast<uint32_t>(instance.memory().size()));
    EXPECT_TRUE(bytes.ok()) << bytes.status().ToString();
    return bytes.ok() ? *bytes : std::vector<uint8_t>{};
  }

  // The instance's memory equals `fresh` over fresh's size and is zero past it (grown pages).
  static void ExpectLike(Instance& instance, const std::vector<uint8_t>& fresh, int round) {
    std::vector<uint8_t> now = Bytes(instance);
    ASSERT_GE(now.size(), fresh.size());
    for (size_t i = 0; i < now.size(); ++i) {
      const uint8_t want = i < fresh.size() ? fresh[i] : 0;
      ASSERT_EQ(now[i], want) << "byte " << i << " after reset " << round;
    }
  }

  HostRegistry registry_{"test", 1};
  std::unique_ptr<Engine> engine_;
};

TEST_P(InstanceResetTest, StoresThatCrossAChunkBoundaryAreUndone) {
  std::unique_ptr<Instance> instance = NewInstance();
  const std::vector<uint8_t> fresh = Bytes(*instance);
  // 4093..4100 crosses the first 4 KiB boundary, inside a data segment; 8191..8198 crosses
  // the second one in zeroed memory.
  for (int32_t at : {4093, 8191, 65'532}) {
    ASSERT_TRUE(instance->Call("store64", std::vector<WasmValue>{at, int64_t{-1}}).ok());
  }
  ASSERT_TRUE(instance->Reset().ok());
  ExpectLike(*instance, fresh, 1);
}

TEST_P(InstanceResetTest, AnyMixOfWritesResetsToWhatAFreshInstanceHolds) {
  std::unique_ptr<Instance> instance = NewInstance();
  const std::vector<uint8_t> fresh = Bytes(*instance);
  std::mt19937 random(20261203);
  auto below = [&](uint32_t n) { return static_cast<int32_t>(random() % n); };
  for (int round = 1; round <= 40; ++round) {
    const uint32_t size = static_cast<uint32_t>(instance->memory().size());
    for (int op = 0; op < 12; ++op) {
      const int32_t at = below(size - 8);
      const int64_t value = static_cast<int64_t>(random()) * 977 + 1;
      const int32_t n = below(6'000);
      const int32_t count = std::min<int32_t>(n, static_cast<int32_t>(size) - at);
      Result<std::vector<WasmValue>> done = std::vector<WasmValue>{};
      switch (below(9)) {
        case 0:
          done = instance->Call("store8", std::vector<WasmValue>{at, value});
          break;
        case 1:
          done = instance->Call("store16", std::vector<WasmValue>{at, value});
          break;
        case 2:
          done = instance->Call("store32", std::vector<WasmValue>{at, value});
          break;
        case 3:
          done = instance->Call("store64", std::vector<WasmValue>{at, value});
          break;
        case 4:
          done = instance->Call("fill", std::vector<WasmValue>{at, int32_t{0xab}, count});
          break;
        case 5:
          done = instance->Call("copy", std::vector<WasmValue>{at, below(size - count), count});
          break;
        case 6:
          done =
              instance->Call("init", std::vector<WasmValue>{at, int32_t{0}, std::min(count, 21)});
          break;
        case 7:
          if (size < 4 * 65'536) done = instance->Call("grow", std::vector<WasmValue>{int32_t{1}});
          break;
        default: {
          const std::vector<uint8_t> bytes(static_cast<size_t>(count), 0x5c);
          ASSERT_TRUE(instance->memory().Write(static_cast<uint32_t>(at), bytes).ok());
        }
      }
      ASSERT_TRUE(done.ok()) << done.status().ToString();
    }
    ASSERT_TRUE(instance->Reset().ok());
    ExpectLike(*instance, fresh, round);
  }
}

REEF_INSTANTIATE_FOR_EVERY_TIER(InstanceResetTest);

}  // namespace
}  // namespace reef::wasm
