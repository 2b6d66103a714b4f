# Reef's front door. Every target installs what is missing first (scripts/setup.sh is
# idempotent and takes well under a second when nothing is missing).
#
#   make run     build, then start `reef serve` with the example modules uploaded (scripts/run.sh)
#   make test    build, run every test (release), then one clang ASan+UBSan build that runs the
#                unit tests and a 5 s smoke of each fuzzer, then the ThreadSanitizer build of the
#                threaded runtime's tests; both clang builds compile src/ with clang's
#                thread-safety analysis as errors, and scripts/thread_safety.sh checks the src/
#                units they do not compile
#   make bench   build and run the benchmarks, printing each figure
#   make fuzz    build the libFuzzer targets and run each for FUZZ_SECONDS (default 60)

JOBS ?= $(shell nproc)
# Compiles one job more than there are cores, so a core is not idle while a job links or waits.
BUILD_JOBS ?= $(shell echo $$(( $(JOBS) + 1 )))
BUILD ?= build
# One clang build with ASan+UBSan serves both the sanitized unit tests and the fuzzers.
ASAN_BUILD ?= build-asan
# The million-message runtime test runs in the release build only: under a sanitizer it takes
# minutes. Its hundred-thousand-message twin runs in the release and TSan builds; under ASan it
# took 41 s, a fifth of the ASan run, while the runtime's other tests there cover the same
# message paths.
# The effect worker trapping 10,000 times (28 s under ASan) runs in the release build on both
# tiers; the ASan run keeps the other trap and retry tests.
ASAN_EXCLUDE ?= *TenThousandActorsExchange*:*AnEffectWorkerThatTraps10000Times*
FUZZ_BUILD ?= $(ASAN_BUILD)
FUZZ_SECONDS ?= 60
FUZZ_SMOKE_SECONDS ?= 5
# These also run on the native tier under ASan: invocations on fibers that end at shutdown
# (fibers started on one thread must unwind there), calls that suspend across reactors, and
# commands, projectors and effects, whose guest calls run on reactors and suspend for SQL and
# appends.
ASAN_NATIVE_TESTS ?= FreeRunningTest.Destroying*:Modes/CallTest.*:ModuleRuntimeTest.*Command*:ModuleRuntimeTest.*Projector*:ModuleRuntimeTest.*Effect*:-ModuleRuntimeTest.ProjectorIsExactlyOnceAcrossSigkill:ModuleRuntimeTest.AnEffectWorkerThatTraps10000TimesStillDeliversAfterwards
# The ASan build compiles at -O0: clang's ASan+UBSan instrumentation of Beast-heavy code takes
# about 3x the CPU at -O1 (66 s against 23 s for one server source), and the unit tests it runs
# are not compute-bound.
ASAN_FLAGS := -DCMAKE_BUILD_TYPE=RelWithDebInfo -DREEF_BENCH=OFF \
  -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O0 -g1" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O0 -g1"
# ThreadSanitizer at -O1 (its advice; -O0 would slow the threaded stress tests it runs).
TSAN_FLAGS := -DCMAKE_BUILD_TYPE=RelWithDebInfo -DREEF_BENCH=OFF \
  -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1"
CMAKE_FLAGS ?=
# The sanitizer builds take the release build's wasm guests instead of compiling them again
# (cmake/guest.cmake), so their targets depend on `build`.
SANITIZER_GUESTS = -DREEF_PREBUILT_GUEST_DIR=$(abspath $(BUILD))/guests

.PHONY: setup build run test test-fast test-thread-safety test-thread-safety-rest asan-configure test-asan test-tsan bench fuzz fuzz-build fuzz-smoke format clean

setup:
	@bash scripts/setup.sh

build: setup
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j $(BUILD_JOBS)

run: build
	@bash scripts/run.sh $(BUILD)

# One test more than there are cores: a fifth of the tests' time is spent waiting (timeouts,
# servers starting, the C compiler's pipes), so two at a time left the cores idle (276 s
# against 248 s for the release tests on this 2-core machine).
TEST_JOBS ?= $(BUILD_JOBS)
# The sanitizer runs likewise, one shard more than there are cores: with two shards the cores
# idled 17% (ASan) and 23% (TSan) of the time, with three 4% and 6% (150 -> 133 s and
# 101 -> 73 s on this machine).
SHARDS ?= $(BUILD_JOBS)

test-fast: build
	@cd $(BUILD) && ctest --output-on-failure -j $(TEST_JOBS)

# Clang's -Wthread-safety, as errors, over every src/ translation unit: the GUARDED_BY members
# and REQUIRES functions (src/core/thread_annotations.h) checked against the locks taken. It
# reruns the release build's compile commands with clang++-16 -fsyntax-only (no code made).
test-thread-safety: build
	@bash scripts/thread_safety.sh $(BUILD) $(JOBS)

# The same check for `make test`, which has compiled most of src/ with clang (and the flag) in
# its sanitizer builds by then: only the units neither of them compiled are parsed again.
test-thread-safety-rest: build
	@bash scripts/thread_safety.sh --skip-compiled-in $(ASAN_BUILD) --skip-compiled-in $(TSAN_BUILD) \
	  $(BUILD) $(JOBS)

# Configures the clang ASan+UBSan+libFuzzer build (ASAN_BUILD, shared with the fuzz targets).
asan-configure: build
	@cmake -S . -B $(ASAN_BUILD) -G Ninja $(ASAN_FLAGS) -DREEF_SANITIZE=ON -DREEF_FUZZ=ON \
	  -DCMAKE_C_COMPILER=clang-16 -DCMAKE_CXX_COMPILER=clang++-16 $(SANITIZER_GUESTS) \
	  $(CMAKE_FLAGS) >/dev/null

# The unit tests run as one process per shard (scripts/test_shards.sh): starting the
# sanitized binary once per test, as ctest does, cost more than the tests.
test-asan: asan-configure
	@cmake --build $(ASAN_BUILD) -j $(BUILD_JOBS) --target reef_unit_tests
	@bash scripts/test_shards.sh $(ASAN_BUILD)/tests/reef_unit_tests $(SHARDS) "-$(ASAN_EXCLUDE)" \
	  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1; status=$$?; \
	  bash scripts/pg_cluster.sh stop $(ASAN_BUILD)/pg-test; exit $$status
	@SHARD_LOG=$(ASAN_BUILD)/tests/reef_unit_tests.native \
	  bash scripts/test_shards.sh $(ASAN_BUILD)/tests/reef_unit_tests 1 '$(ASAN_NATIVE_TESTS)' \
	  REEF_TEST_ENGINE=native ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1

# ThreadSanitizer run of the threaded runtime's tests (the engine itself is reactor-owned), from
# their own binary (tests/CMakeLists.txt REEF_TSAN_TEST_SOURCES), sharded like the ASan run.
# The effect worker trapping 10,000 times (28 s under TSan) is left to the release build; the
# other effect tests cover the dispatcher and its workers here.
TSAN_BUILD ?= build-tsan
TSAN_TESTS ?= FreeRunning*:ManualGroupTest.*:JournalTest.*:DurableImageTest.*:AsyncOpTest.*:SerialQueueTest.*:Modes/CallTest.*:Broadcast*:LogStore*:Lifecycle*:RuntimeTest*:EventStoreTest.*:Backends/AnyStoreTest.*:PgEventStoreTest.*:ModuleRuntimeTest.*:ModuleRoutesTest.*:UnitSupportTest.*:ProgramRuntimeTest.*:ServerTest.*:ServerAccessTest.*:ServerLimitsTest.*:ServerBodyBudgetTest.*:Native*:-ModuleRuntimeTest.ProjectorIsExactlyOnceAcrossSigkill:FreeRunningTest.TenThousandActorsExchangeAMillion*:ModuleRuntimeTest.AnEffectWorkerThatTraps10000Times*
test-tsan: build
	@cmake -S . -B $(TSAN_BUILD) -G Ninja $(TSAN_FLAGS) -DREEF_TSAN=ON $(SANITIZER_GUESTS) \
	  $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(TSAN_BUILD) -j $(BUILD_JOBS) --target reef_tsan_tests
	@bash scripts/test_shards.sh $(TSAN_BUILD)/tests/reef_tsan_tests $(SHARDS) '$(TSAN_TESTS)' \
	  TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1"; status=$$?; \
	  bash scripts/pg_cluster.sh stop $(TSAN_BUILD)/pg-test; exit $$status

fuzz-build: asan-configure
	@cmake --build $(FUZZ_BUILD) -j $(BUILD_JOBS) --target reef_fuzzers

fuzz: fuzz-build
	@FUZZ_GUESTS=$(abspath $(BUILD))/guests bash scripts/fuzz.sh $(FUZZ_BUILD) $(FUZZ_SECONDS)

fuzz-smoke: fuzz-build
	@FUZZ_SEED=1 FUZZ_JOBS=$(JOBS) FUZZ_GUESTS=$(abspath $(BUILD))/guests \
	  bash scripts/fuzz.sh $(FUZZ_BUILD) $(FUZZ_SMOKE_SECONDS)

test: test-fast test-asan fuzz-smoke test-tsan test-thread-safety-rest

bench: build
	@cmake --build $(BUILD) -j $(BUILD_JOBS) --target reef_benches
	@bash scripts/bench.sh $(BUILD)

format:
	@find src tests bench fuzz sdk examples -name '*.h' -o -name '*.cc' -o -name '*.c' | xargs clang-format-16 -i

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(TSAN_BUILD) $(FUZZ_BUILD)
