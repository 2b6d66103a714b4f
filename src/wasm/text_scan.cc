#include "wasm/text_scan.h"

#include <fmt/format.h>

#include <array>
#include <cctype>

namespace reef::wasm {
namespace {

bool IsIdChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '$';
}

// A kind of module field with a count limit.
struct FieldKind {
  std::string_view keyword;
  std::string_view what;   // plural, for the message
  std::string_view field;  // the ModuleLimits member
  uint32_t ModuleLimits::*limit;
};

constexpr std::array<FieldKind, 8> kFieldKinds = {{
    {"func", "functions", "max_functions", &ModuleLimits::max_functions},
    {"type", "types", "max_types", &ModuleLimits::max_types},
    {"import", "imports", "max_imports", &ModuleLimits::max_imports},
    {"export", "exports", "max_exports", &ModuleLimits::max_exports},
    {"global", "globals", "max_globals", &ModuleLimits::max_globals},
    {"table", "tables", "max_tables", &ModuleLimits::max_tables},
    {"elem", "element segments", "max_elem_segments", &ModuleLimits::max_elem_segments},
    {"data", "data segments", "max_data_segments", &ModuleLimits::max_data_segments},
}};

class TextScanner {
 public:
  TextScanner(std::string_view text, std::string_view name, const ModuleLimits& limits)
      : text_(text), name_(name), limits_(limits) {}

  Result<TextShape> Run() {
    for (i_ = 0; i_ < text_.size(); ++i_) {
      char c = text_[i_];
      if (c == '\n') {
        NewLine(i_);
      } else if (c == ';' && Next() == ';') {
        while (i_ < text_.size() && text_[i_] != '\n') ++i_;
        --i_;
      } else if (c == '(' && Next() == ';') {
        BlockComment();
      } else if (c == '"') {
        size_t start = i_;
        for (++i_; i_ < text_.size() && text_[i_] != '"'; ++i_) {
          if (text_[i_] == '\\') ++i_;
        }
        shape_.string_bytes += i_ - start;
      } else if (static_cast<unsigned char>(c) >= 0x80) {
        return Invalid(i_, "non-ASCII character outside a string or comment");
      } else if (c == '(' && Next() == '@') {
        return Invalid(i_, "annotations `(@...)` are not supported");
      } else if (c == '(') {
        REEF_RETURN_IF_ERROR(Open(i_));
        ++parens_;
        previous_ = c;
        open_at_ = i_;
      } else if (c == ')') {
        --depth_;
        --parens_;
        previous_ = c;
      } else if (IsIdChar(c) && (i_ == 0 || !IsIdChar(text_[i_ - 1]))) {
        REEF_RETURN_IF_ERROR(Word());
      } else if (!std::isspace(static_cast<unsigned char>(c))) {
        previous_ = c;
      }
    }
    return CheckMemory();
  }

 private:
  char Next() const { return i_ + 1 < text_.size() ? text_[i_ + 1] : '\0'; }

  void NewLine(size_t at) {
    ++line_;
    line_start_ = at + 1;
  }

  void BlockComment() {
    int comment = 1;
    for (i_ += 2; i_ < text_.size() && comment > 0; ++i_) {
      if (text_[i_] == '\n') {
        NewLine(i_);
      } else if (text_[i_] == '(' && Next() == ';') {
        ++comment, ++i_;
      } else if (text_[i_] == ';' && Next() == ')') {
        --comment, ++i_;
      }
    }
    --i_;
  }

  // One more level of nesting at `at`.
  Status Open(size_t at) {
    if (++depth_ > limits_.max_text_nesting) {
      return Status::LimitExceeded(
          fmt::format("{}: nesting deeper than {} levels (limit max_text_nesting)", Where(at),
                      limits_.max_text_nesting));
    }
    return Status::Ok();
  }

  Status Word() {
    size_t end = i_;
    while (end < text_.size() && IsIdChar(text_[end])) ++end;
    std::string_view word = text_.substr(i_, end - i_);
    ++shape_.tokens;
    if (previous_ == '(') {
      REEF_RETURN_IF_ERROR(Form(word));
    } else if (word == "block" || word == "loop" || word == "if" || word == "try") {
      REEF_RETURN_IF_ERROR(Open(i_));
    } else if (word == "end") {
      --depth_;
    }
    previous_ = 'a';
    i_ = end - 1;
    return Status::Ok();
  }

  // The form opened at open_at_ begins with `word`.
  Status Form(std::string_view word) {
    if (parens_ == 1 && word == "module") field_depth_ = 2;
    // Inline exports and imports ((func (export "f") ...)) become fields of their own.
    bool inline_field = parens_ > field_depth_ && (word == "export" || word == "import");
    if (parens_ != field_depth_ && !inline_field) {
      ++shape_.forms;
      return Status::Ok();
    }
    ++shape_.fields;
    for (size_t k = 0; k < kFieldKinds.size(); ++k) {
      const FieldKind& kind = kFieldKinds[k];
      if (word != kind.keyword) continue;
      uint32_t limit = limits_.*kind.limit;
      if (++counts_[k] > limit) {
        return Status::LimitExceeded(fmt::format("{}: error: more than {} {}; limit {}={}",
                                                 Where(open_at_), limit, kind.what, kind.field,
                                                 limit));
      }
    }
    return Status::Ok();
  }

  Result<TextShape> CheckMemory() {
    shape_.parse_bytes_estimate = shape_.fields * kTextFieldCost + shape_.forms * kTextFormCost +
                                  shape_.tokens * kTextTokenCost +
                                  shape_.string_bytes * kTextStringByteCost;
    uint64_t bound =
        uint64_t{limits_.load_memory_factor} * text_.size() + limits_.load_memory_allowance;
    if (shape_.parse_bytes_estimate > bound) {
      return Status::LimitExceeded(fmt::format(
          "{}: error: parsing this module text would take about {} MiB of memory ({} module "
          "fields, {} other forms, {} tokens); limit load_memory_factor={} x {} bytes + "
          "load_memory_allowance={} bytes. Its binary form (.wasm) loads in less",
          name_, shape_.parse_bytes_estimate >> 20, shape_.fields, shape_.forms, shape_.tokens,
          limits_.load_memory_factor, text_.size(), limits_.load_memory_allowance));
    }
    return shape_;
  }

  std::string Where(size_t at) const {
    return fmt::format("{}:{}:{}", name_, line_, at - line_start_ + 1);
  }

  Status Invalid(size_t at, std::string_view what) const {
    return Status::InvalidArgument(fmt::format("{}: error: {}", Where(at), what));
  }

  std::string_view text_;
  std::string_view name_;
  const ModuleLimits& limits_;
  size_t i_ = 0;
  uint32_t line_ = 1;
  size_t line_start_ = 0;
  char previous_ = ' ';      // last significant character ('a' for a word)
  int64_t depth_ = 0;        // parentheses and plain blocks
  int64_t parens_ = 0;       // parentheses only
  int64_t field_depth_ = 1;  // 2 once the text is one (module ...)
  size_t open_at_ = 0;       // where the last '(' is
  std::array<uint64_t, kFieldKinds.size()> counts_{};
  TextShape shape_;
};

}  // namespace

Result<TextShape> ScanText(std::string_view text, std::string_view name,
                           const ModuleLimits& limits) {
  return TextScanner(text, name, limits).Run();
}

}  // namespace reef::wasm
