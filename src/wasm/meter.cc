#include "wasm/detail/meter.h"

#include <fmt/format.h>

#include <memory>
#include <optional>
#include <utility>

#include "wabt/binary-reader-ir.h"
#include "wabt/binary-reader.h"
#include "wabt/binary-writer.h"
#include "wabt/cast.h"
#include "wabt/stream.h"
#include "wasm/detail/features.h"

namespace reef::wasm::detail {

namespace {

using wabt::Const;
using wabt::Expr;
using wabt::ExprList;
using wabt::ExprType;
using wabt::Opcode;
using wabt::Var;

template <typename T, typename... Args>
std::unique_ptr<Expr> Make(Args&&... args) {
  return std::make_unique<T>(std::forward<Args>(args)...);
}

// True when the instruction after `expr` starts a new basic block.
bool EndsBasicBlock(const Expr& expr) {
  switch (expr.type()) {
    case ExprType::Br:
    case ExprType::BrIf:
    case ExprType::BrTable:
    case ExprType::Return:
    case ExprType::Unreachable:
    case ExprType::ReturnCall:
    case ExprType::ReturnCallIndirect:
    case ExprType::Block:
    case ExprType::Loop:
    case ExprType::If:
      return true;
    default:
      return false;
  }
}

// The bulk cost of `expr` as (shift, multiplier): size >> shift * multiplier instructions, for
// the operations whose size operand is on top of the stack; nullopt for every other.
struct BulkCost {
  uint32_t shift = 0;
  uint32_t multiplier = 1;
};
std::optional<BulkCost> BulkCostOf(const Expr& expr) {
  switch (expr.type()) {
    case ExprType::MemoryFill:
    case ExprType::MemoryCopy:
    case ExprType::MemoryInit:
      static_assert(kBulkMemoryBytesPerInstruction == 64);
      return BulkCost{6, 1};
    case ExprType::TableFill:
    case ExprType::TableCopy:
    case ExprType::TableInit:
    case ExprType::TableGrow:
      static_assert(kBulkTableElementsPerInstruction == 8);
      return BulkCost{3, 1};
    case ExprType::MemoryGrow:
      return BulkCost{0, kGrowPageInstructions};
    default:
      return std::nullopt;
  }
}

// True when `list`, or a sequence nested in it, calls a function: only such a function can
// be part of a recursion, so only its entry needs a fuel check.
bool Calls(const ExprList& list) {
  for (const Expr& expr : list) {
    switch (expr.type()) {
      case ExprType::Call:
      case ExprType::CallIndirect:
      case ExprType::CallRef:
      case ExprType::ReturnCall:
      case ExprType::ReturnCallIndirect:
        return true;
      case ExprType::Block:
        if (Calls(wabt::cast<wabt::BlockExpr>(&expr)->block.exprs)) return true;
        break;
      case ExprType::Loop:
        if (Calls(wabt::cast<wabt::LoopExpr>(&expr)->block.exprs)) return true;
        break;
      case ExprType::If: {
        const auto* if_expr = wabt::cast<wabt::IfExpr>(&expr);
        if (Calls(if_expr->true_.exprs) || Calls(if_expr->false_)) return true;
        break;
      }
      default:
        break;
    }
  }
  return false;
}

class Meter {
 public:
  explicit Meter(MeterLayout layout) : layout_(layout) {}

  Status Function(wabt::Func& func) {
    func_ = &func;
    scratch_.reset();
    // A function that calls none runs at most its own length before it returns or reaches a
    // loop header (which checks), so its entry needs no check.
    return Sequence(func.exprs, /*check_first=*/Calls(func.exprs));
  }

 private:
  // Meters one instruction sequence. `check_first`: the sequence is a function body or a loop
  // body, so its first block checks the fuel after charging it.
  Status Sequence(ExprList& list, bool check_first) {
    auto segment = list.begin();
    uint64_t cost = 0;
    bool check = check_first;
    for (auto it = list.begin(); it != list.end(); ++it) {
      REEF_RETURN_IF_ERROR(Nested(*it));
      if (std::optional<BulkCost> bulk = BulkCostOf(*it)) {
        auto first = ChargeBulk(list, it, *bulk);
        if (segment == it) segment = first;  // the block's charge goes before the bulk's
      }
      ++cost;
      if (!EndsBasicBlock(*it)) continue;
      Charge(list, segment, cost, check);
      segment = std::next(it);
      cost = 0;
      check = false;
    }
    if (cost > 0 || check) Charge(list, segment, cost, check);
    return Status::Ok();
  }

  // Meters the sequences nested in `expr`.
  Status Nested(Expr& expr) {
    switch (expr.type()) {
      case ExprType::Block:
        return Sequence(wabt::cast<wabt::BlockExpr>(&expr)->block.exprs, false);
      case ExprType::Loop:
        return Sequence(wabt::cast<wabt::LoopExpr>(&expr)->block.exprs, true);
      case ExprType::If: {
        auto* if_expr = wabt::cast<wabt::IfExpr>(&expr);
        REEF_RETURN_IF_ERROR(Sequence(if_expr->true_.exprs, false));
        return Sequence(if_expr->false_, false);
      }
      case ExprType::Try:
      case ExprType::Throw:
      case ExprType::Rethrow:
        return Status::InvalidArgument(
            "exception handling is not supported (the metering pass refuses try/throw)");
      default:
        return Status::Ok();
    }
  }

  // Inserts before `at`: fuel -= cost; then, when `check`, the fuel check.
  void Charge(ExprList& list, ExprList::iterator at, uint64_t cost, bool check) {
    if (cost > 0) {
      list.insert(at, Make<wabt::GlobalGetExpr>(Fuel()));
      list.insert(at, Make<wabt::ConstExpr>(Const::I64(cost)));
      list.insert(at, Make<wabt::BinaryExpr>(Opcode::I64Sub));
      list.insert(at, Make<wabt::GlobalSetExpr>(Fuel()));
    }
    if (check) Check(list, at);
  }

  // Inserts before `at`: if fuel < 0, call the out-of-fuel function.
  void Check(ExprList& list, ExprList::iterator at) {
    list.insert(at, Make<wabt::GlobalGetExpr>(Fuel()));
    list.insert(at, Make<wabt::ConstExpr>(Const::I64(0)));
    list.insert(at, Make<wabt::CompareExpr>(Opcode::I64LtS));
    auto if_expr = std::make_unique<wabt::IfExpr>();
    if_expr->true_.exprs.push_back(Make<wabt::ConstExpr>(Const::I32(0)));
    auto call = std::make_unique<wabt::CallIndirectExpr>();
    call->decl.has_func_type = true;
    call->decl.type_var = Var(layout_.meter_type, wabt::Location());
    call->table = Var(layout_.meter_table, wabt::Location());
    if_expr->true_.exprs.push_back(std::move(call));
    list.insert(at, std::move(if_expr));
  }

  // Inserts before the bulk operation at `at` (its size operand on top of the stack):
  // fuel -= (size >> shift) * multiplier, then the fuel check. Returns the first inserted.
  ExprList::iterator ChargeBulk(ExprList& list, ExprList::iterator at, BulkCost cost) {
    const Var scratch = Scratch();
    auto first = list.insert(at, Make<wabt::LocalTeeExpr>(scratch));
    list.insert(at, Make<wabt::GlobalGetExpr>(Fuel()));
    list.insert(at, Make<wabt::LocalGetExpr>(scratch));
    list.insert(at, Make<wabt::ConvertExpr>(Opcode::I64ExtendI32U));
    if (cost.shift > 0) {
      list.insert(at, Make<wabt::ConstExpr>(Const::I64(cost.shift)));
      list.insert(at, Make<wabt::BinaryExpr>(Opcode::I64ShrU));
    }
    if (cost.multiplier > 1) {
      list.insert(at, Make<wabt::ConstExpr>(Const::I64(cost.multiplier)));
      list.insert(at, Make<wabt::BinaryExpr>(Opcode::I64Mul));
    }
    list.insert(at, Make<wabt::BinaryExpr>(Opcode::I64Sub));
    list.insert(at, Make<wabt::GlobalSetExpr>(Fuel()));
    Check(list, at);
    return first;
  }

  Var Fuel() const { return Var(layout_.fuel_global, wabt::Location()); }

  // An i32 local of the current function that only the metering code uses.
  Var Scratch() {
    if (!scratch_) {
      scratch_ = func_->GetNumParamsAndLocals();
      func_->local_types.AppendDecl(wabt::Type::I32, 1);
    }
    return Var(*scratch_, wabt::Location());
  }

  MeterLayout layout_;
  wabt::Func* func_ = nullptr;
  std::optional<wabt::Index> scratch_;
};

// Appends the fuel global, the `() -> ()` type and the out-of-fuel table.
MeterLayout AppendMeterFields(wabt::Module& module) {
  MeterLayout layout;
  layout.fuel_global = static_cast<uint32_t>(module.globals.size());
  auto global = std::make_unique<wabt::GlobalModuleField>();
  global->global.type = wabt::Type::I64;
  global->global.mutable_ = true;
  global->global.init_expr.push_back(Make<wabt::ConstExpr>(Const::I64(0)));
  module.AppendField(std::move(global));

  layout.meter_type = static_cast<uint32_t>(module.types.size());
  auto type = std::make_unique<wabt::TypeModuleField>();
  type->type = std::make_unique<wabt::FuncType>();
  module.AppendField(std::move(type));

  layout.meter_table = static_cast<uint32_t>(module.tables.size());
  auto table = std::make_unique<wabt::TableModuleField>();
  table->table.elem_limits = wabt::Limits(1, 1);
  table->table.elem_type = wabt::Type::FuncRef;
  module.AppendField(std::move(table));
  return layout;
}

}  // namespace

Result<MeterLayout> MeterModule(wabt::Module& module) {
  const MeterLayout layout = AppendMeterFields(module);
  Meter meter(layout);
  for (size_t i = module.num_func_imports; i < module.funcs.size(); ++i) {
    REEF_RETURN_IF_ERROR(meter.Function(*module.funcs[i]));
  }
  return layout;
}

Result<MeteredBinary> MeterBinary(std::span<const uint8_t> bytes) {
  wabt::Errors errors;
  const wabt::Features features = SupportedFeatures();
  wabt::ReadBinaryOptions options(features, /*log_stream=*/nullptr, /*read_debug_names=*/false,
                                  /*stop_on_first_error=*/true,
                                  /*fail_on_custom_section_error=*/false);
  wabt::Module module;
  if (wabt::Failed(
          wabt::ReadBinaryIr("module", bytes.data(), bytes.size(), options, &errors, &module))) {
    return Status::InvalidArgument(
        fmt::format("metering: cannot read the module: {}",
                    errors.empty() ? std::string("unknown error") : errors.front().message));
  }
  REEF_ASSIGN_OR_RETURN(MeterLayout layout, MeterModule(module));
  wabt::MemoryStream stream;
  wabt::WriteBinaryOptions write_options(features, /*canonicalize_lebs=*/true,
                                         /*relocatable=*/false, /*write_debug_names=*/false);
  if (wabt::Failed(wabt::WriteBinaryModule(&stream, &module, write_options))) {
    return Status::InvalidArgument("metering: cannot encode the metered module");
  }
  MeteredBinary out;
  out.bytes = std::move(stream.output_buffer().data);
  out.layout = layout;
  return out;
}

}  // namespace reef::wasm::detail
