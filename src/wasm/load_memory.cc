#include "wasm/detail/load_memory.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "wabt/binary-reader-nop.h"
#include "wabt/binary-reader.h"

namespace reef::wasm {
namespace {

// Bytes allocated per declared item while a module loads (wabt 1.0.32's interpreter reader
// and validator, and Reef's Module metadata), measured as described in docs/engine.md and
// rounded up. Code is charged per byte at the costliest rate any instruction sequence reaches
// (blocks nested thousands deep, br_table targets), unless its instructions were counted.
struct ItemCost {
  std::string_view what;
  uint64_t count;
  uint64_t bytes_each;
};

std::array<ItemCost, 20> ItemCosts(const ModuleShape& s, uint64_t module_bytes) {
  return {{
      {"module bytes", module_bytes, 1},
      {"types", s.types, 300},
      {"params and results", s.type_arity, 32},
      {"imports", s.imports, 300},
      {"functions", s.functions, 350},
      {"tables", s.tables, 150},
      {"memories", s.memories, 150},
      {"globals", s.globals, 250},
      {"exports", s.exports, 450},
      {"element segments", s.elem_segments, 250},
      {"element entries", s.elem_entries, 16},
      {"data segments", s.data_segments, 250},
      {"data bytes", s.data_bytes, 1},
      {"local declarations", s.local_decls, 24},
      {"name bytes", s.name_bytes, 2},
      {"function names", s.function_names.size(), 64},
      {"code bytes", s.code_counted ? 0 : s.code_bytes, 64},
      {"instructions", s.instructions, 16},
      {"br_table targets", s.br_table_targets, 48},
      {"levels of block nesting", s.max_block_depth, 160},
  }};
}

// Counts instructions, br_table targets and block nesting by decoding with wabt's own reader
// (so it decodes exactly what the interpreter's reader will). It keeps nothing per item, and
// the reader itself allocates only for counts it checks against the bytes left.
class CodeCounter : public wabt::BinaryReaderNop {
 public:
  bool OnError(const wabt::Error& error) override {
    if (error.error_level == wabt::ErrorLevel::Error && first_error_.empty()) {
      first_error_ = error.message;
      error_offset_ = error.loc.offset;
    }
    return true;
  }
  wabt::Result BeginFunctionBody(wabt::Index, wabt::Offset) override {
    depth_ = 0;
    return wabt::Result::Ok;
  }
  wabt::Result OnOpcode(wabt::Opcode) override {
    ++instructions_;
    return wabt::Result::Ok;
  }
  wabt::Result OnBrTableExpr(wabt::Index targets, wabt::Index*, wabt::Index) override {
    br_table_targets_ += targets;
    return wabt::Result::Ok;
  }
  wabt::Result OnBlockExpr(wabt::Type) override { return Open(); }
  wabt::Result OnLoopExpr(wabt::Type) override { return Open(); }
  wabt::Result OnIfExpr(wabt::Type) override { return Open(); }
  wabt::Result OnEndExpr() override {
    if (depth_ > 0) --depth_;
    return wabt::Result::Ok;
  }

  uint64_t instructions_ = 0;
  uint64_t br_table_targets_ = 0;
  uint32_t max_depth_ = 0;
  std::string first_error_;
  size_t error_offset_ = 0;

 private:
  wabt::Result Open() {
    max_depth_ = std::max(max_depth_, ++depth_);
    return wabt::Result::Ok;
  }
  uint32_t depth_ = 0;
};

}  // namespace

uint64_t EstimateLoadBytes(const ModuleShape& shape, uint64_t module_bytes) {
  uint64_t total = 0;
  for (const ItemCost& cost : ItemCosts(shape, module_bytes)) total += cost.count * cost.bytes_each;
  return total;
}

namespace detail {

Status CountCode(std::span<const uint8_t> bytes, std::string_view name, ModuleShape* shape) {
  CodeCounter counter;
  // Counting only: the read that follows refuses unsupported proposals by name.
  wabt::Features features;
  features.EnableAll();
  wabt::ReadBinaryOptions options(features, nullptr, /*read_debug_names=*/false,
                                  /*stop_on_first_error=*/true,
                                  /*fail_on_custom_section_error=*/false);
  if (wabt::Failed(wabt::ReadBinary(bytes.data(), bytes.size(), &counter, options))) {
    return Status::InvalidArgument(
        fmt::format("{}:{:07x}: error: {}", name, counter.error_offset_, counter.first_error_));
  }
  shape->code_counted = true;
  shape->instructions = counter.instructions_;
  shape->br_table_targets = counter.br_table_targets_;
  shape->max_block_depth = counter.max_depth_;
  return Status::Ok();
}

std::string LargestCost(const ModuleShape& shape, uint64_t module_bytes) {
  ItemCost largest{"", 0, 0};
  for (const ItemCost& cost : ItemCosts(shape, module_bytes)) {
    if (cost.count * cost.bytes_each > largest.count * largest.bytes_each) largest = cost;
  }
  return fmt::format("{} {} (about {} bytes each)", largest.count, largest.what,
                     largest.bytes_each);
}

}  // namespace detail
}  // namespace reef::wasm
