// Reef's implementation of native/rt/wasm-rt.h (see runtime.h for the model).
//
// Every function the generated code calls is defined here with C linkage; the host
// executable exports them (reef_wasm_native's link options add rt/exports.list to its dynamic
// symbol table) so a dlopen'ed guest library resolves them.
#include "wasm/native/rt/runtime.h"

#include <signal.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <csetjmp>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "core/mutex.h"
#include "wasm/native/rt/wasm-rt.h"

extern "C" {
// Read and written by the generated prologue/epilogue (initial-exec TLS model).
thread_local uint32_t wasm_rt_call_stack_depth = 0;
// The running invocation's fuel, read and written by the generated code and its glue.
thread_local int64_t* reef_rt_fuel_home = nullptr;
thread_local int reef_rt_fuel_stored = 1;
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define REEF_RT_SANITIZED 1
#endif
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define REEF_RT_SANITIZED 1
#endif
#endif
#if defined(__x86_64__) && !defined(REEF_RT_SANITIZED)
#define REEF_RT_CALL_ON_STACK 1
// reef_rt_call_on_stack(stack_top, fn, arg): keeps the caller's stack pointer in rbp (callee
// saved), moves to the new stack, calls fn(arg), moves back. The CFI lets debuggers and
// profilers walk from the new stack into the caller's.
extern "C" void reef_rt_call_on_stack(char* stack_top, void (*fn)(void*), void* arg);
asm(R"(
  .pushsection .text
  .p2align 4
  .hidden reef_rt_call_on_stack
  .type reef_rt_call_on_stack, @function
reef_rt_call_on_stack:
  .cfi_startproc
  pushq %rbp
  .cfi_def_cfa_offset 16
  .cfi_offset %rbp, -16
  movq %rsp, %rbp
  .cfi_def_cfa_register %rbp
  movq %rdi, %rsp
  movq %rdx, %rdi
  callq *%rsi
  movq %rbp, %rsp
  popq %rbp
  .cfi_def_cfa %rsp, 8
  ret
  .cfi_endproc
  .size reef_rt_call_on_stack, .-reef_rt_call_on_stack
  .popsection
)");
#endif

namespace reef::wasm::native::rt {
namespace {

constexpr uint32_t kPageBytes = 65'536;
// wasm_rt_memory_t::size is 32 bits wide: 65,536 pages would not fit.
constexpr uint32_t kMaxPages = 65'535;

thread_local jmp_buf* t_unwind = nullptr;
thread_local int t_trap_code = 0;  // what the last Unwind on this thread carried
thread_local const AllocationLimits* t_limits = nullptr;
// ThreadState's stack fields of the code running on this thread now.
thread_local const char* t_guard_begin = nullptr;
thread_local const char* t_guard_end = nullptr;
thread_local uint32_t t_host_frames = 0;
thread_local void* t_host = nullptr;
thread_local bool t_fuel_in_register = false;

// Stack the runtime's own functions (memory and table growth call the C library) need below
// them on a fiber; with less left they trap call_stack_exhausted instead of running.
constexpr size_t kRuntimeStackBytes = 32 * 1024;

// Bytes of stack left below the caller on the current fiber; SIZE_MAX off a fiber.
size_t StackLeft() {
  if (t_guard_end == nullptr) return SIZE_MAX;
  const char* here = static_cast<const char*>(__builtin_frame_address(0));
  return here > t_guard_end ? static_cast<size_t>(here - t_guard_end) : 0;
}

void RequireRuntimeStack() {
  if (StackLeft() < kRuntimeStackBytes) Unwind(WASM_RT_TRAP_EXHAUSTION);
}

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

[[noreturn]] void TrapHostKind(TrapKind kind) {
  Unwind(kHostTrapBase + static_cast<int>(kind));
}

// The process-wide function-type registry: signature -> id (1-based, never reused).
class FuncTypeRegistry {
 public:
  uint32_t Register(std::vector<wasm_rt_type_t> params, std::vector<wasm_rt_type_t> results) {
    MutexLock lock(mu_);
    auto [it, inserted] = ids_.try_emplace({std::move(params), std::move(results)},
                                           static_cast<uint32_t>(ids_.size() + 1));
    return it->second;
  }
  uint32_t size() {
    MutexLock lock(mu_);
    return static_cast<uint32_t>(ids_.size());
  }

 private:
  Mutex mu_;
  std::map<std::pair<std::vector<wasm_rt_type_t>, std::vector<wasm_rt_type_t>>, uint32_t> ids_
      GUARDED_BY(mu_);
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
  RequireRuntimeStack();
  const uint64_t new_size = uint64_t{old_size} + delta;
  if (new_size > max_size) return UINT32_MAX;
  void* grown = std::realloc(*data, new_size * sizeof(Elem));
  if (grown == nullptr) return UINT32_MAX;
  *data = static_cast<Elem*>(grown);
  std::fill(*data + old_size, *data + new_size, init);
  *size = static_cast<uint32_t>(new_size);
  return old_size;
}

// ---- Stack overflow: a fault in the running fiber's guard page ---------------------------

struct sigaction g_previous_segv;
struct sigaction g_previous_bus;

void OnFault(int signal, siginfo_t* info, void* context) {
  const char* address = static_cast<const char*>(info->si_addr);
  if (t_unwind != nullptr && t_host_frames == 0 && address >= t_guard_begin &&
      address < t_guard_end) {
    // Guest code (generated C, or the runtime's trivially destructible frames) ran into the
    // guard page: unwind the invocation like any trap. SA_NODEFER left the signal unblocked.
    // Code that keeps the fuel in r15 has not stored it: take it from the faulting context.
    // Only while generated code runs (reef_rt_fuel_stored 0): host frames may use r15 for
    // their own values, and the fuel is in its home then. (The runtime's own functions,
    // called from generated code, never reach the guard page: RequireRuntimeStack.)
#if defined(__x86_64__)
    if (t_fuel_in_register && reef_rt_fuel_home != nullptr && reef_rt_fuel_stored == 0) {
      const auto* machine = static_cast<const ucontext_t*>(context);
      *reef_rt_fuel_home = static_cast<int64_t>(machine->uc_mcontext.gregs[REG_R15]);
    }
#endif
    t_trap_code = WASM_RT_TRAP_EXHAUSTION;
    std::longjmp(*t_unwind, 1);
  }
  // Not ours: whoever handled it before (a sanitizer, a crash reporter), else the default
  // action, which the returning fault then takes.
  const struct sigaction& previous = signal == SIGSEGV ? g_previous_segv : g_previous_bus;
  if ((previous.sa_flags & SA_SIGINFO) != 0 && previous.sa_sigaction != nullptr) {
    previous.sa_sigaction(signal, info, context);
    return;
  }
  if ((previous.sa_flags & SA_SIGINFO) == 0 && previous.sa_handler != SIG_DFL &&
      previous.sa_handler != SIG_IGN) {
    previous.sa_handler(signal);
    return;
  }
  struct sigaction fallback {};
  fallback.sa_handler = SIG_DFL;
  sigemptyset(&fallback.sa_mask);
  sigaction(signal, &fallback, nullptr);
}

void InstallFaultHandler() {
  struct sigaction action {};
  action.sa_sigaction = &OnFault;
  action.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
  sigemptyset(&action.sa_mask);
  sigaction(SIGSEGV, &action, &g_previous_segv);
  sigaction(SIGBUS, &action, &g_previous_bus);
}

// This thread's alternate signal stack (the fault handler cannot run on the stack that
// overflowed), when it had none; removed when the thread ends.
class AltStack {
 public:
  AltStack() {
    stack_t current{};
    if (sigaltstack(nullptr, &current) == 0 && (current.ss_flags & SS_DISABLE) == 0) return;
    const long minimum = sysconf(_SC_MINSIGSTKSZ);
    const size_t size = std::max<size_t>(64 * 1024, minimum > 0 ? 4 * size_t(minimum) : 0);
    memory_.reset(new char[size]);
    stack_t stack{};
    stack.ss_sp = memory_.get();
    stack.ss_size = size;
    if (sigaltstack(&stack, nullptr) != 0) memory_.reset();
  }
  ~AltStack() {
    if (memory_ == nullptr) return;
    stack_t disable{};
    disable.ss_flags = SS_DISABLE;
    sigaltstack(&disable, nullptr);
  }
  AltStack(const AltStack&) = delete;
  AltStack& operator=(const AltStack&) = delete;

 private:
  std::unique_ptr<char[]> memory_;
};

}  // namespace

[[noreturn]] void Unwind(int code) {
  if (t_unwind == nullptr) {
    std::fprintf(stderr, "reef native runtime: trap %d outside an invocation\n", code);
    std::abort();
  }
  t_trap_code = code;
  std::longjmp(*t_unwind, 1);
}

void PrepareStackOverflowTraps() {
  static std::once_flag installed;
  std::call_once(installed, InstallFaultHandler);
  thread_local AltStack alt_stack;
}

ThreadState FiberThreadState(const char* guard_begin, const char* guard_end, void* host) {
  return ThreadState{nullptr, 0, guard_begin, guard_end, 0, host, nullptr, false, 1};
}

uint32_t ActiveFrames(const ThreadState& state, uint32_t max_call_depth) {
  if (state.unwind_target == nullptr) return 0;
  return state.call_stack_depth - (WASM_RT_MAX_CALL_STACK_DEPTH - max_call_depth);
}

bool EnterHostFrame(size_t stack_bytes) {
  if (wasm_rt_call_stack_depth >= WASM_RT_MAX_CALL_STACK_DEPTH) return false;
  if (StackLeft() < stack_bytes) return false;
  ++wasm_rt_call_stack_depth;
  ++t_host_frames;
  return true;
}

void LeaveHostFrame() {
  --wasm_rt_call_stack_depth;
  --t_host_frames;
}

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
  ThreadState previous{
      t_unwind, wasm_rt_call_stack_depth, t_guard_begin,      t_guard_end,        t_host_frames,
      t_host,   reef_rt_fuel_home,        t_fuel_in_register, reef_rt_fuel_stored};
  t_unwind = static_cast<jmp_buf*>(next.unwind_target);
  wasm_rt_call_stack_depth = next.call_stack_depth;
  t_guard_begin = next.guard_begin;
  t_guard_end = next.guard_end;
  t_host_frames = next.host_frames;
  t_host = next.host;
  reef_rt_fuel_home = next.fuel_home;
  t_fuel_in_register = next.fuel_in_register;
  reef_rt_fuel_stored = next.fuel_stored;
  return previous;
}

RunOutcome RunGuarded(void (*fn)(void*), void* arg, uint32_t max_call_depth,
                      const AllocationLimits* limits, FuelHome fuel) {
  // Nothing between here and the longjmp has a non-trivial destructor, and nothing set after
  // setjmp is read after it returns a second time, so no local needs to be volatile.
  jmp_buf buf;
  jmp_buf* const saved_unwind = t_unwind;
  const uint32_t saved_depth = wasm_rt_call_stack_depth;
  const AllocationLimits* const saved_limits = t_limits;
  int64_t* const saved_fuel_home = reef_rt_fuel_home;
  const bool saved_fuel_in_register = t_fuel_in_register;
  const int saved_fuel_stored = reef_rt_fuel_stored;
  t_unwind = &buf;
  wasm_rt_call_stack_depth = WASM_RT_MAX_CALL_STACK_DEPTH - max_call_depth;
  t_limits = limits;
  reef_rt_fuel_home = fuel.home;
  t_fuel_in_register = fuel.in_register;
  RunOutcome outcome;
  if (setjmp(buf) == 0) {
    fn(arg);
  } else {
    outcome.code = t_trap_code;
  }
  t_unwind = saved_unwind;
  wasm_rt_call_stack_depth = saved_depth;
  t_limits = saved_limits;
  reef_rt_fuel_home = saved_fuel_home;
  t_fuel_in_register = saved_fuel_in_register;
  reef_rt_fuel_stored = saved_fuel_stored;
  return outcome;
}

bool CanCallOnStack() {
#if defined(REEF_RT_CALL_ON_STACK)
  return true;
#else
  return false;
#endif
}

void CallOnStack(char* stack_top, void (*fn)(void*), void* arg) {
#if defined(REEF_RT_CALL_ON_STACK)
  reef_rt_call_on_stack(stack_top, fn, arg);
#else
  (void)stack_top;
  (void)fn;
  (void)arg;
  std::fprintf(stderr, "reef native runtime: CallOnStack is not available in this build\n");
  std::abort();
#endif
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

reef_rt_host* reef_rt_current_host(void) {
  return static_cast<reef_rt_host*>(rt::t_host);
}

void reef_rt_trap_host(uint32_t trap) {
  if (trap == REEF_RT_CANCELLED) rt::Unwind(rt::kCancelled);
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
  memory->dirty = nullptr;
  if (bytes > 0) {
    memory->data = static_cast<uint8_t*>(std::calloc(bytes, 1));
    memory->dirty = static_cast<uint8_t*>(std::calloc(bytes >> REEF_RT_CHUNK_SHIFT, 1));
    if (memory->data == nullptr || memory->dirty == nullptr) {
      std::free(memory->data);
      std::free(memory->dirty);
      memory->data = memory->dirty = nullptr;
      rt::TrapHostKind(reef::wasm::TrapKind::kOther);
    }
  }
  memory->pages = initial_pages;
  memory->max_pages = max_pages;
  memory->size = static_cast<uint32_t>(bytes);
}

uint32_t wasm_rt_grow_memory(wasm_rt_memory_t* memory, uint32_t pages) {
  const uint32_t old_pages = memory->pages;
  if (pages == 0) return old_pages;
  rt::RequireRuntimeStack();
  const uint64_t new_pages = uint64_t{old_pages} + pages;
  if (new_pages > memory->max_pages) return UINT32_MAX;
  const size_t old_bytes = memory->size;
  const size_t new_bytes = new_pages * rt::kPageBytes;
  // The dirty map first: when the memory cannot grow after it did, the longer map is unused.
  void* map = std::realloc(memory->dirty, new_bytes >> REEF_RT_CHUNK_SHIFT);
  if (map == nullptr) return UINT32_MAX;
  memory->dirty = static_cast<uint8_t*>(map);
  std::memset(memory->dirty + (old_bytes >> REEF_RT_CHUNK_SHIFT), 0,
              (new_bytes - old_bytes) >> REEF_RT_CHUNK_SHIFT);
  void* grown = std::realloc(memory->data, new_bytes);
  if (grown == nullptr) return UINT32_MAX;
  memory->data = static_cast<uint8_t*>(grown);
  // Fresh pages are zero, as the reset leaves them: not written.
  std::memset(memory->data + old_bytes, 0, new_bytes - old_bytes);
  memory->pages = static_cast<uint32_t>(new_pages);
  memory->size = static_cast<uint32_t>(new_bytes);
  return old_pages;
}

void wasm_rt_free_memory(wasm_rt_memory_t* memory) {
  std::free(memory->data);
  std::free(memory->dirty);
  memory->data = nullptr;
  memory->dirty = nullptr;
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
