/* Reef's wasm-rt.h: the runtime interface wasm2c 1.0.32's generated C compiles against. Same
 * ABI as wabt's for what the generated code uses, but for the memory's dirty map, with Reef's
 * configuration fixed: explicit bounds checks (no guard pages or signal handler), call depth in
 * a thread-local counter. native/rt/runtime.cc implements every function declared here; the
 * generated library resolves them from the host process. compiler.cc writes this text next to
 * the generated C, which never sees Debian's /usr/include/wasm-rt.h. Valid C and C++.
 *
 * Thread ownership: the unwind target and call depth are per thread (whoever switches
 * invocations on a thread saves and restores them: native/rt/runtime.h); the function-type
 * registry is process-wide and thread-safe; memories and tables belong to one instance, used
 * by one thread at a time. */
#ifndef REEF_WASM_NATIVE_RT_WASM_RT_H_
#define REEF_WASM_NATIVE_RT_WASM_RT_H_

#include <setjmp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#define REEF_RT_THREAD_LOCAL thread_local
#else
#define REEF_RT_THREAD_LOCAL _Thread_local
#endif

/* ---- Compiler helpers the generated code uses ---------------------------------------- */

#define UNLIKELY(x) __builtin_expect(!!(x), 0)
#define LIKELY(x) __builtin_expect(!!(x), 1)
#define wasm_rt_memcpy __builtin_memcpy
#define wasm_rt_unreachable __builtin_unreachable
#define WASM_RT_NO_RETURN __attribute__((noreturn))

/* ---- Fixed configuration ------------------------------------------------------------- */

/* Explicit bounds checks on every access; Reef installs no signal handler. */
#if defined(WASM_RT_MEMCHECK_SIGNAL_HANDLER) && WASM_RT_MEMCHECK_SIGNAL_HANDLER
#error "Reef's runtime checks memory bounds explicitly: WASM_RT_MEMCHECK_SIGNAL_HANDLER must be 0"
#endif
#undef WASM_RT_MEMCHECK_SIGNAL_HANDLER
#define WASM_RT_MEMCHECK_SIGNAL_HANDLER 0
#define WASM_RT_SKIP_SIGNAL_RECOVERY 1
#define WASM_RT_SIGNAL_RECOVERY_SUPPORTED 0
#define WASM_RT_MERGED_OOB_AND_EXHAUSTION_TRAPS 0

/* Call depth is counted. The generated prologue traps when the counter passes this ceiling;
 * the runtime starts each invocation's counter at (ceiling - limit), so the limit is a runtime
 * value (EngineLimits::max_call_depth). */
#if defined(WASM_RT_USE_STACK_DEPTH_COUNT) && !WASM_RT_USE_STACK_DEPTH_COUNT
#error "Reef's runtime counts call depth: WASM_RT_USE_STACK_DEPTH_COUNT must be 1"
#endif
#undef WASM_RT_USE_STACK_DEPTH_COUNT
#define WASM_RT_USE_STACK_DEPTH_COUNT 1
#undef WASM_RT_MAX_CALL_STACK_DEPTH
#define WASM_RT_MAX_CALL_STACK_DEPTH 0x7fffffffu

/* Frames entered in the current invocation on this thread, offset by the ceiling above. */
extern REEF_RT_THREAD_LOCAL uint32_t wasm_rt_call_stack_depth;

/* The running invocation's metering fuel (wasm/detail/meter.h), or NULL outside one (while
 * instantiating). Set by the runtime for each invocation; the generated code's fuel lives
 * here whenever control is outside the generated code. */
extern REEF_RT_THREAD_LOCAL int64_t* reef_rt_fuel_home;
/* 1 while the host runs inside an invocation (the fuel is in its home), 0 while generated
 * code that keeps the fuel in a register runs ("Registers of the generated code"). */
extern REEF_RT_THREAD_LOCAL int reef_rt_fuel_stored;

/* ---- Traps ---------------------------------------------------------------------------- */

/* Same values as wabt 1.0.32. native/rt/runtime.cc maps them to reef::wasm::TrapKind. */
typedef enum {
  WASM_RT_TRAP_NONE,
  WASM_RT_TRAP_OOB,                /* memory or table access out of bounds */
  WASM_RT_TRAP_INT_OVERFLOW,       /* signed division overflow or float-to-int range */
  WASM_RT_TRAP_DIV_BY_ZERO,        /* integer division or remainder by zero */
  WASM_RT_TRAP_INVALID_CONVERSION, /* float-to-int of NaN */
  WASM_RT_TRAP_UNREACHABLE,        /* `unreachable` */
  WASM_RT_TRAP_CALL_INDIRECT,      /* call_indirect: out of range, null or wrong type */
  WASM_RT_TRAP_UNCAUGHT_EXCEPTION, /* exceptions are refused; never raised by valid input */
  WASM_RT_TRAP_EXHAUSTION,         /* call depth limit reached */
  /* Reef's extension: a table access or call_indirect index out of range. wabt reports
   * these as OOB; Reef's C generator rewrites the table helpers to use this code, so
   * memory and table faults stay distinct (native/c_gen.cc). */
  WASM_RT_TRAP_TABLE_OOB,
} wasm_rt_trap_t;

/* Unwinds to the innermost invocation on this thread; it reports `code`.
 * REQUIRES: called inside an invocation (the runtime aborts the process otherwise). */
WASM_RT_NO_RETURN void wasm_rt_trap(wasm_rt_trap_t code);
/* Static English text for `code`. */
const char* wasm_rt_strerror(wasm_rt_trap_t code);

/* ---- Values, functions, references ---------------------------------------------------- */

typedef enum {
  WASM_RT_I32,
  WASM_RT_I64,
  WASM_RT_F32,
  WASM_RT_F64,
  WASM_RT_FUNCREF,
  WASM_RT_EXTERNREF,
} wasm_rt_type_t;

/* Canonical function pointer; callers cast to the real C signature. */
typedef void (*wasm_rt_function_ptr_t)(void);

typedef struct {
  uint32_t func_type;          /* id from wasm_rt_register_func_type; 0 = null */
  wasm_rt_function_ptr_t func; /* takes module_instance as its first argument */
  void* module_instance;
} wasm_rt_funcref_t;

static const wasm_rt_funcref_t wasm_rt_funcref_null_value = {0, NULL, NULL};

typedef void* wasm_rt_externref_t;
static const wasm_rt_externref_t wasm_rt_externref_null_value = NULL;

/* Registers a function type: `params` then `results` values of wasm_rt_type_t follow as
 * varargs. Returns the same id (>= 1) for equal signatures, process-wide. Thread-safe. */
uint32_t wasm_rt_register_func_type(uint32_t params, uint32_t results, ...);

/* ---- Memories and tables --------------------------------------------------------------- */

/* One linear memory: `size` bytes at `data` (= pages * 65,536). `max_pages` is the smaller of
 * the module's declared maximum and the host's limit; growing past it fails. */
typedef struct wasm_rt_memory_t {
  uint8_t* data;
  uint32_t pages, max_pages;
  uint32_t size;
  /* A byte per 1 KiB chunk of `data` (size >> REEF_RT_CHUNK_SHIFT), set to 1 by every write
   * (c_gen.cc RewriteMemoryWrites, GuestMemory::Write): a reset restores only those chunks. */
  uint8_t* dirty;
} wasm_rt_memory_t;
#define REEF_RT_CHUNK_SHIFT 10
#define REEF_RT_CHUNK_SPILL 8u /* a store marks its first chunk; resets take 8 bytes more */

/* Marks the chunks of [at, at + n) written. REQUIRES: n > 0, inside the memory. */
static inline void reef_rt_mark_written(wasm_rt_memory_t* m, uint64_t at, uint64_t n) {
  const uint64_t first = at >> REEF_RT_CHUNK_SHIFT, last = (at + n - 1) >> REEF_RT_CHUNK_SHIFT;
  memset(m->dirty + first, 1, (size_t)(last - first + 1));
}

typedef struct wasm_rt_funcref_table_t {
  wasm_rt_funcref_t* data;
  uint32_t max_size; /* elements; the smaller of the declared maximum and the host's limit */
  uint32_t size;     /* elements */
} wasm_rt_funcref_table_t;

typedef struct {
  wasm_rt_externref_t* data;
  uint32_t max_size;
  uint32_t size;
} wasm_rt_externref_table_t;

/* Allocates zeroed memory of `initial_pages`. Traps when the allocation fails. */
void wasm_rt_allocate_memory(wasm_rt_memory_t* memory, uint32_t initial_pages, uint32_t max_pages);
/* Grows by `pages` zeroed pages; returns the old page count, or 0xffffffff (and changes
 * nothing) past max_pages or when the allocation fails. */
uint32_t wasm_rt_grow_memory(wasm_rt_memory_t* memory, uint32_t pages);
void wasm_rt_free_memory(wasm_rt_memory_t* memory);

void wasm_rt_allocate_funcref_table(wasm_rt_funcref_table_t* table, uint32_t elements,
                                    uint32_t max_elements);
void wasm_rt_free_funcref_table(wasm_rt_funcref_table_t* table);
uint32_t wasm_rt_grow_funcref_table(wasm_rt_funcref_table_t* table, uint32_t delta,
                                    wasm_rt_funcref_t init);
void wasm_rt_allocate_externref_table(wasm_rt_externref_table_t* table, uint32_t elements,
                                      uint32_t max_elements);
void wasm_rt_free_externref_table(wasm_rt_externref_table_t* table);
uint32_t wasm_rt_grow_externref_table(wasm_rt_externref_table_t* table, uint32_t delta,
                                      wasm_rt_externref_t init);

/* ---- Lifecycle ------------------------------------------------------------------------- */

void wasm_rt_init(void); /* nothing to set up (no signal handler, no buffers): the ABI's */
bool wasm_rt_is_initialized(void);
void wasm_rt_free(void);

/* ---- Exceptions: refused (the proposal is disabled, so generated code never calls these;
 * if it did, each traps with WASM_RT_TRAP_UNCAUGHT_EXCEPTION) ------------------------- */
#define WASM_RT_UNWIND_TARGET jmp_buf
#define WASM_RT_SETJMP(buf) setjmp(buf)
#define wasm_rt_try(target) WASM_RT_SETJMP(target)

uint32_t wasm_rt_register_tag(uint32_t size);
void wasm_rt_load_exception(uint32_t tag, uint32_t size, const void* values);
WASM_RT_NO_RETURN void wasm_rt_throw(void);
WASM_RT_UNWIND_TARGET* wasm_rt_get_unwind_target(void);
void wasm_rt_set_unwind_target(WASM_RT_UNWIND_TARGET* target);
uint32_t wasm_rt_exception_tag(void);
uint32_t wasm_rt_exception_size(void);
void* wasm_rt_exception(void);

/* ---- Reef's glue ABI ------------------------------------------------------------------- */
/* The glue Reef generates next to wasm2c's output (native/c_glue.cc) passes values and calls
 * host imports through these. */

/* One wasm number; the member is the wasm type. (Tagged, like wasm_rt_memory_t above, so C++
 * headers can declare them without including this file; tags do not change the ABI.) */
typedef union reef_rt_value {
  uint32_t i32;
  uint64_t i64;
  float f32;
  double f64;
} reef_rt_value;

/* The host side of one instance: every import module's instance pointer points here.
 * `call_import` runs function import `index` (0-based among the module's function imports)
 * and returns 0, 1 + a reef::wasm::TrapKind to trap, or REEF_RT_CANCELLED. It never
 * unwinds. */
typedef struct reef_rt_host {
  uint32_t (*call_import)(struct reef_rt_host* host, uint32_t index, const reef_rt_value* args,
                          reef_rt_value* results);
  /* The fuel ran out at a check (called through the glue's reef_glue_out_of_fuel, which the
   * meter table holds). Returns when the invocation goes on; unwinds otherwise. */
  void (*out_of_fuel)(struct reef_rt_host* host);
} reef_rt_host;

/* call_import's value when the invocation is being cancelled while suspended in the host
 * call: the glue unwinds (reef_rt_trap_host) without a trap of the guest's. */
#define REEF_RT_CANCELLED 0xffffffffu

/* The host of the invocation running on this thread (null outside one). Import functions
 * use it rather than the instance pointer wasm2c passes them: wabt 1.0.32 passes a wrong one
 * when an imported function is called through a table (its elem segments and ref.func give
 * the address of the import's instance field, or the calling instance itself). */
reef_rt_host* reef_rt_current_host(void);

/* Unwinds like wasm_rt_trap with a Reef trap kind (the value call_import returned), or
 * cancels the invocation (REEF_RT_CANCELLED). */
WASM_RT_NO_RETURN void reef_rt_trap_host(uint32_t trap);

/* ---- Registers of the generated code ---------------------------------------------------
 * Only in the translation unit that compiles a module (the compiler defines
 * REEF_RT_GENERATED_CODE). With GCC on x86-64 the generated code keeps the fuel and the call
 * depth in two callee-saved registers, r15 and r14 (GCC global register variables), instead
 * of reading and writing memory in every block and call: metering then costs a register
 * subtraction and a branch. Their homes in memory are *reef_rt_fuel_home and
 * wasm_rt_call_stack_depth; the glue keeps both in step at every border:
 *   REEF_RT_CODE_ENTER / REEF_RT_CODE_EXIT   around a host call into the code (export thunks
 *       and the start function): load the registers from their homes, then store them and
 *       give the caller back its own r14/r15 (it expects callee-saved registers unchanged);
 *   REEF_RT_HOST_CALL_BEGIN / REEF_RT_HOST_CALL_END   around a call out of the code (an
 *       import, the out-of-fuel function): store them, then reload the fuel, which the host
 *       may have refilled;
 *   REEF_RT_STORE_FUEL   before anything that may unwind (a trap, a growth that may trap).
 * reef_rt_fuel_stored says r15 does not hold the fuel now (the host runs): a stack-overflow
 * fault takes r15 as the fuel only while it is 0. A trap's longjmp restores the registers
 * the runtime's setjmp saw, which are the host's. Elsewhere (clang has no global register
 * variables; -DREEF_RT_NO_REGISTERS) the macros use the homes directly. */
#if defined(REEF_RT_GENERATED_CODE)
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && \
    !defined(REEF_RT_NO_REGISTERS)
#define REEF_RT_REGISTERS 1
register int64_t reef_rt_fuel __asm__("r15");
register uint64_t reef_rt_depth __asm__("r14");
#define REEF_RT_DEPTH reef_rt_depth
#define REEF_RT_STORE_FUEL() \
  (reef_rt_fuel_home != NULL ? (void)(*reef_rt_fuel_home = reef_rt_fuel) : (void)0)
#define REEF_RT_CODE_ENTER()                                                 \
  const int64_t reef_rt_caller_fuel = reef_rt_fuel;                          \
  const uint64_t reef_rt_caller_depth = reef_rt_depth;                       \
  reef_rt_fuel = reef_rt_fuel_home != NULL ? *reef_rt_fuel_home : INT64_MAX; \
  reef_rt_depth = wasm_rt_call_stack_depth;                                  \
  reef_rt_fuel_stored = 0
#define REEF_RT_HOST_CALL_BEGIN()                                            \
  (REEF_RT_STORE_FUEL(), wasm_rt_call_stack_depth = (uint32_t)reef_rt_depth, \
   reef_rt_fuel_stored = 1)
#define REEF_RT_CODE_EXIT()           \
  REEF_RT_HOST_CALL_BEGIN();          \
  reef_rt_fuel = reef_rt_caller_fuel; \
  reef_rt_depth = reef_rt_caller_depth
#define REEF_RT_HOST_CALL_END()                                                  \
  (reef_rt_fuel = reef_rt_fuel_home != NULL ? *reef_rt_fuel_home : reef_rt_fuel, \
   reef_rt_fuel_stored = 0)
/* The runtime's growth functions may trap (too little stack left for them). */
#define wasm_rt_grow_memory(m, d) (REEF_RT_STORE_FUEL(), (wasm_rt_grow_memory)(m, d))
#define wasm_rt_grow_funcref_table(t, d, i) \
  (REEF_RT_STORE_FUEL(), (wasm_rt_grow_funcref_table)(t, d, i))
#define wasm_rt_grow_externref_table(t, d, i) \
  (REEF_RT_STORE_FUEL(), (wasm_rt_grow_externref_table)(t, d, i))
#else
#define REEF_RT_REGISTERS 0
#define REEF_RT_DEPTH wasm_rt_call_stack_depth
#define REEF_RT_STORE_FUEL() ((void)0)
#define REEF_RT_CODE_ENTER() ((void)0)
#define REEF_RT_CODE_EXIT() ((void)0)
#define REEF_RT_HOST_CALL_BEGIN() ((void)0)
#define REEF_RT_HOST_CALL_END() ((void)0)
#endif
#endif

#ifdef __cplusplus
}
#endif

#endif /* REEF_WASM_NATIVE_RT_WASM_RT_H_ */
