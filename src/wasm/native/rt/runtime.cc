// Reef's implementation of native/rt/wasm-rt.h (see runtime.h for the model).
//
// Every function the generated code calls is defined here with C linkage; the host
// executable exports them (reef_wasm_native's link options add rt/exports.list to its dynamic
// symbol table) so a dlopen'ed guest library resolves them.
#include "wasm/native/rt/runtime.h"

#include <algorithm>
#include <array>
#include <csetjmp>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "wasm/native/rt/wasm-rt.h"

extern "C" {
// Read and written by the generated prologue/epilogue (initial-exec TLS model).
thread_local uint32_t wasm_rt_call_stack_depth = 0;
}

namespace reef::wasm::native::rt {
namespace {

constexpr uint32_t kPageBytes = 65'536;
// wasm_rt_memory_t::size is 32 bits wide: 65,536 pages would not fit.
constexpr uint32_t kMaxPages = 65'535;

thread_local jmp_buf* t_unwind = nullptr;
thread_local int t_trap_code = 0;  // what the last Unwind on this thread carried
thread_local const AllocationLimits* t_limits = nullptr;

// The wasm_rt_trap_t codes: kind and the interpreter's message text for the same trap, so
// a message classifies the same way in both tiers (ClassifyTrapMessage).
struct TrapRow {
  wasm_rt_trap_t code;
  TrapKind kind;
  const char* message;
};
constexpr std::array<TrapRow, 10> kTrapRows = {{
    {WASM_RT_TRAP_NONE, TrapKind::kOther, "no trap"},
    {WASM_RT_TRAP_OOB, TrapKind::kMemoryOutOfBounds, "out of bounds memory access"},
    {WASM_RT_TRAP_INT_OVERFLOW, TrapKind::kIntegerOverflow, "integer overflow"},
    {WASM_RT_TRAP_DIV_BY_ZERO, TrapKind::kIntegerDivideByZero, "integer divide by zero"},
    {WASM_RT_TRAP_INVALID_CONVERSION, TrapKind::kInvalidConversion,
     "invalid conversion to integer"},
    {WASM_RT_TRAP_UNREACHABLE, TrapKind::kUnreachable, "unreachable executed"},
    {WASM_RT_TRAP_CALL_INDIRECT, TrapKind::kIndirectCallMismatch,
     "indirect call signature mismatch or uninitialized table element"},
    {WASM_RT_TRAP_UNCAUGHT_EXCEPTION, TrapKind::kOther, "exceptions are not supported"},
    {WASM_RT_TRAP_EXHAUSTION, TrapKind::kCallStackExhausted, "call stack exhausted"},
    {WASM_RT_TRAP_TABLE_OOB, TrapKind::kTableOutOfBounds, "out of bounds table access"},
}};

const TrapRow* FindTrapRow(int code) {
  for (const TrapRow& row : kTrapRows) {
    if (static_cast<int>(row.code) == code) return &row;
  }
  return nullptr;
}

[[noreturn]] void Unwind(int code) {
  if (t_unwind == nullptr) {
    std::fprintf(stderr, "reef native runtime: trap %d outside an invocation\n", code);
    std::abort();
  }
  t_trap_code = code;
  std::longjmp(*t_unwind, 1);
}

[[noreturn]] void TrapHostKind(TrapKind kind) {
  Unwind(kHostTrapBase + static_cast<int>(kind));
}

// The process-wide function-type registry: signature -> id (1-based, never reused).
class FuncTypeRegistry {
 public:
  uint32_t Register(std::vector<wasm_rt_type_t> params, std::vector<wasm_rt_type_t> results) {
    std::lock_guard<std::mutex> lock(mu_);
    auto [it, inserted] = ids_.try_emplace({std::move(params), std::move(results)},
                                           static_cast<uint32_t>(ids_.size() + 1));
    return it->second;
  }
  uint32_t size() {
    std::lock_guard<std::mutex> lock(mu_);
    return static_cast<uint32_t>(ids_.size());
  }

 private:
  std::mutex mu_;
  std::map<std::pair<std::vector<wasm_rt_type_t>, std::vector<wasm_rt_type_t>>, uint32_t> ids_;
};

FuncTypeRegistry& Registry() {
  static FuncTypeRegistry* registry = new FuncTypeRegistry();  // never destroyed: used by
  return *registry;                                            // libraries until exit
}

template <typename Elem>
void AllocateTable(Elem** data, uint32_t* size, uint32_t* max_size, uint32_t elements,
                   uint32_t max_elements) {
  if (t_limits != nullptr) max_elements = std::min(max_elements, t_limits->max_table_elements);
  if (elements > max_elements) TrapHostKind(TrapKind::kOther);
  *data = nullptr;
  if (elements > 0) {
    *data = static_cast<Elem*>(std::calloc(elements, sizeof(Elem)));
    if (*data == nullptr) TrapHostKind(TrapKind::kOther);
  }
  *size = elements;
  *max_size = max_elements;
}

template <typename Elem>
uint32_t GrowTable(Elem** data, uint32_t* size, uint32_t max_size, uint32_t delta, Elem init) {
  const uint32_t old_size = *size;
  if (delta == 0) return old_size;
  const uint64_t new_size = uint64_t{old_size} + delta;
  if (new_size > max_size) return UINT32_MAX;
  void* grown = std::realloc(*data, new_size * sizeof(Elem));
  if (grown == nullptr) return UINT32_MAX;
  *data = static_cast<Elem*>(grown);
  std::fill(*data + old_size, *data + new_size, init);
  *size = static_cast<uint32_t>(new_size);
  return old_size;
}

}  // namespace

TrapKind RunOutcome::kind() const {
  if (code >= kHostTrapBase) return static_cast<TrapKind>(code - kHostTrapBase);
  const TrapRow* row = FindTrapRow(code);
  return row != nullptr ? row->kind : TrapKind::kOther;
}

std::string_view RunOutcome::message() const {
  if (code >= kHostTrapBase) return TrapKindSummary(kind());
  const TrapRow* row = FindTrapRow(code);
  return row != nullptr ? row->message : "unknown trap code";
}

ThreadState ExchangeThreadState(ThreadState next) {
  ThreadState previous{t_unwind, wasm_rt_call_stack_depth};
  t_unwind = static_cast<jmp_buf*>(next.unwind_target);
  wasm_rt_call_stack_depth = next.call_stack_depth;
  return previous;
}

RunOutcome RunGuarded(void (*fn)(void*), void* arg, uint32_t max_call_depth,
                      const AllocationLimits* limits) {
  // Nothing between here and the longjmp has a non-trivial destructor, and nothing set after
  // setjmp is read after it returns a second time, so no local needs to be volatile.
  jmp_buf buf;
  jmp_buf* const saved_unwind = t_unwind;
  const uint32_t saved_depth = wasm_rt_call_stack_depth;
  const AllocationLimits* const saved_limits = t_limits;
  t_unwind = &buf;
  wasm_rt_call_stack_depth = WASM_RT_MAX_CALL_STACK_DEPTH - max_call_depth;
  t_limits = limits;
  RunOutcome outcome;
  if (setjmp(buf) == 0) {
    fn(arg);
  } else {
    outcome.code = t_trap_code;
  }
  t_unwind = saved_unwind;
  wasm_rt_call_stack_depth = saved_depth;
  t_limits = saved_limits;
  return outcome;
}

uint32_t RegisteredFuncTypeCount() {
  return Registry().size();
}

}  // namespace reef::wasm::native::rt

// ---- The C interface of wasm-rt.h ---------------------------------------------------------

namespace rt = reef::wasm::native::rt;

extern "C" {

void wasm_rt_trap(wasm_rt_trap_t code) {
  rt::Unwind(static_cast<int>(code));
}

void reef_rt_trap_host(uint32_t trap) {
  // call_import returns 1 + TrapKind.
  rt::Unwind(rt::kHostTrapBase + static_cast<int>(trap) - 1);
}

const char* wasm_rt_strerror(wasm_rt_trap_t code) {
  const rt::TrapRow* row = rt::FindTrapRow(static_cast<int>(code));
  return row != nullptr ? row->message : "unknown trap code";
}

uint32_t wasm_rt_register_func_type(uint32_t params, uint32_t results, ...) {
  std::vector<wasm_rt_type_t> param_types(params);
  std::vector<wasm_rt_type_t> result_types(results);
  va_list args;
  va_start(args, results);
  // Enum varargs are promoted to int.
  for (auto& type : param_types) type = static_cast<wasm_rt_type_t>(va_arg(args, int));
  for (auto& type : result_types) type = static_cast<wasm_rt_type_t>(va_arg(args, int));
  va_end(args);
  return rt::Registry().Register(std::move(param_types), std::move(result_types));
}

void wasm_rt_allocate_memory(wasm_rt_memory_t* memory, uint32_t initial_pages, uint32_t max_pages) {
  max_pages = std::min(max_pages, rt::kMaxPages);
  if (rt::t_limits != nullptr) max_pages = std::min(max_pages, rt::t_limits->max_memory_pages);
  if (initial_pages > max_pages) rt::TrapHostKind(reef::wasm::TrapKind::kOther);
  const size_t bytes = size_t{initial_pages} * rt::kPageBytes;
  memory->data = nullptr;
  if (bytes > 0) {
    memory->data = static_cast<uint8_t*>(std::calloc(bytes, 1));
    if (memory->data == nullptr) rt::TrapHostKind(reef::wasm::TrapKind::kOther);
  }
  memory->pages = initial_pages;
  memory->max_pages = max_pages;
  memory->size = static_cast<uint32_t>(bytes);
}

uint32_t wasm_rt_grow_memory(wasm_rt_memory_t* memory, uint32_t pages) {
  const uint32_t old_pages = memory->pages;
  if (pages == 0) return old_pages;
  const uint64_t new_pages = uint64_t{old_pages} + pages;
  if (new_pages > memory->max_pages) return UINT32_MAX;
  const size_t old_bytes = memory->size;
  const size_t new_bytes = new_pages * rt::kPageBytes;
  void* grown = std::realloc(memory->data, new_bytes);
  if (grown == nullptr) return UINT32_MAX;
  memory->data = static_cast<uint8_t*>(grown);
  std::memset(memory->data + old_bytes, 0, new_bytes - old_bytes);
  memory->pages = static_cast<uint32_t>(new_pages);
  memory->size = static_cast<uint32_t>(new_bytes);
  return old_pages;
}

void wasm_rt_free_memory(wasm_rt_memory_t* memory) {
  std::free(memory->data);
  memory->data = nullptr;
  memory->pages = 0;
  memory->size = 0;
}

void wasm_rt_allocate_funcref_table(wasm_rt_funcref_table_t* table, uint32_t elements,
                                    uint32_t max_elements) {
  rt::AllocateTable(&table->data, &table->size, &table->max_size, elements, max_elements);
}

void wasm_rt_free_funcref_table(wasm_rt_funcref_table_t* table) {
  std::free(table->data);
  table->data = nullptr;
  table->size = 0;
}

uint32_t wasm_rt_grow_funcref_table(wasm_rt_funcref_table_t* table, uint32_t delta,
                                    wasm_rt_funcref_t init) {
  return rt::GrowTable(&table->data, &table->size, table->max_size, delta, init);
}

void wasm_rt_allocate_externref_table(wasm_rt_externref_table_t* table, uint32_t elements,
                                      uint32_t max_elements) {
  rt::AllocateTable(&table->data, &table->size, &table->max_size, elements, max_elements);
}

void wasm_rt_free_externref_table(wasm_rt_externref_table_t* table) {
  std::free(table->data);
  table->data = nullptr;
  table->size = 0;
}

uint32_t wasm_rt_grow_externref_table(wasm_rt_externref_table_t* table, uint32_t delta,
                                      wasm_rt_externref_t init) {
  return rt::GrowTable(&table->data, &table->size, table->max_size, delta, init);
}

void wasm_rt_init(void) {}
bool wasm_rt_is_initialized(void) {
  return true;
}
void wasm_rt_free(void) {}

uint32_t wasm_rt_register_tag(uint32_t) {
  wasm_rt_trap(WASM_RT_TRAP_UNCAUGHT_EXCEPTION);
}
void wasm_rt_load_exception(uint32_t, uint32_t, const void*) {
  wasm_rt_trap(WASM_RT_TRAP_UNCAUGHT_EXCEPTION);
}
void wasm_rt_throw(void) {
  wasm_rt_trap(WASM_RT_TRAP_UNCAUGHT_EXCEPTION);
}
WASM_RT_UNWIND_TARGET* wasm_rt_get_unwind_target(void) {
  return rt::t_unwind;
}
void wasm_rt_set_unwind_target(WASM_RT_UNWIND_TARGET*) {
  wasm_rt_trap(WASM_RT_TRAP_UNCAUGHT_EXCEPTION);
}
uint32_t wasm_rt_exception_tag(void) {
  return 0;
}
uint32_t wasm_rt_exception_size(void) {
  return 0;
}
void* wasm_rt_exception(void) {
  return nullptr;
}

}  // extern "C"
