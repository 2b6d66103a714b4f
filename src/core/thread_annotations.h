// Thread-safety annotations: the attributes clang's -Wthread-safety analysis checks
// (https://clang.llvm.org/docs/ThreadSafetyAnalysis.html), as macros that expand to nothing on
// compilers without them (GCC builds the release tree; `make test` runs the clang check,
// scripts/thread_safety.sh).
//
// A lock is a "capability" (reef::Mutex, reef::SharedMutex in core/mutex.h; std::mutex is not
// one in libstdc++, so annotations naming it check nothing). The analysis then proves, per
// function and at compile time, that:
//   GUARDED_BY(mu)         this member is read only with `mu` held (shared or exclusive) and
//                          written only with `mu` held exclusively;
//   PT_GUARDED_BY(mu)      the same for what this pointer member points to;
//   REQUIRES(mu)           callers hold `mu` exclusively (REQUIRES_SHARED: at least shared);
//   EXCLUDES(mu)           callers do not hold `mu` (the function takes it itself);
//   ACQUIRE / RELEASE      the function takes / gives back the lock (its _SHARED forms for
//                          reader locks); TRY_ACQUIRE(ok) when it returns `ok` on success;
//   ACQUIRED_BEFORE/AFTER  lock order between two locks (checked with -Wthread-safety-beta);
//   CAPABILITY, SCOPED_CAPABILITY  on the lock types and their RAII lockers;
//   NO_THREAD_SAFETY_ANALYSIS  skips one function the analysis cannot follow (say why).
// Constructors and destructors are not analysed: they run before and after the object is
// shared. Lambdas are analysed as functions of their own, with no lock held.
//
// Thread ownership: macros only.
#pragma once

#if defined(__clang__)
#define REEF_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define REEF_THREAD_ANNOTATION(x)
#endif

// ---- On data members ----------------------------------------------------------------------------
#define GUARDED_BY(x) REEF_THREAD_ANNOTATION(guarded_by(x))
#define PT_GUARDED_BY(x) REEF_THREAD_ANNOTATION(pt_guarded_by(x))
#define ACQUIRED_BEFORE(...) REEF_THREAD_ANNOTATION(acquired_before(__VA_ARGS__))
#define ACQUIRED_AFTER(...) REEF_THREAD_ANNOTATION(acquired_after(__VA_ARGS__))

// ---- On functions -------------------------------------------------------------------------------
#define REQUIRES(...) REEF_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define REQUIRES_SHARED(...) REEF_THREAD_ANNOTATION(requires_shared_capability(__VA_ARGS__))
#define EXCLUDES(...) REEF_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define ACQUIRE(...) REEF_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define ACQUIRE_SHARED(...) REEF_THREAD_ANNOTATION(acquire_shared_capability(__VA_ARGS__))
#define RELEASE(...) REEF_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define RELEASE_SHARED(...) REEF_THREAD_ANNOTATION(release_shared_capability(__VA_ARGS__))
#define RELEASE_GENERIC(...) REEF_THREAD_ANNOTATION(release_generic_capability(__VA_ARGS__))
#define TRY_ACQUIRE(...) REEF_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
#define TRY_ACQUIRE_SHARED(...) REEF_THREAD_ANNOTATION(try_acquire_shared_capability(__VA_ARGS__))
#define ASSERT_CAPABILITY(x) REEF_THREAD_ANNOTATION(assert_capability(x))
#define ASSERT_SHARED_CAPABILITY(x) REEF_THREAD_ANNOTATION(assert_shared_capability(x))
#define RETURN_CAPABILITY(x) REEF_THREAD_ANNOTATION(lock_returned(x))
#define NO_THREAD_SAFETY_ANALYSIS REEF_THREAD_ANNOTATION(no_thread_safety_analysis)

// ---- On types -----------------------------------------------------------------------------------
#define CAPABILITY(x) REEF_THREAD_ANNOTATION(capability(x))
#define SCOPED_CAPABILITY REEF_THREAD_ANNOTATION(scoped_lockable)
