// Access to private members of wabt 1.0.32's interp::Thread.
//
// wabt has no public API to start a call without running it to completion, to inspect the
// call stack, or to bound the call stack per thread. These accessors use the standard rule
// that explicit template instantiations may name private members ([temp.spec.general]/6):
// each `Steal<Tag, &Class::member>` instantiation defines a friend `Get(Tag)` returning the
// member pointer. This ties Reef to wabt 1.0.32's layout: CMake requires exactly 1.0.32, and
// the engine tests (suspension, call depth, telemetry) exercise every accessor.
//
// Thread ownership: stateless.
#pragma once

#include <vector>

#include "wabt/interp/interp.h"

namespace reef::wasm::detail {

namespace interp = ::wabt::interp;

template <typename Tag, typename Tag::type Member>
struct Steal {
  friend typename Tag::type Get(Tag) { return Member; }
};

struct ThreadFrames {
  using type = std::vector<interp::Frame> interp::Thread::*;
  friend type Get(ThreadFrames);
};
struct ThreadValues {
  using type = std::vector<interp::Value> interp::Thread::*;
  friend type Get(ThreadValues);
};
struct ThreadRefs {
  using type = std::vector<interp::u32> interp::Thread::*;
  friend type Get(ThreadRefs);
};
struct ThreadExceptions {
  using type = interp::RefVec interp::Thread::*;
  friend type Get(ThreadExceptions);
};
struct ThreadPushValues {
  using type = void (interp::Thread::*)(const interp::ValueTypes&, const interp::Values&);
  friend type Get(ThreadPushValues);
};
struct ThreadPopValues {
  using type = void (interp::Thread::*)(const interp::ValueTypes&, interp::Values*);
  friend type Get(ThreadPopValues);
};
struct ThreadPushDefinedCall {
  using type = interp::RunResult (interp::Thread::*)(const interp::DefinedFunc&,
                                                     interp::Trap::Ptr*);
  friend type Get(ThreadPushDefinedCall);
};
struct ThreadPopCall {
  using type = interp::RunResult (interp::Thread::*)();
  friend type Get(ThreadPopCall);
};

template struct Steal<ThreadFrames, &interp::Thread::frames_>;
template struct Steal<ThreadValues, &interp::Thread::values_>;
template struct Steal<ThreadRefs, &interp::Thread::refs_>;
template struct Steal<ThreadExceptions, &interp::Thread::exceptions_>;
template struct Steal<ThreadPushValues, &interp::Thread::PushValues>;
template struct Steal<ThreadPopValues, &interp::Thread::PopValues>;
template struct Steal<ThreadPushDefinedCall, &interp::Thread::PushCall>;
template struct Steal<ThreadPopCall, &interp::Thread::PopCall>;

inline std::vector<interp::Frame>& Frames(interp::Thread& t) {
  return t.*Get(ThreadFrames{});
}
inline std::vector<interp::Value>& Values(interp::Thread& t) {
  return t.*Get(ThreadValues{});
}
inline std::vector<interp::u32>& Refs(interp::Thread& t) {
  return t.*Get(ThreadRefs{});
}
inline interp::RefVec& Exceptions(interp::Thread& t) {
  return t.*Get(ThreadExceptions{});
}

inline void PushValues(interp::Thread& t, const interp::ValueTypes& types,
                       const interp::Values& values) {
  (t.*Get(ThreadPushValues{}))(types, values);
}
inline void PopValues(interp::Thread& t, const interp::ValueTypes& types, interp::Values* out) {
  (t.*Get(ThreadPopValues{}))(types, out);
}
inline interp::RunResult PushCall(interp::Thread& t, const interp::DefinedFunc& func,
                                  interp::Trap::Ptr* out_trap) {
  return (t.*Get(ThreadPushDefinedCall{}))(func, out_trap);
}
inline interp::RunResult PopCall(interp::Thread& t) {
  return (t.*Get(ThreadPopCall{}))();
}

}  // namespace reef::wasm::detail
