// The native tier's compile cache: hits, verification of every entry before it is loaded,
// keys, concurrency and the size bound. Each test compiles a tiny module at -O0.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "unit/wasm/native_support.h"
#include "wasm/native/code_cache.h"
#include "wasm/native/detail/cache_files.h"
#include "wasm/native/rt/runtime.h"
#include "wasm/native/rt/wasm-rt.h"

namespace reef::wasm::native::code_cache_test {
namespace {

using native_test::ParseWat;

constexpr std::string_view kAddWat = R"((module
  (import "reef" "log" (func (param i32)))
  (func (export "add") (param i32 i32) (result i32) local.get 0 local.get 1 i32.add)
))";

constexpr std::string_view kSubWat = R"((module
  (func (export "sub") (param i32 i32) (result i32) local.get 0 local.get 1 i32.sub)
))";

CompileOptions Fast() {
  CompileOptions options;
  options.optimization = 0;
  return options;
}

std::string ReadText(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Overwrites the (read-only) file in place, as damage from outside Reef would.
void WriteText(const std::filesystem::path& path, std::string_view text) {
  std::filesystem::permissions(path, std::filesystem::perms::owner_write,
                               std::filesystem::perm_options::add);
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

class NativeCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto temp = TempDir::Create();
    ASSERT_TRUE(temp.ok()) << temp.status().ToString();
    temp_ = std::make_unique<TempDir>(std::move(*temp));
    dir_ = temp_->path() / "cache" / "native";
    add_ = ParseWat(kAddWat);
    ASSERT_NE(add_, nullptr);
  }

  // A fresh CodeCache over the directory: what a restarted process sees.
  std::unique_ptr<CodeCache> OpenCache(CodeCacheOptions options = {}) {
    auto cache = CodeCache::Open(dir_, options);
    EXPECT_TRUE(cache.ok()) << cache.status().ToString();
    return cache.ok() ? std::move(*cache) : nullptr;
  }

  Result<CacheResult> Get(CodeCache& cache, const std::shared_ptr<const Module>& module) {
    return cache.GetOrCompile(module, Fast(), {}, 0);
  }

  // Compiles add_ into the directory and unloads it again (its file must not be mapped when
  // a test damages it, as after a restart). Returns its key.
  std::string CompileAndUnload() {
    auto compiled = Get(*OpenCache(), add_);
    EXPECT_TRUE(compiled.ok()) << compiled.status().ToString();
    return compiled.ok() ? compiled->key : "";
  }

  std::filesystem::path Library(const std::string& key) const { return dir_ / (key + ".so"); }
  std::filesystem::path Manifest(const std::string& key) const { return dir_ / (key + ".json"); }

  std::unique_ptr<TempDir> temp_;
  std::filesystem::path dir_;
  std::shared_ptr<const Module> add_;
};

// Instantiates the (unmetered) module through its glue and calls its `add` export: proof
// that a loaded library runs. Its import is never called.
int32_t CallAdd(const std::shared_ptr<const NativeModule>& module, int32_t a, int32_t b) {
  const GlueEntryPoints& entry = module->entry_points();
  const int index = module->FindExport("add");
  EXPECT_GE(index, 0);
  if (index < 0) return -1;
  struct Call {
    const GlueEntryPoints* entry;
    GlueEntryPoints::Thunk add;
    void* instance;
    reef_rt_host host;
    reef_rt_value args[2];
    reef_rt_value result[1];
  } call{&entry, entry.exports[index], std::calloc(1, entry.instance_size()), {}, {}, {}};
  call.host.call_import = [](reef_rt_host*, uint32_t, const reef_rt_value*, reef_rt_value*) {
    return 0u;
  };
  call.args[0].i32 = static_cast<uint32_t>(a);
  call.args[1].i32 = static_cast<uint32_t>(b);
  const rt::RunOutcome outcome = rt::RunGuarded(
      [](void* p) {
        auto* c = static_cast<Call*>(p);
        c->entry->instantiate(c->instance, &c->host);
        c->add(c->instance, c->args, c->result);
      },
      &call, 100);
  entry.free(call.instance);
  std::free(call.instance);
  EXPECT_FALSE(outcome.trapped());
  return outcome.trapped() ? -1 : static_cast<int32_t>(call.result[0].i32);
}

TEST_F(NativeCacheTest, OpenCreatesThePrivateDirectory) {
  auto cache = OpenCache();
  ASSERT_NE(cache, nullptr);

  struct stat info {};
  ASSERT_EQ(::stat(dir_.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0700u);
}

TEST_F(NativeCacheTest, OpenRefusesADirectoryOthersCanWrite) {
  std::filesystem::create_directories(dir_);
  ASSERT_EQ(::chmod(dir_.c_str(), 0777), 0);

  auto cache = CodeCache::Open(dir_);

  ASSERT_EQ(cache.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(cache.status().message().find("chmod 700"), std::string::npos);
}

TEST_F(NativeCacheTest, MissCompilesThenARestartedCacheHitsWithoutCompiling) {
  auto first = OpenCache();
  auto compiled = Get(*first, add_);
  ASSERT_TRUE(compiled.ok()) << compiled.status().ToString();
  EXPECT_EQ(compiled->outcome, CacheOutcome::kCompiled);
  EXPECT_TRUE(compiled->store_status.ok()) << compiled->store_status.ToString();
  EXPECT_TRUE(std::filesystem::exists(Library(compiled->key)));
  EXPECT_TRUE(std::filesystem::exists(Manifest(compiled->key)));

  auto again = Get(*first, add_);  // still loaded in this cache: the same module
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->outcome, CacheOutcome::kHit);
  EXPECT_EQ(again->module, compiled->module);
  EXPECT_EQ(CallAdd(compiled->module, 1, 2), 3);
  const std::string key = compiled->key;
  compiled->module.reset();  // unloaded: the restart maps the file again
  again->module.reset();

  auto restarted = OpenCache();
  auto hit = Get(*restarted, add_);
  ASSERT_TRUE(hit.ok()) << hit.status().ToString();
  EXPECT_EQ(hit->outcome, CacheOutcome::kHit);
  EXPECT_EQ(hit->key, key);
  EXPECT_EQ(restarted->stats().compiles, 0u);
  EXPECT_EQ(CallAdd(hit->module, 2, 40), 42);
  EXPECT_EQ(hit->module->imports().size(), 1u);
  EXPECT_GT(hit->module->compile_stats().c_bytes, 0u);
}

TEST_F(NativeCacheTest, CorruptedLibraryIsRebuiltNeverLoaded) {
  const std::string key = CompileAndUnload();
  std::string bytes = ReadText(Library(key));
  bytes[bytes.size() / 2] ^= 0x5a;
  WriteText(Library(key), bytes);

  auto rebuilt = Get(*OpenCache(), add_);

  ASSERT_TRUE(rebuilt.ok()) << rebuilt.status().ToString();
  EXPECT_EQ(rebuilt->outcome, CacheOutcome::kRebuilt);
  EXPECT_NE(rebuilt->rebuild_reason.find("SHA-256 differs"), std::string::npos)
      << rebuilt->rebuild_reason;
  EXPECT_EQ(CallAdd(rebuilt->module, 1, 2), 3);
  auto hit = Get(*OpenCache(), add_);
  ASSERT_TRUE(hit.ok());
  EXPECT_EQ(hit->outcome, CacheOutcome::kHit);
}

TEST_F(NativeCacheTest, TruncatedLibraryIsRebuilt) {
  const std::string key = CompileAndUnload();
  std::filesystem::resize_file(Library(key), std::filesystem::file_size(Library(key)) / 2);

  auto rebuilt = Get(*OpenCache(), add_);

  ASSERT_TRUE(rebuilt.ok()) << rebuilt.status().ToString();
  EXPECT_EQ(rebuilt->outcome, CacheOutcome::kRebuilt);
  EXPECT_NE(rebuilt->rebuild_reason.find("truncated"), std::string::npos)
      << rebuilt->rebuild_reason;
}

// A FIFO in a file's place would block a plain open forever; it is refused and rebuilt over.
TEST_F(NativeCacheTest, FifosInPlaceOfTheFilesAreRebuiltWithoutWaiting) {
  for (bool manifest : {true, false}) {
    const std::string key = CompileAndUnload();
    const std::filesystem::path path = manifest ? Manifest(key) : Library(key);
    std::filesystem::remove(path);
    ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);

    auto rebuilt = Get(*OpenCache(), add_);

    ASSERT_TRUE(rebuilt.ok()) << rebuilt.status().ToString();
    EXPECT_EQ(rebuilt->outcome, CacheOutcome::kRebuilt);
    EXPECT_NE(rebuilt->rebuild_reason.find("not a regular file"), std::string::npos)
        << rebuilt->rebuild_reason;
    EXPECT_EQ(CallAdd(rebuilt->module, 2, 3), 5);
  }
}

// Files another user owns (planted while the directory was open to them) are never loaded,
// even with a matching manifest.
TEST_F(NativeCacheTest, FilesOwnedByAnotherUserAreRebuiltNeverLoaded) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a file to another user";
  const std::string key = CompileAndUnload();
  ASSERT_EQ(::chown(Library(key).c_str(), 65534, 65534), 0);

  auto rebuilt = Get(*OpenCache(), add_);

  ASSERT_TRUE(rebuilt.ok()) << rebuilt.status().ToString();
  EXPECT_EQ(rebuilt->outcome, CacheOutcome::kRebuilt);
  EXPECT_NE(rebuilt->rebuild_reason.find("owned by this user"), std::string::npos)
      << rebuilt->rebuild_reason;
  struct stat info {};
  ASSERT_EQ(::stat(Library(key).c_str(), &info), 0);
  EXPECT_EQ(info.st_uid, ::geteuid());
}

TEST_F(NativeCacheTest, ManifestOfAnotherKeyIsRebuilt) {
  const std::string key = CompileAndUnload();
  // A well-formed manifest, checksum and all, written for another key.
  auto manifest = detail::DecodeManifest(ReadText(Manifest(key)));
  ASSERT_TRUE(manifest.ok()) << manifest.status().ToString();
  manifest->key = std::string(64, 'a');
  WriteText(Manifest(key), detail::EncodeManifest(*manifest));

  auto rebuilt = Get(*OpenCache(), add_);

  ASSERT_TRUE(rebuilt.ok()) << rebuilt.status().ToString();
  EXPECT_EQ(rebuilt->outcome, CacheOutcome::kRebuilt);
  EXPECT_NE(rebuilt->rebuild_reason.find("manifest is for key aaaa"), std::string::npos)
      << rebuilt->rebuild_reason;
}

TEST_F(NativeCacheTest, EditedManifestFailsItsChecksumAndIsRebuilt) {
  const std::string key = CompileAndUnload();
  std::string text = ReadText(Manifest(key));
  const size_t at = text.find("\"i32\"");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 5, "\"i64\"");  // still valid JSON: a signature that would lie
  WriteText(Manifest(key), text);

  auto rebuilt = Get(*OpenCache(), add_);

  ASSERT_TRUE(rebuilt.ok()) << rebuilt.status().ToString();
  EXPECT_EQ(rebuilt->outcome, CacheOutcome::kRebuilt);
  EXPECT_NE(rebuilt->rebuild_reason.find("checksum differs"), std::string::npos)
      << rebuilt->rebuild_reason;
}

TEST_F(NativeCacheTest, ManifestWithoutItsLibraryIsRebuilt) {
  const std::string key = CompileAndUnload();
  std::filesystem::remove(Library(key));

  auto rebuilt = Get(*OpenCache(), add_);

  ASSERT_TRUE(rebuilt.ok()) << rebuilt.status().ToString();
  EXPECT_EQ(rebuilt->outcome, CacheOutcome::kRebuilt);
  EXPECT_NE(rebuilt->rebuild_reason.find("missing"), std::string::npos);
}

TEST_F(NativeCacheTest, EverythingThatChangesTheLibraryChangesTheKey) {
  auto cache = OpenCache();
  auto sub = ParseWat(kSubWat);
  ASSERT_NE(sub, nullptr);
  CompileOptions o2 = Fast();
  o2.optimization = 2;
  CompileOptions flagged = Fast();
  flagged.extra_flags = {"-DREEF_TEST_FLAG"};
  CompileOptions limited = Fast();
  limited.wall_time = std::chrono::milliseconds(5);
  limited.address_space_bytes = 1ull << 29;

  auto base = cache->Key(*add_, Fast(), false, 0);
  ASSERT_TRUE(base.ok()) << base.status().ToString();

  EXPECT_EQ(base->size(), 64u);
  EXPECT_EQ(*cache->Key(*add_, Fast(), false, 0), *base);
  EXPECT_EQ(*cache->Key(*add_, limited, false, 0), *base);  // limits do not change the output
  EXPECT_NE(*cache->Key(*sub, Fast(), false, 0), *base);
  EXPECT_NE(*cache->Key(*add_, o2, false, 0), *base);
  EXPECT_NE(*cache->Key(*add_, flagged, false, 0), *base);
  EXPECT_NE(*cache->Key(*add_, Fast(), true, 0), *base);
  EXPECT_NE(*cache->Key(*add_, Fast(), true, 1), *cache->Key(*add_, Fast(), true, 0));
}

// The compiler is identified without running it: the file it resolves to, its size and its
// modification time. Replacing the file (an upgrade) changes the key; a compiler that cannot
// be examined is an error, not a guess.
TEST_F(NativeCacheTest, ACompilerThatChangesOnDiskChangesTheKey) {
  auto cache = OpenCache();
  const std::filesystem::path bin = temp_->path() / "bin";
  std::filesystem::create_directories(bin);
  const std::filesystem::path compiler = bin / "cc";
  std::ofstream(compiler) << "#!/bin/sh\nexec gcc \"$@\"\n";
  std::filesystem::permissions(compiler, std::filesystem::perms::owner_all);
  CompileOptions options = Fast();
  options.compiler = compiler.string();

  auto first = cache->Key(*add_, options, false, 0);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(*cache->Key(*add_, options, false, 0), *first);

  std::filesystem::last_write_time(
      compiler, std::filesystem::last_write_time(compiler) - std::chrono::hours(24));
  auto touched = cache->Key(*add_, options, false, 0);
  ASSERT_TRUE(touched.ok());
  EXPECT_NE(*touched, *first) << "a new modification time is a new compiler";

  std::ofstream(compiler, std::ios::app) << "# upgraded\n";
  auto grown = cache->Key(*add_, options, false, 0);
  ASSERT_TRUE(grown.ok());
  EXPECT_NE(*grown, *touched) << "a new size is a new compiler";

  options.compiler = (bin / "missing-cc").string();
  EXPECT_FALSE(cache->Key(*add_, options, false, 0).ok());
}

TEST_F(NativeCacheTest, ConcurrentRequestsForOneKeyShareOneBuild) {
  auto shared = OpenCache();
  auto other = OpenCache();  // as another process would: its own cache, the same directory
  constexpr int kThreads = 4;
  std::vector<Result<CacheResult>> results(kThreads + 1, Status::Internal("not run"));
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] { results[i] = Get(*shared, add_); });
  }
  threads.emplace_back([&] { results[kThreads] = Get(*other, add_); });
  for (std::thread& thread : threads) thread.join();

  for (const auto& result : results) {
    ASSERT_TRUE(result.ok()) << result.status().ToString();
    EXPECT_EQ(CallAdd(result->module, 20, 22), 42);
  }
  for (int i = 1; i < kThreads; ++i) EXPECT_EQ(results[i]->module, results[0]->module);
  // One build at most (the other cache may have stored it first): the rest are hits.
  EXPECT_LE(shared->stats().compiles, 1u);
  EXPECT_EQ(shared->stats().compiles + shared->stats().hits, uint64_t{kThreads});
  auto hit = Get(*OpenCache(), add_);
  ASSERT_TRUE(hit.ok()) << hit.status().ToString();
  EXPECT_EQ(hit->outcome, CacheOutcome::kHit);
}

TEST_F(NativeCacheTest, SizeBoundEvictsTheLeastRecentlyUsedEntry) {
  CodeCacheOptions options;
  options.max_bytes = 1;  // room for the newest entry only
  auto cache = OpenCache(options);
  auto sub = ParseWat(kSubWat);
  ASSERT_NE(sub, nullptr);
  auto first = Get(*cache, add_);
  ASSERT_TRUE(first.ok()) << first.status().ToString();

  auto second = Get(*cache, sub);

  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_FALSE(std::filesystem::exists(Manifest(first->key)));
  EXPECT_FALSE(std::filesystem::exists(Library(first->key)));
  EXPECT_TRUE(std::filesystem::exists(Library(second->key)));
  EXPECT_EQ(cache->stats().evictions, 1u);
  EXPECT_EQ(CallAdd(first->module, 1, 1), 2);  // a loaded library outlives its file
}

TEST_F(NativeCacheTest, ClearRemovesOnlyTheCachesFiles) {
  auto cache = OpenCache();
  auto compiled = Get(*cache, add_);
  ASSERT_TRUE(compiled.ok()) << compiled.status().ToString();
  std::ofstream(dir_ / "README") << "not the cache's";

  ASSERT_TRUE(cache->Clear().ok());

  EXPECT_FALSE(std::filesystem::exists(Library(compiled->key)));
  EXPECT_FALSE(std::filesystem::exists(Manifest(compiled->key)));
  EXPECT_TRUE(std::filesystem::exists(dir_ / "README"));
}

TEST_F(NativeCacheTest, CompileErrorsAreReturnedAndNothingIsStored) {
  auto cache = OpenCache();
  CompileOptions broken = Fast();
  broken.extra_flags = {"-include", "no-such-header-reef.h"};

  auto result = cache->GetOrCompile(add_, broken, {}, 0);

  ASSERT_EQ(result.status().code(), Code::kInternal);
  EXPECT_TRUE(std::filesystem::is_empty(dir_));
  EXPECT_EQ(cache->GetOrCompile(nullptr, Fast(), {}, 0).status().code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace reef::wasm::native::code_cache_test
