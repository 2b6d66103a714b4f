#include "wasm/module.h"

#include <fmt/format.h>
#include <malloc.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <iterator>
#include <new>

#include "core/ids.h"
#include "wabt/binary-reader.h"
#include "wabt/binary-writer.h"
#include "wabt/cast.h"
#include "wabt/error-formatter.h"
#include "wabt/interp/binary-reader-interp.h"
#include "wabt/interp/interp.h"
#include "wabt/ir.h"
#include "wabt/resolve-names.h"
#include "wabt/stream.h"
#include "wabt/validator.h"
#include "wabt/wast-lexer.h"
#include "wabt/wast-parser.h"
#include "wasm/binary_scan.h"
#include "wasm/detail/features.h"
#include "wasm/detail/wabt_types.h"
#include "wasm/text_scan.h"

namespace reef::wasm {
namespace {

namespace interp = wabt::interp;

// Loads estimated to allocate at least this many bytes end with malloc_trim.
constexpr uint64_t kTrimAfterLoadBytes = 8ull << 20;
// Texts at least this long parse into several MiB of IR: freeing it ends with malloc_trim.
constexpr uint64_t kTrimAfterTextBytes = 64u << 10;

FuncSignature FromInterpSignature(const interp::FuncType& type) {
  FuncSignature out;
  for (wabt::Type t : type.params) out.params.push_back(detail::FromWabtType(t));
  for (wabt::Type t : type.results) out.results.push_back(detail::FromWabtType(t));
  return out;
}

ExternKind FromWabtKind(wabt::ExternalKind kind) {
  switch (kind) {
    case wabt::ExternalKind::Func:
      return ExternKind::kFunc;
    case wabt::ExternalKind::Table:
      return ExternKind::kTable;
    case wabt::ExternalKind::Memory:
      return ExternKind::kMemory;
    case wabt::ExternalKind::Global:
      return ExternKind::kGlobal;
    case wabt::ExternalKind::Tag:
      return ExternKind::kTag;
  }
  return ExternKind::kFunc;
}

DeclaredLimits FromWabtLimits(const wabt::Limits& limits, bool imported) {
  DeclaredLimits out;
  out.initial = limits.initial;
  if (limits.has_max) out.max = limits.max;
  out.imported = imported;
  return out;
}

// wabt's formatter ends every error with a newline; a Status message does not.
// wabt's errors quote the offending token and echo its source line, both of any length (a
// 5 MB number literal): each line of the message is cut to this many bytes, and the message
// to this many lines.
constexpr size_t kMaxErrorLineBytes = 300;
constexpr size_t kMaxErrorLines = 40;

std::string FormatErrors(const wabt::Errors& errors, wabt::Location::Type type,
                         wabt::LexerSourceLineFinder* finder = nullptr) {
  std::string text = wabt::FormatErrorsToString(errors, type, finder);
  std::string out;
  size_t lines = 0;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = std::min(text.find('\n', start), text.size());
    std::string_view line(text.data() + start, end - start);
    if (++lines > kMaxErrorLines) {
      out += fmt::format("... ({} more bytes of errors)\n", text.size() - start);
      break;
    }
    if (line.size() > kMaxErrorLineBytes) {
      size_t cut = kMaxErrorLineBytes;
      while (cut > 0 && (static_cast<unsigned char>(line[cut]) & 0xC0) == 0x80) --cut;
      out += fmt::format("{}... ({} more bytes)\n", line.substr(0, cut), line.size() - cut);
    } else {
      out += line;
      out += '\n';
    }
    start = end + 1;
  }
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out.empty() ? "invalid module" : out;
}

// One line "<name>:<offset>: error: <reason>" for a binary the reader refused. The reader
// stops at its first fatal error; a failed callback adds "<Callback> callback failed" after
// the reason, and errors inside custom sections (warnings, ignored) come before it.
// Some checks fail without a reason (wabt 1.0.32's ref.is_null on a non-reference): then the
// callback's name is all there is to say.
std::string FormatBinaryError(const wabt::Errors& errors, std::string_view name) {
  constexpr std::string_view kCallbackFailed = " callback failed";
  for (auto it = errors.rbegin(); it != errors.rend(); ++it) {
    if (it->error_level != wabt::ErrorLevel::Error) continue;  // inside a custom section
    if (std::string_view(it->message).ends_with(kCallbackFailed)) continue;
    return fmt::format("{}:{:07x}: error: {}", name, it->loc.offset, it->message);
  }
  if (errors.empty()) return fmt::format("{}: error: invalid module", name);
  std::string_view check = errors.back().message;
  check.remove_suffix(kCallbackFailed.size());
  return fmt::format("{}:{:07x}: error: invalid module (the reader's {} check failed)", name,
                     errors.back().loc.offset, check);
}

Status CheckSize(uint64_t size, const ModuleLimits& limits) {
  if (size > limits.max_module_bytes) {
    return Status::LimitExceeded(fmt::format("module is {} bytes; limit max_module_bytes={}", size,
                                             limits.max_module_bytes));
  }
  return Status::Ok();
}

}  // namespace

Result<std::shared_ptr<const Module>> Module::FromBinary(std::span<const uint8_t> bytes,
                                                         std::string_view name,
                                                         const ModuleLimits& limits) {
  REEF_RETURN_IF_ERROR(CheckSize(bytes.size(), limits));
  return Build(std::vector<uint8_t>(bytes.begin(), bytes.end()), name, limits);
}

Result<std::shared_ptr<const Module>> Module::FromText(std::string_view wat, std::string_view name,
                                                       const ModuleLimits& limits) {
  REEF_RETURN_IF_ERROR(CheckSize(wat.size(), limits));
  REEF_RETURN_IF_ERROR(ScanText(wat, name, limits).status());
  // wabt 1.0.32's text parser throws on some malformed tokens (std::length_error from
  // Token::to_string, found by fuzz/wat_fuzz.cc); no exception leaves this layer.
  try {
    return ParseText(wat, name, limits);
  } catch (const std::exception& e) {
    return Status::InvalidArgument(
        fmt::format("{}: malformed module text (the parser gave up: {})", name, e.what()));
  }
}

Result<std::shared_ptr<const Module>> Module::ParseText(std::string_view wat, std::string_view name,
                                                        const ModuleLimits& limits) {
  wabt::Errors errors;
  // Every proposal wabt knows: the binary read that follows refuses the ones Reef does not
  // support with the proposal's name, the same message a binary module gets.
  wabt::Features features;
  features.EnableAll();
  std::unique_ptr<wabt::WastLexer> lexer =
      wabt::WastLexer::CreateBufferLexer(name, wat.data(), wat.size(), &errors);
  wabt::WastParseOptions parse_options(features);
  std::unique_ptr<wabt::Module> ir;
  wabt::Result result = wabt::ParseWatModule(lexer.get(), &ir, &errors, &parse_options);
  if (wabt::Succeeded(result)) result = wabt::ResolveNamesModule(ir.get(), &errors);
  if (wabt::Succeeded(result)) {
    result = wabt::ValidateModule(ir.get(), &errors, wabt::ValidateOptions(features));
  }
  if (wabt::Failed(result)) {
    auto finder = lexer->MakeLineFinder();
    return Status::InvalidArgument(FormatErrors(errors, wabt::Location::Type::Text, finder.get()));
  }
  wabt::MemoryStream stream;
  wabt::WriteBinaryOptions write_options;
  write_options.features = features;
  write_options.write_debug_names = true;
  if (wabt::Failed(wabt::WriteBinaryModule(&stream, ir.get(), write_options))) {
    return Status::Internal(fmt::format("{}: could not encode the module to binary", name));
  }
  // The IR and the lexer's tokens go before the binary is loaded, so the two peaks do not
  // add up, and their many small blocks go back to the system.
  std::vector<uint8_t> binary = std::move(stream.output_buffer().data);
  ir.reset();
  lexer.reset();
  if (wat.size() >= kTrimAfterTextBytes) ::malloc_trim(0);
  auto module = Build(std::move(binary), name, limits);
  if (module.ok()) return module;
  // What the binary pre-pass still refuses after the text scan (a type's arity, a function's
  // locals) is located in the binary wabt encoded, not in the text the user wrote.
  std::string message = module.status().message();
  std::string prefix = fmt::format("{}:", name);
  if (message.starts_with(prefix) && message.size() > prefix.size() + 7 &&
      message.compare(prefix.size() + 7, 2, ": ") == 0) {
    std::string offset = message.substr(prefix.size(), 7);
    message = fmt::format("{}: {} (at byte 0x{} of the binary encoding of the text)", name,
                          message.substr(prefix.size() + 9), offset);
  }
  return Status(module.status().code(), message);
}

Result<std::shared_ptr<const Module>> Module::FromFile(const std::filesystem::path& path,
                                                       const ModuleLimits& limits) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return Status::InvalidArgument(
        fmt::format("{}: is a directory, not a module file (.wasm or .wat)", path.string()));
  }
  uint64_t size = std::filesystem::file_size(path, ec);
  if (ec) return Status::NotFound(fmt::format("{}: {}", path.string(), ec.message()));
  REEF_RETURN_IF_ERROR(CheckSize(size, limits));
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound(fmt::format("{}: cannot open", path.string()));
  std::vector<uint8_t> data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (path.extension() == ".wat") {
    return FromText(std::string_view(reinterpret_cast<const char*>(data.data()), data.size()),
                    path.string(), limits);
  }
  return Build(std::move(data), path.string(), limits);
}

Result<std::shared_ptr<const Module>> Module::Build(std::vector<uint8_t> bytes,
                                                    std::string_view name,
                                                    const ModuleLimits& limits) {
  REEF_ASSIGN_OR_RETURN(ModuleShape shape, ScanBinary(bytes, name, limits));
  auto read = [&]() -> Result<std::shared_ptr<const Module>> {
    try {
      return Read(std::move(bytes), name, std::move(shape.function_names));
    } catch (const std::bad_alloc&) {
      return Status::LimitExceeded(
          fmt::format("{}: error: out of memory while loading the module ({} bytes estimated)",
                      name, shape.load_bytes_estimate));
    }
  };
  auto module = read();
  // A large load frees many small blocks the allocator would otherwise keep: give the pages
  // back so the process returns to its size before the load.
  if (shape.load_bytes_estimate >= kTrimAfterLoadBytes) ::malloc_trim(0);
  return module;
}

Result<std::shared_ptr<const Module>> Module::Read(
    std::vector<uint8_t> bytes, std::string_view name,
    std::vector<std::pair<uint32_t, std::string>> function_names) {
  // The interpreter's reader validates while it reads (wabt's spec-test interpreter uses it
  // alone). Custom sections: the scan checked their framing and names, which is all the spec
  // checks; wabt's errors inside the contents of the ones it knows (linking, reloc.*, ...)
  // are ignored, and it does not read the name section (the scan took the function names).
  wabt::Errors errors;
  const wabt::Features features = detail::SupportedFeatures();
  wabt::ReadBinaryOptions options(features, /*log_stream=*/nullptr, /*read_debug_names=*/false,
                                  /*stop_on_first_error=*/true,
                                  /*fail_on_custom_section_error=*/false);
  interp::ModuleDesc desc;
  if (wabt::Failed(
          interp::ReadBinaryInterp(name, bytes.data(), bytes.size(), options, &errors, &desc))) {
    // A proposal Reef refuses gets its name, not wabt's "unexpected opcode".
    if (std::optional<std::string> feature = detail::RefusedFeature(bytes)) {
      return Status::InvalidArgument(detail::RefusedFeatureMessage(name, *feature));
    }
    return Status::InvalidArgument(FormatBinaryError(errors, name));
  }

  auto module = std::shared_ptr<Module>(new Module());
  std::vector<FuncSignature> imported_signatures;
  for (const interp::ImportDesc& import : desc.imports) {
    const interp::ExternType& type = *import.type.type;
    ImportInfo info{import.type.module, import.type.name, FromWabtKind(type.kind), {}};
    if (const auto* func = wabt::dyn_cast<interp::FuncType>(&type)) {
      info.signature = FromInterpSignature(*func);
      imported_signatures.push_back(info.signature);
    } else if (const auto* memory = wabt::dyn_cast<interp::MemoryType>(&type)) {
      module->memories_.push_back(FromWabtLimits(memory->limits, /*imported=*/true));
    } else if (const auto* table = wabt::dyn_cast<interp::TableType>(&type)) {
      module->tables_.push_back(FromWabtLimits(table->limits, /*imported=*/true));
    }
    module->imports_.push_back(std::move(info));
  }
  for (const interp::MemoryDesc& memory : desc.memories) {
    module->memories_.push_back(FromWabtLimits(memory.type.limits, /*imported=*/false));
  }
  for (const interp::TableDesc& table : desc.tables) {
    module->tables_.push_back(FromWabtLimits(table.type.limits, /*imported=*/false));
  }
  for (const interp::FuncDesc& func : desc.funcs) {
    uint64_t locals = func.type.params.size();
    for (const interp::LocalDesc& local : func.locals) locals += local.count;
    // The scan bounded locals by max_function_locals (a uint32_t).
    module->max_frame_values_ = std::max(module->max_frame_values_, static_cast<uint32_t>(locals));
  }
  module->function_names_.resize(imported_signatures.size() + desc.funcs.size());
  for (auto& [index, function_name] : function_names) {
    if (index < module->function_names_.size()) {
      module->function_names_[index] = std::move(function_name);
    }
  }
  for (const interp::ExportDesc& exp : desc.exports) {
    const interp::ExternType& type = *exp.type.type;
    ExportInfo info{exp.type.name, FromWabtKind(type.kind), {}, exp.index};
    if (const auto* func = wabt::dyn_cast<interp::FuncType>(&type)) {
      info.signature = FromInterpSignature(*func);
      // An export name beats a name-section name in reports.
      module->function_names_[exp.index] = exp.type.name;
    }
    module->exports_.push_back(std::move(info));
  }
  if (!desc.starts.empty()) module->start_function_ = desc.starts.front().func_index;
  module->id_ = Sha256Hex(bytes);
  module->bytes_ = std::move(bytes);
  return std::shared_ptr<const Module>(std::move(module));
}

const ExportInfo* Module::FindExport(std::string_view name) const {
  for (const ExportInfo& e : exports_) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

std::string Module::FunctionName(uint32_t index) const {
  if (index < function_names_.size() && !function_names_[index].empty()) {
    return function_names_[index];
  }
  return fmt::format("func[{}]", index);
}

}  // namespace reef::wasm
