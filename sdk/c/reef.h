/* Reef C guest SDK: include this one header to write an actor.
 *
 * Concept: everything a C guest needs for ABI v1 (docs/abi.md) without seeing the ABI:
 *   reef_base.h    spans, text slices, actor refs, error codes, the per-invocation arena
 *   reef_cbor.h    reading values (cursor with typed reads, record field lookup, skip)
 *   reef_writer.h  writing values (growable arena buffer)
 *   reef_actor.h   REEF_ACTOR entry point, send / send_from / self / log / fail
 *   reef_module.h  REEF_COMMAND / REEF_PROJECTOR / REEF_EFFECT, events, queries, SQL
 * Thread ownership: guests are single-threaded; nothing here locks.
 *
 * Build: freestanding C11 for wasm32, the SDK sources (reef_*.c) compiled into every guest,
 * linked by wasm-ld without an entry point. From the repository root (docs/quickstart.md
 * "Build a module yourself", which a test runs):
 *   clang-16 --target=wasm32 -std=c11 -O2 -ffreestanding -nostdlib -mbulk-memory \
 *     -Wl,--no-entry -Wl,--export-dynamic -Wl,--stack-first -Wl,-z,stack-size=16384 \
 *     -I sdk/c -o mine.wasm mine.c sdk/c/reef_*.c
 * No libc: the SDK itself provides memcpy, memmove, memset and memcmp. */
#ifndef REEF_H
#define REEF_H

#include "reef_actor.h"
#include "reef_base.h"
#include "reef_cbor.h"
#include "reef_module.h"
#include "reef_writer.h"

#endif /* REEF_H */
