// durable_bench: the durable image's figures in `make bench` (issue 16, docs/benchmarks.md
// "Durable image"). Each workload prints one line `bench durable=NAME key=value ...`:
//
//   durable_bench GUEST_DIR DIR transitions [SENDERS]   SENDERS threads (64) each send `add 1`
//       to their own counter and wait until it is durable (the image's output gate), while one
//       thread ticks the group: durable transitions/s, acknowledged sends/s, records per fsync
//   durable_bench GUEST_DIR DIR pingpong                 two pingpong actors bounce 20,000
//       messages on a durable group, then on an ephemeral one: msg/s of each
//   durable_bench GUEST_DIR DIR ack                       one client: a send, then the wait for
//       its durability, 2,000 times: p50/p99; and the disk's fdatasync probe (4 KiB appended,
//       500 times) in the same directory
//   durable_bench GUEST_DIR DIR restart N REEF           a journal of N idle counters is
//       written, then `REEF serve` starts on it: seconds until it serves, its peak RSS
//
// The actors live in a durable manual group on a free-running fleet of two reactors, as the
// live image's do. REEF_ENGINE=native runs the guests natively (bench_engine.h).
#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "actor/durable_image.h"
#include "actor/runtime.h"
#include "bench_die.h"
#include "bench_engine.h"
#include "wasm/module.h"

extern char** environ;

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using reef::ActorRef;
using reef::Record;
using reef::Value;
using reef::actor::DurableImage;
using reef::actor::DurableImageOptions;
using reef::actor::Implementation;
using reef::actor::Runtime;
using reef::bench::Check;
using reef::bench::Die;

std::shared_ptr<const Implementation> Load(const std::string& dir, const std::string& name) {
  auto module = Check(reef::wasm::Module::FromFile(dir + "/" + name + ".wasm"), "load " + name);
  return Check(reef::actor::MakeImplementation(module, name), "implementation " + name);
}

double Quantile(std::vector<double> values, double q) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return values[std::min(values.size() - 1, static_cast<size_t>(q * values.size()))];
}

double Micros(Clock::duration d) {
  return std::chrono::duration<double, std::micro>(d).count();
}

// A fleet of two reactors with one manual group on it, durable in `dir` or not (empty).
struct Image {
  std::unique_ptr<Runtime> runtime;
  std::shared_ptr<DurableImage> durable;
  std::shared_ptr<reef::actor::ActorGroup> group;

  explicit Image(const fs::path& dir) {
    reef::actor::RuntimeOptions options;
    options.mode = reef::actor::SchedulingMode::kFreeRunning;
    options.reactors = 2;
    runtime = Check(Runtime::Create(options), "runtime");
    if (!dir.empty()) {
      DurableImageOptions durable_options;
      durable_options.journal.dir = dir;
      reef::actor::RecoveredImage recovered{durable_options.value_limits};
      durable = Check(DurableImage::Open(durable_options, &recovered), "open the durable image");
      if (!recovered.actors().empty()) Die("{} holds an image already", dir.string());
    }
    group = Check(runtime->CreateGroup(reef::actor::SchedulingMode::kManual, durable), "group");
  }
  ~Image() { (void)runtime->RemoveGroup(*group); }

  ActorRef Spawn(const std::shared_ptr<const Implementation>& implementation, Value state,
                 uint32_t capacity = 256) {
    reef::actor::SpawnOptions options;
    options.group = group;
    options.mailbox_capacity = capacity;
    return Check(runtime->Spawn(implementation, std::move(state), options), "spawn");
  }

  // The image op's output gate (image/durable.cc): a barrier on the home reactor, then
  // everything appended so far durable.
  void Settle() {
    if (!durable) return;
    auto done = std::make_shared<std::promise<reef::Status>>();
    std::future<reef::Status> answer = done->get_future();
    reef::Status posted = runtime->Post(group->home, [d = durable, done] {
      d->WhenAppendedDurable([done](reef::Status status) { done->set_value(status); });
    });
    if (!posted.ok()) Die("barrier: {}", posted.ToString());
    reef::Status status = answer.get();
    if (!status.ok()) Die("durability: {}", status.ToString());
  }
};

Value AddOne() {
  Record fields;
  fields.emplace("op", Value::String("add"));
  fields.emplace("value", Value::Int(1));
  return Value::RecordOf(std::move(fields));
}

void Transitions(const std::string& guests, const fs::path& dir, int senders) {
  auto counter = Load(guests, "counter");
  Image image(dir);
  std::vector<ActorRef> actors;
  for (int i = 0; i < senders; ++i) actors.push_back(image.Spawn(counter, Value::Int(0)));
  image.Settle();
  const auto millis = std::chrono::milliseconds(2'000);
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> acked{0};
  std::vector<std::thread> threads;
  const reef::actor::JournalStats before = image.durable->stats().journal;
  const auto start = Clock::now();
  for (int i = 0; i < senders; ++i) {
    threads.emplace_back([&, target = actors[i]] {
      while (!stop.load()) {
        auto sent = image.runtime->TrySend(target, AddOne());
        if (!sent.status.ok()) {  // a full mailbox: the ticker is behind
          std::this_thread::sleep_for(std::chrono::microseconds(100));
          continue;
        }
        image.Settle();
        acked.fetch_add(1);
      }
    });
  }
  uint64_t commits = 0;
  while (Clock::now() - start < millis) {
    auto report = Check(image.runtime->Tick(20, 1'000'000, image.group.get()), "tick");
    commits += report.commits;
    if (report.failures > 0) Die("a transition failed");
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  stop.store(true);
  for (auto& thread : threads) thread.join();
  image.Settle();
  const reef::actor::JournalStats after = image.durable->stats().journal;
  const uint64_t records = after.records - before.records;
  const uint64_t batches = after.batches - before.batches;
  fmt::print(
      "bench durable=transitions senders={} seconds={:.3f} transitions_per_s={:.0f} "
      "acked_sends_per_s={:.0f} records={} batches={} records_per_batch={:.1f} "
      "largest_batch={}\n",
      senders, seconds, commits / seconds, acked.load() / seconds, records, batches,
      batches > 0 ? static_cast<double>(records) / batches : 0.0, after.largest_batch);
}

// msg/s of two pingpong actors bouncing `n` messages in `image`, ticked as the REPL does.
double PingPongRate(Image& image, const std::shared_ptr<const Implementation>& pingpong,
                    int64_t n) {
  ActorRef a = image.Spawn(pingpong, Value::Int(0));
  ActorRef b = image.Spawn(pingpong, Value::Int(0));
  Record start;
  start.emplace("n", Value::Int(n));
  start.emplace("peer", Value::Ref(b));
  const auto begin = Clock::now();
  if (!image.runtime->TrySend(a, Value::RecordOf(std::move(start))).status.ok()) Die("send");
  uint64_t commits = 0;
  while (commits < static_cast<uint64_t>(n) + 1) {
    auto report = Check(image.runtime->Tick(1'000, 1'000'000, image.group.get()), "tick");
    if (report.failures > 0) Die("pingpong failed");
    if (report.commits == 0) Die("pingpong stopped short at {} of {}", commits, n + 1);
    commits += report.commits;
  }
  image.Settle();  // the durable run's last record on disk, like an acknowledged tick
  return static_cast<double>(n + 1) / std::chrono::duration<double>(Clock::now() - begin).count();
}

void PingPong(const std::string& guests, const fs::path& dir) {
  auto pingpong = Load(guests, "pingpong");
  constexpr int64_t kMessages = 20'000;
  double durable = 0, ephemeral = 0;
  for (int run = 0; run < 3; ++run) {  // the best of three of each, alternating
    {
      fs::remove_all(dir);
      Image image(dir);
      durable = std::max(durable, PingPongRate(image, pingpong, kMessages));
    }
    Image image({});
    ephemeral = std::max(ephemeral, PingPongRate(image, pingpong, kMessages));
  }
  fmt::print(
      "bench durable=pingpong messages={} durable_msg_per_s={:.0f} ephemeral_msg_per_s={:.0f} "
      "ratio={:.2f}\n",
      kMessages, durable, ephemeral, durable / ephemeral);
}

void Ack(const std::string& guests, const fs::path& dir) {
  auto counter = Load(guests, "counter");
  std::vector<double> acks;
  {
    Image image(dir);
    ActorRef a = image.Spawn(counter, Value::Int(0), 100'000);
    image.Settle();
    for (int i = 0; i < 2'000; ++i) {
      const auto start = Clock::now();
      if (!image.runtime->TrySend(a, AddOne()).status.ok()) Die("send");
      image.Settle();
      acks.push_back(Micros(Clock::now() - start));
    }
  }
  const fs::path probe = dir / "fdatasync-probe";
  int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) Die("open {}", probe.string());
  std::string block(4096, 'x');
  std::vector<double> syncs;
  for (int i = 0; i < 500; ++i) {
    const auto start = Clock::now();
    if (::write(fd, block.data(), block.size()) != static_cast<ssize_t>(block.size()) ||
        ::fdatasync(fd) != 0) {
      Die("fdatasync probe failed");
    }
    syncs.push_back(Micros(Clock::now() - start));
  }
  ::close(fd);
  fmt::print(
      "bench durable=ack samples={} p50_us={:.0f} p99_us={:.0f} fdatasync_p50_us={:.0f} "
      "fdatasync_p99_us={:.0f} ratio={:.2f}\n",
      acks.size(), Quantile(acks, 0.5), Quantile(acks, 0.99), Quantile(syncs, 0.5),
      Quantile(syncs, 0.99), Quantile(acks, 0.5) / Quantile(syncs, 0.5));
}

// The peak and current resident set of process `pid`, in MiB.
std::pair<double, double> RssMib(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  double peak = 0, now = 0;
  while (std::getline(status, line)) {
    if (line.starts_with("VmHWM:")) peak = std::stod(line.substr(6)) / 1024;
    if (line.starts_with("VmRSS:")) now = std::stod(line.substr(6)) / 1024;
  }
  return {peak, now};
}

void Restart(const std::string& guests, const fs::path& dir, int64_t n, const std::string& reef) {
  auto counter = Load(guests, "counter");
  const fs::path data = dir / "data";
  fs::remove_all(dir);
  fs::create_directories(data);
  const auto write_start = Clock::now();
  {
    Image image(data / "image");
    for (int64_t i = 0; i < n; ++i) image.Spawn(counter, Value::Int(i));
    image.Settle();
  }
  const double write_seconds = std::chrono::duration<double>(Clock::now() - write_start).count();
  uint64_t journal_bytes = 0;
  for (const auto& entry : fs::directory_iterator(data / "image")) {
    if (entry.path().extension() == ".log") journal_bytes += entry.file_size();
  }

  const fs::path log = dir / "serve.log";
  std::vector<std::string> args = {reef,         "serve",       "--listen", "127.0.0.1:0",
                                   "--data-dir", data.string(), "--engine", "interp"};
  std::vector<char*> argv;
  for (auto& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  pid_t pid = -1;
  const auto start = Clock::now();
  if (::posix_spawn(&pid, reef.c_str(), &actions, nullptr, argv.data(), environ) != 0) {
    Die("cannot start {}", reef);
  }
  posix_spawn_file_actions_destroy(&actions);
  const std::regex restored(R"(([0-9]+) actor\(s\) restored)");
  std::smatch match;
  std::string text;
  auto stop = [pid] {
    ::kill(pid, SIGTERM);
    int status = 0;
    ::waitpid(pid, &status, 0);
  };
  for (;;) {
    std::ifstream in(log);
    text.assign(std::istreambuf_iterator<char>(in), {});
    if (text.find("serving on") != std::string::npos) break;
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) Die("reef serve exited:\n{}", text);
    if (Clock::now() - start > std::chrono::minutes(5)) {
      stop();
      Die("reef serve not ready:\n{}", text);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  auto [peak, now] = RssMib(pid);
  stop();
  if (!std::regex_search(text, match, restored) || std::stoll(match[1].str()) != n) {
    Die("reef serve did not restore {} actors:\n{}", n, text);
  }
  fmt::print(
      "bench durable=restart actors={} journal_mib={:.0f} write_seconds={:.1f} "
      "restart_seconds={:.2f} peak_rss_mib={:.0f} rss_mib={:.0f}\n",
      n, journal_bytes / 1048576.0, write_seconds, seconds, peak, now);
  fs::remove_all(dir);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    Die("usage: durable_bench GUEST_DIR DIR transitions [SENDERS] | pingpong | ack | restart N "
        "REEF");
  }
  Check(reef::bench::UseEngineFromEnvironment(), "engine");
  const std::string guests = argv[1];
  const fs::path dir = fs::path(argv[2]) / fmt::format("reef-durable-bench-{}", ::getpid());
  const std::string_view workload = argv[3];
  fs::remove_all(dir);
  fs::create_directories(dir);
  if (workload == "transitions") {
    Transitions(guests, dir / "image", argc > 4 ? std::atoi(argv[4]) : 64);
  } else if (workload == "pingpong") {
    PingPong(guests, dir / "image");
  } else if (workload == "ack") {
    Ack(guests, dir / "image");
  } else if (workload == "restart" && argc > 5) {
    Restart(guests, dir, std::atoll(argv[4]), argv[5]);
  } else {
    Die("unknown workload {}", workload);
  }
  std::fflush(stdout);
  fs::remove_all(dir);
  return 0;
}
