/* Reef C guest SDK: the per-invocation bump arena, the C library memory functions that clang
 * may call even in freestanding code, and reef_strerror (reef_base.h). */
#include "reef_base.h"

/* Defined by wasm-ld: the first byte after the data segments and the stack. */
extern unsigned char __heap_base;

#define REEF_PAGE_SIZE 65536u
#define REEF_ALIGN 8u

static uint32_t arena_top;  /* next free byte; 0 until the first reset */
static uint32_t last_block; /* start of the newest block, for in-place growth */

/* Makes linear memory at least `end` bytes long. Returns false when it cannot grow. */
static bool ensure_memory(uint64_t end) {
  uint64_t have = (uint64_t)__builtin_wasm_memory_size(0) * REEF_PAGE_SIZE;
  if (end <= have) return true;
  if (end > 0x100000000ull) return false;
  uint64_t pages = (end - have + REEF_PAGE_SIZE - 1) / REEF_PAGE_SIZE;
  return __builtin_wasm_memory_grow(0, (size_t)pages) != (size_t)-1;
}

static uint32_t heap_start(void) {
  uint32_t base = (uint32_t)(uintptr_t)&__heap_base;
  return (base + REEF_ALIGN - 1) & ~(REEF_ALIGN - 1);
}

void* reef_arena_alloc(uint32_t size) {
  if (arena_top == 0) arena_top = heap_start();
  uint64_t start = arena_top;
  uint64_t end = (start + size + REEF_ALIGN - 1) & ~(uint64_t)(REEF_ALIGN - 1);
  if (!ensure_memory(end)) return NULL;
  arena_top = (uint32_t)end;
  last_block = (uint32_t)start;
  return (void*)(uintptr_t)start;
}

void* reef_arena_grow(void* ptr, uint32_t old_size, uint32_t new_size) {
  if (ptr == NULL) return reef_arena_alloc(new_size);
  uint32_t at = (uint32_t)(uintptr_t)ptr;
  if (at == last_block) {
    uint64_t end = ((uint64_t)at + new_size + REEF_ALIGN - 1) & ~(uint64_t)(REEF_ALIGN - 1);
    if (!ensure_memory(end)) return NULL;
    if (end > arena_top) arena_top = (uint32_t)end;
    return ptr;
  }
  void* fresh = reef_arena_alloc(new_size);
  if (fresh == NULL) return NULL;
  __builtin_memcpy(fresh, ptr, old_size < new_size ? old_size : new_size);
  return fresh;
}

void* reef_arena_reset_and_alloc(uint32_t size) {
  arena_top = heap_start();
  last_block = 0;
  return reef_arena_alloc(size);
}

const char* reef_strerror(int code) {
  switch (code) {
    case REEF_OK:
      return "ok";
    case REEF_E_INVALID:
      return "invalid argument";
    case REEF_E_LIMIT:
      return "limit exceeded";
    case REEF_E_MALFORMED:
      return "malformed CBOR";
    case REEF_E_TYPE:
      return "wrong kind of value";
    case REEF_E_RANGE:
      return "number out of range";
    case REEF_E_NOT_FOUND:
      return "field not found";
    case REEF_E_NOMEM:
      return "out of memory";
    case REEF_E_END:
      return "no more input";
    case REEF_E_UNAVAILABLE:
      return "the target took no message";
    case REEF_E_TIMEOUT:
      return "no reply within the timeout";
    case REEF_E_NO_REPLY:
      return "the callee ended without replying";
    case REEF_E_CYCLE:
      return "call cycle";
    default:
      return "unknown error";
  }
}

/* ---- C library memory functions ---------------------------------------------------------
 * clang lowers struct copies and large initializers to calls of these even with
 * -ffreestanding. no_builtin keeps the loops below from being turned back into such calls. */

__attribute__((no_builtin("memcpy"))) void* memcpy(void* restrict dst, const void* restrict src,
                                                   size_t n) {
  unsigned char* d = dst;
  const unsigned char* s = src;
  while (n--) *d++ = *s++;
  return dst;
}

__attribute__((no_builtin("memmove"))) void* memmove(void* dst, const void* src, size_t n) {
  unsigned char* d = dst;
  const unsigned char* s = src;
  if (d < s) {
    while (n--) *d++ = *s++;
  } else {
    while (n--) d[n] = s[n];
  }
  return dst;
}

__attribute__((no_builtin("memset"))) void* memset(void* dst, int c, size_t n) {
  unsigned char* d = dst;
  while (n--) *d++ = (unsigned char)c;
  return dst;
}

__attribute__((no_builtin("memcmp"))) int memcmp(const void* a, const void* b, size_t n) {
  const unsigned char* x = a;
  const unsigned char* y = b;
  for (size_t i = 0; i < n; i++) {
    if (x[i] != y[i]) return x[i] < y[i] ? -1 : 1;
  }
  return 0;
}
