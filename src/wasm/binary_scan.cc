#include "wasm/binary_scan.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <optional>

#include "core/utf8.h"
#include "wasm/detail/binary_cursor.h"
#include "wasm/detail/features.h"
#include "wasm/detail/load_memory.h"

namespace reef::wasm {
namespace {

class Scanner : private detail::BinaryCursor {
 public:
  Scanner(std::span<const uint8_t> bytes, std::string_view name, const ModuleLimits& limits)
      : BinaryCursor(bytes, name), limits_(limits) {}

  Result<ModuleShape> Run();

 private:
  // --- Sections: each reads [pos_, end_) of its section.
  Status TypeSection();
  Status ImportSection();
  Status FunctionSection();
  Status TableSection();
  Status MemorySection();
  Status GlobalSection();
  Status ExportSection();
  Status StartSection();
  Status ElemSection();
  Status CodeSection();
  Status DataSection();
  Status DataCountSection();
  Status CustomSection();
  // The function names of a "name" section; any malformation only drops them.
  void NameSection();
  Status FunctionNames(std::vector<std::pair<uint32_t, std::string>>* out);
  // Estimates the load's memory (counting the code's instructions when the flat rate per
  // code byte does not fit) and checks it against the bound.
  Status CheckLoadMemory();

  struct SectionKind {
    std::string_view name;
    Status (Scanner::*read)();
  };
  // Section ids 0 to 12 of the core spec (12, DataCount, is from bulk memory). The tag
  // section (13) is exception handling's, refused by name (detail/features.h); 14 and above
  // are malformed.
  static constexpr uint8_t kTagSectionId = 13;
  static constexpr std::array<SectionKind, 13> kSections = {{
      {"custom", &Scanner::CustomSection},
      {"type", &Scanner::TypeSection},
      {"import", &Scanner::ImportSection},
      {"function", &Scanner::FunctionSection},
      {"table", &Scanner::TableSection},
      {"memory", &Scanner::MemorySection},
      {"global", &Scanner::GlobalSection},
      {"export", &Scanner::ExportSection},
      {"start", &Scanner::StartSection},
      {"element", &Scanner::ElemSection},
      {"code", &Scanner::CodeSection},
      {"data", &Scanner::DataSection},
      {"data count", &Scanner::DataCountSection},
  }};

  const ModuleLimits& limits_;
  ModuleShape shape_;
  std::vector<uint32_t> type_params_;     // params of each type
  std::vector<uint32_t> function_types_;  // type index of each defined function
  std::optional<uint32_t> data_count_;
  size_t data_count_at_ = 0;
  bool saw_data_ = false;
};

// ---------------------------------------------------------------------------------------
// Sections

Result<ModuleShape> Scanner::Run() {
  static constexpr uint8_t kHeader[] = {0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00};
  if (bytes_.size() < 4 || !std::equal(kHeader, kHeader + 4, bytes_.begin())) {
    return Malformed(0, "magic header not detected (a wasm binary starts with \\0asm)");
  }
  if (bytes_.size() < 8 || !std::equal(kHeader + 4, kHeader + 8, bytes_.begin() + 4)) {
    return Malformed(4, "unknown binary version (Reef reads version 1)");
  }
  pos_ = 8;
  while (pos_ < bytes_.size()) {
    section_ = "module";
    end_ = bytes_.size();
    const size_t at = pos_;
    uint8_t id = 0;
    uint32_t size = 0;
    REEF_RETURN_IF_ERROR(Byte(&id));
    if (id == kTagSectionId) {
      return Status::InvalidArgument(detail::RefusedFeatureMessage(name_, "exception handling"));
    }
    if (id >= kSections.size()) return Malformed(at, fmt::format("malformed section id {}", id));
    section_ = kSections[id].name;
    REEF_RETURN_IF_ERROR(U32(&size));
    if (size > remaining()) {
      return Malformed(at, fmt::format("length out of bounds: the section declares {} bytes, {} "
                                       "remain in the module",
                                       size, remaining()));
    }
    end_ = pos_ + size;
    REEF_RETURN_IF_ERROR((this->*kSections[id].read)());
    if (pos_ != end_) {
      return Malformed(pos_,
                       fmt::format("section size mismatch: {} bytes left unread", end_ - pos_));
    }
  }
  if (data_count_ && !saw_data_ && *data_count_ != 0) {
    section_ = "data count";
    return Malformed(data_count_at_, "data count and data section have inconsistent lengths");
  }
  section_ = "module";
  REEF_RETURN_IF_ERROR(CheckLoadMemory());
  return std::move(shape_);
}

Status Scanner::CheckLoadMemory() {
  const uint64_t budget =
      uint64_t{limits_.load_memory_factor} * bytes_.size() + limits_.load_memory_allowance;
  shape_.load_bytes_estimate = EstimateLoadBytes(shape_, bytes_.size());
  if (shape_.load_bytes_estimate > budget && shape_.code_bytes > 0) {
    REEF_RETURN_IF_ERROR(detail::CountCode(bytes_, name_, &shape_));
    shape_.load_bytes_estimate = EstimateLoadBytes(shape_, bytes_.size());
  }
  if (shape_.load_bytes_estimate <= budget) return Status::Ok();
  return Status::LimitExceeded(fmt::format(
      "{}: error: loading this module would take about {} MiB of memory, most of it for its {}; "
      "limit load_memory_factor={} x {} bytes + load_memory_allowance={} bytes = {} MiB",
      name_, shape_.load_bytes_estimate >> 20, detail::LargestCost(shape_, bytes_.size()),
      limits_.load_memory_factor, bytes_.size(), limits_.load_memory_allowance, budget >> 20));
}

Status Scanner::StartSection() {
  uint32_t index = 0;
  return U32(&index);
}

// type ::= 0x60 vec(valtype) vec(valtype); a valtype is one byte.
Status Scanner::TypeSection() {
  const size_t at = pos_;
  uint32_t n = 0;
  REEF_RETURN_IF_ERROR(Count(&n, "types"));
  REEF_RETURN_IF_ERROR(
      Limit(at, uint64_t{shape_.types} + n, "types", limits_.max_types, "max_types"));
  shape_.types += n;
  type_params_.reserve(type_params_.size() + n);
  for (uint32_t i = 0; i < n; ++i) {
    const size_t type_at = pos_;
    uint8_t form = 0;
    REEF_RETURN_IF_ERROR(Byte(&form));
    if (form != 0x60) {
      return Malformed(type_at, fmt::format("type {} has form 0x{:02x}, not 0x60 (func)", i, form));
    }
    uint32_t arity[2] = {0, 0};
    for (uint32_t& count : arity) {
      const size_t count_at = pos_;
      REEF_RETURN_IF_ERROR(Count(&count, "value types"));
      REEF_RETURN_IF_ERROR(Limit(count_at, count, "params or results in one type",
                                 limits_.max_type_arity, "max_type_arity"));
      for (uint32_t k = 0; k < count; ++k) REEF_RETURN_IF_ERROR(ValType());
    }
    type_params_.push_back(arity[0]);
    shape_.type_arity += uint64_t{arity[0]} + arity[1];
  }
  return Status::Ok();
}

// import ::= name name (0x00 typeidx | 0x01 tabletype | 0x02 memtype | 0x03 globaltype)
Status Scanner::ImportSection() {
  const size_t at = pos_;
  uint32_t n = 0;
  REEF_RETURN_IF_ERROR(Count(&n, "imports"));
  REEF_RETURN_IF_ERROR(Limit(at, n, "imports", limits_.max_imports, "max_imports"));
  shape_.imports += n;
  for (uint32_t i = 0; i < n; ++i) {
    std::string_view module, field;
    REEF_RETURN_IF_ERROR(Name(&module));
    REEF_RETURN_IF_ERROR(Name(&field));
    shape_.name_bytes += module.size() + field.size();
    const size_t kind_at = pos_;
    uint8_t kind = 0, mut = 0;
    uint32_t index = 0;
    REEF_RETURN_IF_ERROR(Byte(&kind));
    switch (kind) {
      case 0x00:
        REEF_RETURN_IF_ERROR(U32(&index));
        ++shape_.functions;
        ++shape_.imported_functions;
        REEF_RETURN_IF_ERROR(Limit(kind_at, shape_.functions, "functions (imported and defined)",
                                   limits_.max_functions, "max_functions"));
        break;
      case 0x01:
        REEF_RETURN_IF_ERROR(ValType());
        REEF_RETURN_IF_ERROR(Limits());
        ++shape_.tables;
        REEF_RETURN_IF_ERROR(Limit(kind_at, shape_.tables, "tables (imported and defined)",
                                   limits_.max_tables, "max_tables"));
        break;
      case 0x02:
        REEF_RETURN_IF_ERROR(Limits());
        ++shape_.memories;
        break;
      case 0x03:
        REEF_RETURN_IF_ERROR(ValType());
        REEF_RETURN_IF_ERROR(Byte(&mut));
        ++shape_.globals;
        REEF_RETURN_IF_ERROR(Limit(kind_at, shape_.globals, "globals (imported and defined)",
                                   limits_.max_globals, "max_globals"));
        break;
      default:
        return Malformed(kind_at, fmt::format("import {} has kind 0x{:02x}; expected 0 to 3 "
                                              "(function, table, memory, global)",
                                              i, kind));
    }
  }
  return Status::Ok();
}

Status Scanner::FunctionSection() {
  const size_t at = pos_;
  uint32_t n = 0;
  REEF_RETURN_IF_ERROR(Count(&n, "functions"));
  REEF_RETURN_IF_ERROR(Limit(at, uint64_t{shape_.functions} + n, "functions (imported and defined)",
                             limits_.max_functions, "max_functions"));
  shape_.functions += n;
  function_types_.reserve(function_types_.size() + n);
  for (uint32_t i = 0; i < n; ++i) {
    uint32_t type = 0;
    REEF_RETURN_IF_ERROR(U32(&type));
    function_types_.push_back(type);
  }
  return Status::Ok();
}

Status Scanner::TableSection() {
  const size_t at = pos_;
  uint32_t n = 0;
  REEF_RETURN_IF_ERROR(Count(&n, "tables"));
  REEF_RETURN_IF_ERROR(Limit(at, uint64_t{shape_.tables} + n, "tables (imported and defined)",
                             limits_.max_tables, "max_tables"));
  shape_.tables += n;
  for (uint32_t i = 0; i < n; ++i) {
    REEF_RETURN_IF_ERROR(ValType());
    REEF_RETURN_IF_ERROR(Limits());
  }
  return Status::Ok();
}

Status Scanner::MemorySection() {
  uint32_t n = 0;
  REEF_RETURN_IF_ERROR(Count(&n, "memories"));
  shape_.memories += n;
  for (uint32_t i = 0; i < n; ++i) REEF_RETURN_IF_ERROR(Limits());
  return Status::Ok();
}

// global ::= valtype mut:u8 expr
Status Scanner::GlobalSection() {
  const size_t at = pos_;
  uint32_t n = 0;
  REEF_RETURN_IF_ERROR(Count(&n, "globals"));
  REEF_RETURN_IF_ERROR(Limit(at, uint64_t{shape_.globals} + n, "globals (imported and defined)",
                             limits_.max_globals, "max_globals"));
  shape_.globals += n;
  for (uint32_t i = 0; i < n; ++i) {
    uint8_t mut = 0;
    REEF_RETURN_IF_ERROR(ValType());
    REEF_RETURN_IF_ERROR(Byte(&mut));
    REEF_RETURN_IF_ERROR(ConstExpr());
  }
  return Status::Ok();
}

// export ::= name kind:u8 index
Status Scanner::ExportSection() {
  const size_t at = pos_;
  uint32_t n = 0;
  REEF_RETURN_IF_ERROR(Count(&n, "exports"));
  REEF_RETURN_IF_ERROR(
      Limit(at, uint64_t{shape_.exports} + n, "exports", limits_.max_exports, "max_exports"));
  shape_.exports += n;
  for (uint32_t i = 0; i < n; ++i) {
    std::string_view name;
    uint8_t kind = 0;
    uint32_t index = 0;
    REEF_RETURN_IF_ERROR(Name(&name));
    shape_.name_bytes += name.size();
    REEF_RETURN_IF_ERROR(Byte(&kind));
    REEF_RETURN_IF_ERROR(U32(&index));
  }
  return Status::Ok();
}

// elem ::= flags:u32 (0..7): bit 0 passive/declarative, bit 1 explicit table index (active)
// or element kind present, bit 2 expressions instead of function indices.
Status Scanner::ElemSection() {
  const size_t at = pos_;
  uint32_t n = 0;
  REEF_RETURN_IF_ERROR(Count(&n, "element segments"));
  REEF_RETURN_IF_ERROR(Limit(at, uint64_t{shape_.elem_segments} + n, "element segments",
                             limits_.max_elem_segments, "max_elem_segments"));
  shape_.elem_segments += n;
  for (uint32_t i = 0; i < n; ++i) {
    const size_t flags_at = pos_;
    uint32_t flags = 0, index = 0, entries = 0;
    REEF_RETURN_IF_ERROR(U32(&flags));
    if (flags > 7) {
      return Malformed(flags_at,
                       fmt::format("element segment {} has flags {}; expected 0 to 7", i, flags));
    }
    const bool active = !(flags & 1);
    if (active && (flags & 2)) REEF_RETURN_IF_ERROR(U32(&index));  // table index
    if (active) REEF_RETURN_IF_ERROR(ConstExpr());                 // offset
    if (flags & 3) REEF_RETURN_IF_ERROR(ValType());                // elemkind or reftype
    REEF_RETURN_IF_ERROR(Count(&entries, "elements"));
    shape_.elem_entries += entries;
    for (uint32_t k = 0; k < entries; ++k) {
      REEF_RETURN_IF_ERROR((flags & 4) ? ConstExpr() : U32(&index));
    }
  }
  return Status::Ok();
}

// code ::= size:u32 vec(locals) expr, locals ::= n:u32 valtype. Bodies are skipped.
Status Scanner::CodeSection() {
  uint32_t n = 0;
  REEF_RETURN_IF_ERROR(Count(&n, "function bodies"));
  const size_t section_end = end_;
  for (uint32_t i = 0; i < n; ++i) {
    const size_t at = pos_;
    uint32_t size = 0;
    REEF_RETURN_IF_ERROR(U32(&size));
    if (size > remaining()) {
      return Malformed(at, fmt::format("function body {} declares {} bytes but only {} remain", i,
                                       size, remaining()));
    }
    end_ = pos_ + size;
    uint32_t decls = 0;
    REEF_RETURN_IF_ERROR(Count(&decls, "local declarations"));
    uint64_t locals = 0;
    if (i < function_types_.size() && function_types_[i] < type_params_.size()) {
      locals = type_params_[function_types_[i]];
    }
    for (uint32_t k = 0; k < decls; ++k) {
      uint32_t count = 0;
      REEF_RETURN_IF_ERROR(U32(&count));
      REEF_RETURN_IF_ERROR(ValType());
      locals += count;
      if (locals > limits_.max_function_locals) {
        return Status::LimitExceeded(fmt::format(
            "{}:{:07x}: error: function {} declares {} params and locals; limit "
            "max_function_locals={}",
            name_, at, shape_.imported_functions + i, locals, limits_.max_function_locals));
      }
    }
    shape_.local_decls += decls;
    shape_.code_bytes += size;
    pos_ = end_;
    end_ = section_end;
  }
  return Status::Ok();
}

// data ::= flags:u32 (0: expr bytes, 1: bytes, 2: memidx expr bytes)
Status Scanner::DataSection() {
  const size_t at = pos_;
  uint32_t n = 0;
  REEF_RETURN_IF_ERROR(Count(&n, "data segments"));
  REEF_RETURN_IF_ERROR(
      Limit(at, n, "data segments", limits_.max_data_segments, "max_data_segments"));
  if (data_count_ && *data_count_ != n) {
    return Malformed(at, fmt::format("data count and data section have inconsistent lengths "
                                     "({} and {})",
                                     *data_count_, n));
  }
  saw_data_ = true;
  shape_.data_segments += n;
  for (uint32_t i = 0; i < n; ++i) {
    const size_t segment_at = pos_;
    uint32_t flags = 0, memory = 0, size = 0;
    REEF_RETURN_IF_ERROR(U32(&flags));
    if (flags > 2) {
      return Malformed(segment_at,
                       fmt::format("data segment {} has flags {}; expected 0 to 2", i, flags));
    }
    if (flags == 2) REEF_RETURN_IF_ERROR(U32(&memory));
    if (flags != 1) REEF_RETURN_IF_ERROR(ConstExpr());
    const size_t size_at = pos_;
    REEF_RETURN_IF_ERROR(U32(&size));
    if (size > remaining()) {
      return Malformed(size_at, fmt::format("data segment {} declares {} bytes but only {} remain",
                                            i, size, remaining()));
    }
    pos_ += size;
    shape_.data_bytes += size;
  }
  return Status::Ok();
}

// The count of the data section that must follow: each segment takes at least one byte of
// what remains of the module after this section.
Status Scanner::DataCountSection() {
  const size_t at = pos_;
  uint32_t count = 0;
  REEF_RETURN_IF_ERROR(U32(&count));
  const size_t after = bytes_.size() - end_;
  if (count > after) {
    return Malformed(
        at, fmt::format("declares {} data segments but only {} bytes follow it", count, after));
  }
  REEF_RETURN_IF_ERROR(
      Limit(at, count, "data segments", limits_.max_data_segments, "max_data_segments"));
  data_count_ = count;
  data_count_at_ = at;
  return Status::Ok();
}

// custom ::= name bytes: the name must fit the section and be UTF-8; the rest is not checked.
Status Scanner::CustomSection() {
  const size_t at = pos_;
  std::string_view name;
  REEF_RETURN_IF_ERROR(Name(&name));
  if (!IsValidUtf8(name)) return Malformed(at, "malformed UTF-8 encoding in the section name");
  if (name == "name") NameSection();
  pos_ = end_;
  return Status::Ok();
}

void Scanner::NameSection() {
  const size_t section_end = end_;
  std::vector<std::pair<uint32_t, std::string>> names;
  if (FunctionNames(&names).ok()) {
    for (const auto& entry : names) shape_.name_bytes += entry.second.size();
    shape_.function_names = std::move(names);
  }
  end_ = section_end;
}

// namesec ::= (id:u8 size:u32 contents)*; subsection 1 is vec(funcidx name), indices
// increasing. Only names of functions declared so far are kept (at most max_functions).
Status Scanner::FunctionNames(std::vector<std::pair<uint32_t, std::string>>* out) {
  const size_t section_end = end_;
  while (pos_ < section_end) {
    uint8_t id = 0;
    uint32_t size = 0;
    REEF_RETURN_IF_ERROR(Byte(&id));
    REEF_RETURN_IF_ERROR(U32(&size));
    if (size > remaining()) return Malformed(pos_, "name subsection past its section");
    const size_t subsection_end = pos_ + size;
    if (id == 1 && out->empty()) {
      end_ = subsection_end;
      uint32_t n = 0;
      REEF_RETURN_IF_ERROR(Count(&n, "function names"));
      for (uint32_t i = 0; i < n; ++i) {
        uint32_t index = 0;
        std::string_view name;
        REEF_RETURN_IF_ERROR(U32(&index));
        REEF_RETURN_IF_ERROR(Name(&name));
        if (!out->empty() && index <= out->back().first) {
          return Malformed(pos_, "function names out of order");
        }
        if (index < shape_.functions) out->emplace_back(index, std::string(name));
      }
      end_ = section_end;
    }
    pos_ = subsection_end;
  }
  return Status::Ok();
}

}  // namespace

Result<ModuleShape> ScanBinary(std::span<const uint8_t> bytes, std::string_view name,
                               const ModuleLimits& limits) {
  return Scanner(bytes, name, limits).Run();
}

}  // namespace reef::wasm
