// The native tier's compile service: compiles off the caller's thread, a bounded queue,
// shutdown that answers every accepted request.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <thread>
#include <vector>

#include "unit/wasm/native_support.h"
#include "wasm/native/compile_service.h"

namespace reef::wasm::native::compile_service_test {
namespace {

using native_test::ParseWat;
using namespace std::chrono_literals;

constexpr std::string_view kAddWat = R"((module
  (func (export "add") (param i32 i32) (result i32) local.get 0 local.get 1 i32.add)
))";

class NativeCompileServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto temp = TempDir::Create();
    ASSERT_TRUE(temp.ok()) << temp.status().ToString();
    temp_ = std::make_unique<TempDir>(std::move(*temp));
    auto cache = CodeCache::Open(temp_->path() / "native");
    ASSERT_TRUE(cache.ok()) << cache.status().ToString();
    cache_ = std::move(*cache);
    module_ = ParseWat(kAddWat);
    ASSERT_NE(module_, nullptr);
  }

  CompileRequest Request(IrPass pass = {}) const {
    CompileRequest request;
    request.module = module_;
    request.options.optimization = 0;
    request.pass = std::move(pass);
    return request;
  }

  static CompileServiceOptions Options(size_t workers, size_t max_queued) {
    CompileServiceOptions options;
    options.workers = workers;
    options.max_queued = max_queued;
    return options;
  }

  std::unique_ptr<TempDir> temp_;
  std::shared_ptr<CodeCache> cache_;
  std::shared_ptr<const Module> module_;
};

// Runs a callback's result into a future the test can wait on, noting the thread it ran on.
struct Answer {
  std::promise<Result<CacheResult>> promise;
  std::thread::id thread;
  CompileCallback Callback() {
    return [this](Result<CacheResult> result) {
      thread = std::this_thread::get_id();
      promise.set_value(std::move(result));
    };
  }
};

// An IR pass that holds the worker running it until Release, then fails its request.
class WorkerHold {
 public:
  IrPass Pass() {
    return [this](wabt::Module&) {
      entered_.set_value();
      released_.wait();
      return Status::FailedPrecondition("held request stops here");
    };
  }
  void WaitEntered() { entered_.get_future().wait(); }
  void Release() { release_.set_value(); }

 private:
  std::promise<void> entered_;
  std::promise<void> release_;
  std::shared_future<void> released_ = release_.get_future().share();
};

TEST_F(NativeCompileServiceTest, CompilesOnAWorkerAndTheSecondRequestHits) {
  CompileService service(cache_, Options(2, 4));
  EXPECT_EQ(service.workers(), 2u);
  Answer first;
  Answer second;

  ASSERT_TRUE(service.Submit(Request(), first.Callback()).ok());
  auto compiled = first.promise.get_future().get();
  ASSERT_TRUE(service.Submit(Request(), second.Callback()).ok());
  auto hit = second.promise.get_future().get();

  ASSERT_TRUE(compiled.ok()) << compiled.status().ToString();
  EXPECT_EQ(compiled->outcome, CacheOutcome::kCompiled);
  EXPECT_NE(first.thread, std::this_thread::get_id());
  ASSERT_TRUE(hit.ok()) << hit.status().ToString();
  EXPECT_EQ(hit->outcome, CacheOutcome::kHit);
  EXPECT_EQ(hit->module, compiled->module);
  EXPECT_EQ(service.stats().completed, 2u);
}

TEST_F(NativeCompileServiceTest, FullQueueRefusesAndShutdownAnswersWhatWaited) {
  CompileService service(cache_, Options(1, 2));
  // The one worker is held inside the first request's IR pass until released.
  WorkerHold hold;
  Answer running;
  ASSERT_TRUE(service.Submit(Request(hold.Pass()), running.Callback()).ok());
  hold.WaitEntered();
  std::atomic<int> cancelled{0};
  auto count_cancelled = [&cancelled](Result<CacheResult> result) {
    if (result.status().code() == Code::kUnavailable &&
        result.status().message().find("shut down before compiling") != std::string::npos) {
      ++cancelled;
    }
  };
  ASSERT_TRUE(service.Submit(Request(), count_cancelled).ok());
  ASSERT_TRUE(service.Submit(Request(), count_cancelled).ok());

  Status full = service.Submit(Request(), count_cancelled);

  EXPECT_EQ(full.code(), Code::kLimitExceeded);
  EXPECT_NE(full.message().find("compile queue full: 2 requests waiting"), std::string::npos);

  std::thread stopper([&service] { service.Shutdown(); });
  while (service.Submit(Request(), count_cancelled).code() != Code::kUnavailable) {
    std::this_thread::sleep_for(1ms);  // until Shutdown has stopped accepting
  }
  hold.Release();
  stopper.join();

  EXPECT_EQ(running.promise.get_future().get().status().code(), Code::kFailedPrecondition);
  EXPECT_EQ(cancelled.load(), 2);
  EXPECT_EQ(service.stats().cancelled, 2u);
  EXPECT_EQ(service.Submit(Request(), count_cancelled).code(), Code::kUnavailable);
}

// A request the cache can answer never waits behind a compile: the lookup thread answers it
// while the only worker is busy.
TEST_F(NativeCompileServiceTest, ACacheHitIsAnsweredWhileTheWorkerCompiles) {
  CompileOptions options = Request().options;
  ASSERT_TRUE(cache_->GetOrCompile(module_, options, {}, 0).ok());  // on disk now
  CompileService service(cache_, Options(1, 4));
  WorkerHold hold;
  Answer busy;
  ASSERT_TRUE(service.Submit(Request(hold.Pass()), busy.Callback()).ok());
  hold.WaitEntered();

  Answer hit;
  ASSERT_TRUE(service.Submit(Request(), hit.Callback()).ok());
  std::future<Result<CacheResult>> answered = hit.promise.get_future();
  const bool in_time = answered.wait_for(20s) == std::future_status::ready;

  hold.Release();
  ASSERT_TRUE(in_time) << "the hit waited for the worker";
  Result<CacheResult> result = answered.get();
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(result->outcome, CacheOutcome::kHit);
  EXPECT_EQ(busy.promise.get_future().get().status().code(), Code::kFailedPrecondition);
  EXPECT_EQ(service.stats().completed, 2u);
}

TEST_F(NativeCompileServiceTest, ShutdownKillsACompilerInProgressAndRemovesItsFiles) {
  // A compiler that notes its working directory (the compile's temporary directory) and hangs.
  const auto fake = temp_->path() / "hanging-cc";
  const auto noted = temp_->path() / "cwd";
  std::ofstream(fake)
      << "#!/bin/sh\nif [ \"$1\" = --version ]; then echo hanging-cc 1; exit 0; fi\n"
      << "pwd > " << noted.string() << ".tmp && mv " << noted.string() << ".tmp " << noted.string()
      << "\nexec sleep 60\n";
  ASSERT_EQ(chmod(fake.c_str(), 0700), 0);
  CompileService service(cache_, Options(1, 2));
  CompileRequest request = Request();
  request.options.compiler = fake.string();
  Answer answer;
  ASSERT_TRUE(service.Submit(std::move(request), answer.Callback()).ok());
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (!std::filesystem::exists(noted) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }
  ASSERT_TRUE(std::filesystem::exists(noted)) << "the compiler never started";
  std::string directory;
  std::getline(std::ifstream(noted), directory);
  ASSERT_TRUE(std::filesystem::exists(directory)) << directory;
  const auto start = std::chrono::steady_clock::now();

  service.Shutdown();

  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s) << "Shutdown waited for the compiler";
  auto result = answer.promise.get_future().get();
  EXPECT_EQ(result.status().code(), Code::kUnavailable) << result.status().ToString();
  EXPECT_NE(result.status().message().find("shutting down"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(directory)) << directory << " was left behind";
}

TEST_F(NativeCompileServiceTest, BadRequestsAreRefusedAtSubmit) {
  CompileService service(cache_, Options(1, 4));
  CompileRequest no_module = Request();
  no_module.module = nullptr;

  EXPECT_EQ(service.Submit(no_module, [](Result<CacheResult>) {}).code(), Code::kInvalidArgument);
  EXPECT_EQ(service.Submit(Request(), nullptr).code(), Code::kInvalidArgument);
  EXPECT_EQ(service.stats().rejected, 2u);
}

TEST_F(NativeCompileServiceTest, DefaultWorkersAreHalfTheHardwareThreads) {
  CompileService service(cache_);

  EXPECT_EQ(service.workers(), std::max(1u, std::thread::hardware_concurrency() / 2));
}

}  // namespace
}  // namespace reef::wasm::native::compile_service_test
