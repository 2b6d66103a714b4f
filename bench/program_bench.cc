// program_bench: invocations of a program's unit over HTTP (issue 7, docs/programs.md), for
// the "Programs and units" table of `make bench` (docs/benchmarks.md), next to the limit: a
// native Boost.Beast handler in this process serving the same load.
//
// reef invoke   the real `reef serve` binary (REEF_BINARY) on 127.0.0.1:0 with a fresh data
//               directory; the example program v1 (REEF_PROGRAM_V1_DIR, examples/program)
//               deployed through POST /programs. Each client loops on
//               POST /units/worker/invoke?mode=wait with {"n": k}: the replicated worker unit
//               (AnyOrSpawn, instance limit 4) replies {"version", "echo", "served"} and the
//               server answers {"result": ..., "instance", "generation"}.
// native Beast  the limit: an HTTP/1.1 server in this process (Boost.Beast, one io_context run
//               by --native-threads threads, the handler inline) answering every request with
//               a fixed JSON body of the same shape and size as reef's reply. No routing, no
//               actor, no wasm: what HTTP on loopback costs on this machine.
//
// Clients are threads with one keep-alive HTTP/1.1 connection each (1, then 64), every one
// sending its next request when the previous reply is read, for --seconds per row. One untimed
// warm-up (64 clients, 0.5 s) first against each server, so reef's worker instances are
// spawned. per_s = 200 replies / wall time from the start until the last reply; p50/p99 per
// request round trip at the client, in ms; server_cpu_us: the server's CPU time per request
// (reef: the whole `reef serve` process from /proc/PID/stat; native: its server threads'
// CPU clocks), clients not counted. Any reply but 200 ends the run with exit 1.
//
//   [REEF_ENGINE=auto|native|interp] build/bench/program_bench [--seconds N] [--clients N]
//       [--native-threads N]  (--help); REEF_ENGINE becomes the server's --engine (default auto)
//
// Output: one machine-readable line per row, e.g.
//   bench program=reef_invoke mode=wait clients=64 requests=... seconds=... per_s=...
//         p50_ms=... p99_ms=... server_cpu_us=...
//   bench program=native_beast clients=64 threads=2 requests=... seconds=... per_s=... ...
#include <fmt/format.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <latch>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "bench_flags.h"
#include "bench_http.h"
#include "support/program_body.h"
#include "support/reef_server.h"

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using Clock = std::chrono::steady_clock;
using json = nlohmann::json;

// ---------------------------------------------------------------------------------------------
// Sizes, flags and failure

struct Sizes {
  int64_t seconds = 3;         // per row
  int64_t clients = 0;         // only the rows with this many clients (0: 1 and 64)
  int64_t native_threads = 0;  // threads of the native server (0: hardware threads)
};

using Flag = reef::bench::CountFlag<Sizes>;
constexpr Flag kFlags[] = {
    {"--seconds", &Sizes::seconds, 1, "seconds per row"},
    {"--clients", &Sizes::clients, 0, "run only the rows with N clients (0: 1 and 64)"},
    {"--native-threads", &Sizes::native_threads, 0,
     "threads running the native Beast server (0: hardware threads)"},
};

constexpr int kClients[] = {1, 64};
constexpr int kWarmupClients = 64;
constexpr auto kWarmup = std::chrono::milliseconds(500);
constexpr auto kStepTimeout = std::chrono::seconds(30);  // connect, write or read, each
constexpr char kInvokeTarget[] = "/units/worker/invoke?mode=wait";
// What the native handler answers: reef's reply to {"n": 12345} from an instance of worker v1,
// byte for byte in shape and size.
constexpr char kNativeReply[] =
    R"({"generation":1,"instance":1,"result":{"echo":{"n":12345},"served":1000,"version":1}})"
    "\n";

template <typename... Args>
[[noreturn]] void Die(fmt::format_string<Args...> format, Args&&... args) {
  fmt::print(stderr, "program_bench: {}\n", fmt::format(format, std::forward<Args>(args)...));
  std::fflush(stdout);
  std::_Exit(1);
}

double Seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// ---------------------------------------------------------------------------------------------
// The load: n clients for a while

/// What one row measured.
struct Figures {
  int64_t answered = 0;     // 200 replies
  double seconds = 0;       // from the start until the last reply
  double server_cpu_s = 0;  // the server's CPU time over the row
  std::vector<double> latencies_ms;
};

/// CPU seconds the server has used so far (a monotonic clock of its own).
using CpuClock = std::function<double()>;

/// CPU seconds (user + system) process `pid` has used, from /proc/PID/stat.
double ProcessCpuSeconds(pid_t pid) {
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  std::string stat((std::istreambuf_iterator<char>(in)), {});
  const size_t comm_end = stat.rfind(')');  // the command name may hold spaces
  if (comm_end == std::string::npos) Die("cannot read /proc/{}/stat", pid);
  std::istringstream fields(stat.substr(comm_end + 2));
  std::string field;
  double ticks = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i) {  // utime is field 14, stime 15
    if (i >= 14) ticks += std::stod(field);
  }
  return ticks / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

/// `n` client threads, each on its own fresh connection to `port`, POST kInvokeTarget with
/// {"n": k} until `duration` has passed since they all started; `server_cpu` is read before
/// and after.
Figures RunClients(uint16_t port, int n, Clock::duration duration, const CpuClock& server_cpu) {
  struct Client {
    std::unique_ptr<reef::bench::KeepAliveConnection> connection;
    Figures figures;
    Clock::time_point finished;
  };
  std::vector<Client> clients(static_cast<size_t>(n));
  for (Client& c : clients) {
    c.connection =
        std::make_unique<reef::bench::KeepAliveConnection>("program_bench", port, kStepTimeout);
  }
  std::latch go(1);
  Clock::time_point start, deadline;
  std::vector<std::thread> threads;
  for (Client& c : clients) {
    threads.emplace_back([&c, &go, &deadline] {
      go.wait();
      for (int64_t k = 0; Clock::now() < deadline; ++k) {
        const std::string body = fmt::format(R"({{"n":{}}})", k);
        const Clock::time_point t0 = Clock::now();
        auto [status, reply] = c.connection->Post(kInvokeTarget, body);
        c.finished = Clock::now();
        if (status != 200) Die("POST {}: HTTP {}: {}", kInvokeTarget, status, reply);
        c.figures.latencies_ms.push_back(
            std::chrono::duration<double, std::milli>(c.finished - t0).count());
        ++c.figures.answered;
      }
    });
  }
  const double cpu_before = server_cpu();
  start = Clock::now();
  deadline = start + duration;
  go.count_down();
  for (std::thread& t : threads) t.join();
  Figures out;
  out.server_cpu_s = server_cpu() - cpu_before;
  Clock::time_point end = start;
  for (Client& c : clients) {
    end = std::max(end, c.finished);
    out.answered += c.figures.answered;
    out.latencies_ms.insert(out.latencies_ms.end(), c.figures.latencies_ms.begin(),
                            c.figures.latencies_ms.end());
  }
  out.seconds = Seconds(end - start);
  return out;
}

/// GET /health every kProbeInterval on its own connection until `stop`; the latencies (ms).
constexpr auto kProbeInterval = std::chrono::milliseconds(10);
std::vector<double> ProbeHealth(uint16_t port, const std::atomic<bool>& stop) {
  reef::bench::KeepAliveConnection connection("program_bench", port, kStepTimeout);
  std::vector<double> latencies_ms;
  while (!stop.load()) {
    const Clock::time_point t0 = Clock::now();
    auto [status, reply] = connection.Get("/health");
    if (status != 200) Die("GET /health: HTTP {}: {}", status, reply);
    latencies_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    std::this_thread::sleep_for(kProbeInterval);
  }
  return latencies_ms;
}

void PrintHealth(std::string_view load, const std::vector<double>& latencies_ms) {
  fmt::print(
      "bench program=health load={} requests={} p50_ms={:.3f} p99_ms={:.3f} max_ms={:.3f}\n", load,
      latencies_ms.size(), reef::bench::Quantile(latencies_ms, 0.5),
      reef::bench::Quantile(latencies_ms, 0.99),
      latencies_ms.empty() ? 0.0 : *std::max_element(latencies_ms.begin(), latencies_ms.end()));
  std::fflush(stdout);
}

void Print(std::string_view head, const Figures& f) {
  const double n = static_cast<double>(f.answered);
  fmt::print(
      "bench program={} requests={} seconds={:.3f} per_s={:.0f} p50_ms={:.3f} p99_ms={:.3f} "
      "server_cpu_us={:.1f}\n",
      head, f.answered, f.seconds, f.seconds > 0 ? n / f.seconds : 0.0,
      reef::bench::Quantile(f.latencies_ms, 0.5), reef::bench::Quantile(f.latencies_ms, 0.99),
      n > 0 ? f.server_cpu_s * 1e6 / n : 0.0);
  std::fflush(stdout);
}

// ---------------------------------------------------------------------------------------------
// The native limit: a Beast server answering kNativeReply

/// One keep-alive connection of the native server: read a request, write the fixed reply,
/// until the client closes. Runs on the io_context's threads (one handler at a time).
class NativeSession : public std::enable_shared_from_this<NativeSession> {
 public:
  explicit NativeSession(asio::ip::tcp::socket socket) : stream_(std::move(socket)) {}

  void Read() {
    request_ = {};
    http::async_read(stream_, buffer_, request_,
                     [self = shared_from_this()](beast::error_code ec, size_t) {
                       if (!ec) self->Write();
                     });
  }

 private:
  void Write() {
    response_ = http::response<http::string_body>(http::status::ok, request_.version());
    response_.set(http::field::content_type, "application/json");
    response_.keep_alive(request_.keep_alive());
    response_.body() = kNativeReply;
    response_.prepare_payload();
    http::async_write(stream_, response_,
                      [self = shared_from_this()](beast::error_code ec, size_t) {
                        if (!ec && self->response_.keep_alive()) self->Read();
                      });
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  http::request<http::string_body> request_;
  http::response<http::string_body> response_;
};

/// The native server on 127.0.0.1:0, run by `threads` threads until destroyed.
class NativeServer {
 public:
  explicit NativeServer(uint32_t threads)
      : acceptor_(ioc_, asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)) {
    Accept();
    for (uint32_t i = 0; i < threads; ++i) threads_.emplace_back([this] { ioc_.run(); });
  }
  ~NativeServer() {
    ioc_.stop();
    for (std::thread& t : threads_) t.join();
  }
  NativeServer(const NativeServer&) = delete;
  NativeServer& operator=(const NativeServer&) = delete;

  uint16_t port() const { return acceptor_.local_endpoint().port(); }

  /// CPU seconds its threads have used so far.
  double CpuSeconds() {
    double total = 0;
    for (std::thread& t : threads_) {
      clockid_t clock;
      timespec ts{};
      if (pthread_getcpuclockid(t.native_handle(), &clock) != 0 || clock_gettime(clock, &ts) != 0) {
        Die("cannot read a native server thread's CPU clock");
      }
      total += static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
    }
    return total;
  }

 private:
  void Accept() {
    acceptor_.async_accept(asio::make_strand(ioc_),
                           [this](beast::error_code ec, asio::ip::tcp::socket socket) {
                             if (!ec) std::make_shared<NativeSession>(std::move(socket))->Read();
                             Accept();
                           });
  }

  asio::io_context ioc_;
  asio::ip::tcp::acceptor acceptor_;
  std::vector<std::thread> threads_;
};

// ---------------------------------------------------------------------------------------------
// Reef: the server and its program

/// Deploys the example program v1 on the server at `port`.
void DeployExample(uint16_t port) {
  std::string error;
  const json body = reef::testing::ProgramBody(REEF_PROGRAM_V1_DIR, nullptr, error);
  if (!error.empty()) Die("{}", error);
  reef::bench::KeepAliveConnection connection("program_bench", port, kStepTimeout);
  auto [status, reply] = connection.Post("/programs", body.dump());
  if (status != 200) Die("POST /programs: HTTP {}: {}", status, reply);
}

}  // namespace

int main(int argc, char** argv) {
  Sizes sizes;
  // --dir is accepted but unused: the server's data directory goes under $TMPDIR (ReefServer).
  reef::bench::ParseFlags(argc, argv, "program_bench", kFlags, sizes);
  const auto duration = std::chrono::seconds(sizes.seconds);
  const uint32_t native_threads = sizes.native_threads > 0
                                      ? static_cast<uint32_t>(sizes.native_threads)
                                      : std::max(1u, std::thread::hardware_concurrency());
  // The server's engine: REEF_ENGINE of this process, passed on as --engine (ReefServer drops
  // the REEF_* environment), so that `REEF_ENGINE=native` measures native units from the first
  // request instead of the interpreter until the background compile lands (engine auto).
  const char* engine_env = std::getenv("REEF_ENGINE");
  const std::string engine = engine_env != nullptr && *engine_env != '\0' ? engine_env : "auto";
  // REEF_EPHEMERAL=true passes --ephemeral on the same way: unit instances in memory only, to
  // compare with durable ones (the default).
  const char* ephemeral_env = std::getenv("REEF_EPHEMERAL");
  const bool ephemeral = ephemeral_env != nullptr && (std::string_view(ephemeral_env) == "true" ||
                                                      std::string_view(ephemeral_env) == "1");
  std::vector<std::string> server_args{"--engine", engine};
  if (ephemeral) server_args.push_back("--ephemeral");
  fmt::print(
      "program_bench: seconds={} native_threads={} reef={} engine={} ephemeral={} program={}\n",
      sizes.seconds, native_threads, REEF_BINARY, engine, ephemeral, REEF_PROGRAM_V1_DIR);
  std::fflush(stdout);
  reef::testing::ReefServer reef(REEF_BINARY, server_args);
  if (std::string started = reef.Start(); !started.empty()) Die("{}", started);
  DeployExample(reef.port());
  NativeServer native(native_threads);

  const pid_t reef_pid = reef.pid();
  const CpuClock reef_cpu = [reef_pid] { return ProcessCpuSeconds(reef_pid); };
  const CpuClock native_cpu = [&native] { return native.CpuSeconds(); };

  RunClients(reef.port(), kWarmupClients, kWarmup, reef_cpu);
  RunClients(native.port(), kWarmupClients, kWarmup, native_cpu);
  // /health with nothing else running: the anchor of the saturated probe below.
  {
    std::atomic<bool> stop{false};
    std::thread stopper([&stop, duration] {
      std::this_thread::sleep_for(duration);
      stop = true;
    });
    PrintHealth("idle clients=0", ProbeHealth(reef.port(), stop));
    stopper.join();
  }
  for (int n : kClients) {
    if (sizes.clients != 0 && sizes.clients != n) continue;
    // While the clients invoke, a probe asks /health: a waiting invocation must hold no
    // server thread (issue 15).
    std::atomic<bool> stop_probe{false};
    std::vector<double> probed;
    std::thread probe([&] { probed = ProbeHealth(reef.port(), stop_probe); });
    Figures invoked = RunClients(reef.port(), n, duration, reef_cpu);
    stop_probe = true;
    probe.join();
    Print(fmt::format("reef_invoke mode=wait clients={}", n), invoked);
    PrintHealth(fmt::format("invoke clients={}", n), probed);
    Print(fmt::format("native_beast clients={} threads={}", n, native_threads),
          RunClients(native.port(), n, duration, native_cpu));
  }
  return 0;
}
