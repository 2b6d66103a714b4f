// apps_bench: the event-sourced modules (src/apps/module_runtime.h) under load, for the
// "Event-sourced modules" table of `make bench` (docs/benchmarks.md). Two parts, each with an
// anchor measured in the same run:
//
// HTTP commands. A real server on loopback, in-process and wired like `reef serve`
// (ServerOptions{listen 127.0.0.1:0, handler_threads 32, routes EventRoutes + ModuleRoutes});
// C client threads (1 or 64), each with its own keep-alive HTTP/1.1 connection (Boost.Beast).
// The command is the bank example's deposit (examples/bank): it reads the account's events,
// folds them in wasm, decides, and appends MoneyDeposited under the DCB condition.
//
//   append           the anchor: each client loops on POST /events/append of one event with
//                    the condition a command's append carries (its own tag, after its last
//                    position): the same HTTP path and store append, no module; --millis in all
//   deposit own      each client deposits --deposits times to each of its own accounts in turn
//                    (all opened first, untimed; ~500 deposits per case, at least one account
//                    per client and round: 480 with 1 client, 5,120 with 64), so conditions
//                    never collide and every account's history runs from 1 to 1 + --deposits
//                    events: a deposit folds the whole history, so its cost grows with it, and
//                    a fixed history keeps the 1- and 64-client rows alike
//                    append and deposit own alternate in kRounds rounds (the disk's sync speed
//                    changes within a run on this VM; the alternation spreads it over both)
//   deposit shared   64 clients deposit --shared-deposits times each to ONE account: their
//                    conditions collide and the runtime retries (attempts - 1 retries each; a
//                    409 after command_max_retries + 1 attempts counts as gave_up)
//   deposit_history  one client, kHistorySamples deposits to an account holding 10, 100 and
//                    1000 events (opened by the command, the rest appended directly): the cost
//                    of the fold per history event
//
// One untimed warm-up first (64 clients open an account, deposit and append twice), so every
// handler thread holds its command instances. per_s = 2xx replies / wall time from the start
// until the last reply; p50/p99 per request round trip at the client, in µs;
// cpu_us_per_request: the process's CPU time (server, runtime, store and clients) per request.
//
// Projector catch-up. A fresh store of --events Tick events (appended untimed, kFillBatch per
// append); then the projector test_projector_v1 (tests/modules: one INSERT into
// ticks(position, version, n) per Tick) is activated and timed until its position (StatusOf,
// polled every kPoll) reaches the head; the row count is checked. The runtime commits
// projector_batch_events (512) events per SQLite transaction, each in its own savepoint.
//
//   sqlite           the anchor: plain SQLite inserting --events rows into the same table in
//                    transactions of 512, WAL + synchronous=NORMAL (as the runtime opens module
//                    databases), one prepared statement: the floor of the read model's writes
//   sqlite_stmt      the same with the runner's SQL per row but no wasm: SAVEPOINT, prepare,
//                    bind, step, finalize, RELEASE (at most kStmtRows rows: it is a rate)
//
//   build/bench/apps_bench [--dir DIR] [--millis N] [--deposits N] [--shared-deposits N]
//                          [--events N] [--clients N] [--http 0|1] [--catchup 0|1]  (--help)
//
// Output: one machine-readable line per figure ("bench apps=CASE key=value..."), e.g.
//
//   bench apps=deposit accounts=own clients=64 deposits_per_account=20 requests=... seconds=...
//         per_s=... p50_us=... p99_us=... cpu_us_per_request=... retries=...
//         retries_per_execution=... gave_up=... history_end=...
//   bench apps=catchup events=... batch_events=512 seconds=... events_per_s=...
//         cpu_us_per_event=...
//
// REEF_ENGINE=native puts every engine on the native tier, as `reef serve` does when a C
// compiler is there (the modules compile untimed, during the warm-up); the first line says
// which tier ran.
//
// Any other reply than 2xx (or a 409 in the shared case), a failed projector or a wrong row
// count ends the run with exit 1.
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <latch>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "apps/http/module_routes.h"
#include "apps/module_runtime.h"
#include "apps_bench_support.h"
#include "apps_catchup.h"
#include "bench_engine.h"
#include "bench_flags.h"
#include "bench_http.h"
#include "events/event_store.h"
#include "events/http/event_routes.h"
#include "heap_counter.h"
#include "server/server.h"

namespace {

namespace fs = std::filesystem;
namespace ev = reef::events;
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using reef::bench::apps::Check;
using reef::bench::apps::Clock;
using reef::bench::apps::Die;
using reef::bench::apps::GuestBytes;
using reef::bench::apps::Micros;
using reef::bench::apps::PerSecond;
using reef::bench::apps::ProcessCpuSeconds;
using reef::bench::apps::RunCatchup;
using reef::bench::apps::RunSqlite;
using reef::bench::apps::Seconds;
using json = nlohmann::json;
using reef::store::ModuleKind;

// ---------------------------------------------------------------------------------------------
// Sizes, flags and failure

/// Run sizes. The defaults take about 2.5 minutes on a 2-core VM, most of it the catch-up.
struct Sizes {
  int64_t millis = 3000;        // per append anchor case, ms
  int64_t deposits = 20;        // deposits to each own account (its history: 1 + this)
  int64_t shared_deposits = 4;  // deposits per client to the shared account
  int64_t events = 1000000;     // Tick events the projector catches up on (and SQLite rows)
  int64_t clients = 0;          // only the HTTP cases with this many clients (0: 1 and 64)
  int64_t http = 1;             // 0: skip the HTTP cases
  int64_t catchup = 1;          // 0: skip the catch-up cases
};

using Flag = reef::bench::CountFlag<Sizes>;
constexpr Flag kFlags[] = {
    {"--millis", &Sizes::millis, 1, "milliseconds per append anchor case"},
    {"--deposits", &Sizes::deposits, 1, "deposits to each own account (own cases)"},
    {"--shared-deposits", &Sizes::shared_deposits, 1,
     "deposits per client to the one shared account"},
    {"--events", &Sizes::events, 1, "events the projector catches up on (and SQLite rows)"},
    {"--clients", &Sizes::clients, 0, "run only the HTTP cases with N clients (0: all)"},
    {"--http", &Sizes::http, 0, "1: run the HTTP cases, 0: skip them"},
    {"--catchup", &Sizes::catchup, 0, "1: run the projector catch-up cases, 0: skip them"},
};

constexpr int kClients[] = {1, 64};
constexpr int kMaxClients = 64;
constexpr int kRounds = 4;                   // append / deposit own alternations per client count
constexpr int64_t kOwnDepositsTarget = 500;  // own cases: deposits per case, about
constexpr int64_t kHistories[] = {10, 100, 1000};        // deposit_history: events in the account
constexpr int kHistorySamples = 10;                      // deposit_history: deposits timed
constexpr uint32_t kHandlerThreads = 32;                 // as `reef serve`
constexpr auto kStepTimeout = std::chrono::seconds(30);  // connect, write or read, each
constexpr int64_t kStmtRows = 200000;  // sqlite_stmt: rows at most (a rate; saves ~8 s)

std::string g_work_dir;  // removed at exit
void RemoveWorkDir() {
  std::error_code ignored;
  if (!g_work_dir.empty()) fs::remove_all(g_work_dir, ignored);
}

// ---------------------------------------------------------------------------------------------
// HTTP client: one keep-alive connection, owned by one thread

struct Reply {
  unsigned status = 0;
  json body;  // discarded (is_discarded()) when not JSON
};

/// A keep-alive connection whose replies are parsed as JSON (bench_http.h).
class Connection {
 public:
  explicit Connection(uint16_t port) : http_("apps_bench", port, kStepTimeout) {}
  Reply Post(const std::string& target, const std::string& body) {
    auto [status, text] = http_.Post(target, body);
    return {status, json::parse(text, nullptr, false)};
  }

 private:
  reef::bench::KeepAliveConnection http_;
};

// ---------------------------------------------------------------------------------------------
// HTTP cases

/// What one case measured.
struct Figures {
  int64_t answered = 0;      // 2xx replies
  int64_t retries = 0;       // deposits: conflict retries (attempts - 1; max_retries per gave_up)
  int64_t gave_up = 0;       // deposits: 409, still conflicting after the last retry
  double seconds = 0;        // from the start until the last reply
  double cpu_seconds = 0;    // the whole process's CPU time (server, runtime, store, clients)
  uint64_t allocations = 0;  // the whole process's operator new calls (bench/heap_counter.h)
  std::vector<double> latencies_us;
};

/// One client thread's connection and what it works on.
struct Client {
  std::unique_ptr<Connection> connection;
  std::vector<std::string> accounts;  // deposits: its accounts, each gets its turn
  std::string tag;                    // appends: its own tag
  ev::Position last = 0;              // appends: its last position (the condition's after)
  Figures figures;
  Clock::time_point finished;
};

/// What the requests of one run share.
struct HttpEnv {
  uint32_t max_retries = 0;  // RuntimeOptions::command_max_retries
  bool conflicts_expected = false;
};

void Record(Client& c, Clock::time_point t0) {
  c.finished = Clock::now();
  c.figures.latencies_us.push_back(Micros(c.finished - t0));
  ++c.figures.answered;
}

/// The anchor: POST /events/append of one event with the condition a command's append
/// carries (its own tag, after its last position).
void Append(Client& c) {
  const std::string account = c.tag.substr(c.tag.find(':') + 1);
  const std::string body = json{
      {"events",
       {{{"type", "MoneyDeposited"},
         {"tags", {c.tag}},
         {"data", {{"account_id", account}, {"amount", 1}}}}}},
      {"condition",
       {{"fail_if_events_match", {{"items", {{{"tags", {c.tag}}}}}}},
        {"after", c.last}}}}.dump();
  const Clock::time_point t0 = Clock::now();
  Reply r = c.connection->Post("/events/append", body);
  if (r.status != 200 || !r.body.contains("position")) {
    Die("append: HTTP {}: {}", r.status, r.body.dump());
  }
  c.last = r.body["position"].get<ev::Position>();
  Record(c, t0);
}

void OpenAccount(Client& c, const std::string& account) {
  Reply r = c.connection->Post("/commands/open-account/execute",
                               json{{"account_id", account}, {"owner", "Bench Client"}}.dump());
  if (r.status != 200) Die("open-account {}: HTTP {}: {}", account, r.status, r.body.dump());
}

/// POST /commands/deposit/execute {"account_id": account, "amount": 1}.
void Deposit(Client& c, const std::string& account, const HttpEnv& env) {
  const std::string body = json{{"account_id", account}, {"amount", 1}}.dump();
  const Clock::time_point t0 = Clock::now();
  Reply r = c.connection->Post("/commands/deposit/execute", body);
  if (r.status == 409 && env.conflicts_expected) {
    ++c.figures.gave_up;
    c.figures.retries += env.max_retries;
    c.finished = Clock::now();
    return;
  }
  if (r.status != 200 || !r.body.contains("attempts")) {
    Die("deposit to {}: HTTP {}: {}", account, r.status, r.body.dump());
  }
  c.figures.retries += r.body["attempts"].get<int64_t>() - 1;
  Record(c, t0);
}

/// Runs `work(client, deadline)` on one thread per client, all started together; deadline is
/// start + `duration`. Returns their figures merged.
template <typename Work>
Figures RunClients(std::vector<Client>& clients, Clock::duration duration, Work work) {
  std::latch go(1);
  Clock::time_point start, deadline;
  std::vector<std::thread> threads;
  for (Client& c : clients) {
    c.figures = {};
    threads.emplace_back([&c, &go, &deadline, &work] {
      go.wait();
      work(c, deadline);
    });
  }
  const double cpu_before = ProcessCpuSeconds();
  const uint64_t allocations_before = reef::bench::HeapAllocations();
  start = Clock::now();
  deadline = start + duration;
  go.count_down();
  for (std::thread& t : threads) t.join();
  Figures out;
  out.cpu_seconds = ProcessCpuSeconds() - cpu_before;
  out.allocations = reef::bench::HeapAllocations() - allocations_before;
  Clock::time_point end = start;
  for (Client& c : clients) {
    end = std::max(end, c.finished);
    out.answered += c.figures.answered;
    out.retries += c.figures.retries;
    out.gave_up += c.figures.gave_up;
    out.latencies_us.insert(out.latencies_us.end(), c.figures.latencies_us.begin(),
                            c.figures.latencies_us.end());
  }
  out.seconds = Seconds(end - start);
  return out;
}

/// `n` clients with fresh connections (the server closes one idle for its io_timeout, 10 s).
std::vector<Client> Connect(uint16_t port, int n) {
  std::vector<Client> clients(static_cast<size_t>(n));
  for (Client& c : clients) c.connection = std::make_unique<Connection>(port);
  return clients;
}

void PrintRate(std::string_view head, const Figures& f) {
  const double requests = static_cast<double>(f.answered + f.gave_up);
  fmt::print(
      "bench apps={} requests={} seconds={:.3f} per_s={:.0f} p50_us={:.0f} p99_us={:.0f} "
      "cpu_us_per_request={:.0f} allocations_per_request={:.0f}",
      head, f.answered, f.seconds, PerSecond(static_cast<double>(f.answered), f.seconds),
      reef::bench::Quantile(f.latencies_us, 0.5), reef::bench::Quantile(f.latencies_us, 0.99),
      requests > 0 ? f.cpu_seconds * 1e6 / requests : 0.0,
      requests > 0 ? static_cast<double>(f.allocations) / requests : 0.0);
}

void PrintDeposits(std::string_view head, const Figures& f, uint64_t history_end) {
  PrintRate(head, f);
  const int64_t executions = f.answered + f.gave_up;
  fmt::print(
      " retries={} retries_per_execution={:.2f} gave_up={} history_end={}\n", f.retries,
      executions > 0 ? static_cast<double>(f.retries) / static_cast<double>(executions) : 0.0,
      f.gave_up, history_end);
  std::fflush(stdout);
}

/// Events tagged account:<account>: the history a deposit to it reads and folds.
uint64_t History(const ev::EventStore& store, const std::string& account) {
  uint64_t n = 0;
  Check(store.ReadEach(ev::Query{{ev::QueryItem{{}, {"account:" + account}}}}, {},
                       [&n](const ev::EventView&) {
                         ++n;
                         return true;
                       }),
        "count account events");
  return n;
}

/// Adds what `f` measured to `into`.
void Add(Figures& into, const Figures& f) {
  into.answered += f.answered;
  into.retries += f.retries;
  into.gave_up += f.gave_up;
  into.seconds += f.seconds;
  into.cpu_seconds += f.cpu_seconds;
  into.allocations += f.allocations;
  into.latencies_us.insert(into.latencies_us.end(), f.latencies_us.begin(), f.latencies_us.end());
}

/// Cases append and deposit own with `n` clients, alternating in kRounds rounds (the order
/// flips each round), so a change in the disk's sync speed falls on both:
///   append       each client appends with its own tag for `millis` / kRounds
///   deposit own  each client deposits `deposits` times to each of its accounts of the round
///                in turn (all opened first, untimed), so every account's history runs from 1
///                to 1 + `deposits` events whatever `n`
void RunAppendAndOwn(uint16_t port, const ev::EventStore& store, int n, const Sizes& sizes,
                     const HttpEnv& env) {
  const int64_t per_round =
      std::max<int64_t>(1, kOwnDepositsTarget / (n * sizes.deposits * kRounds));
  std::vector<Client> owners = Connect(port, n);
  RunClients(owners, {}, [&](Client& c, Clock::time_point) {
    for (int64_t k = 0; k < per_round * kRounds; ++k) {
      c.accounts.push_back(fmt::format("own{}-{}-{}", n, &c - owners.data(), k));
      OpenAccount(c, c.accounts.back());
    }
  });
  std::vector<Client> appenders = Connect(port, n);
  for (size_t i = 0; i < appenders.size(); ++i) {
    appenders[i].tag = fmt::format("anchor:a{}-{}", n, i);
  }
  const auto slice = std::chrono::milliseconds(std::max<int64_t>(sizes.millis / kRounds, 1));
  Figures append, own;
  for (int round = 0; round < kRounds; ++round) {
    for (int step = 0; step < 2; ++step) {
      if ((step + round) % 2 == 0) {
        Add(append, RunClients(appenders, slice, [](Client& c, Clock::time_point deadline) {
              while (Clock::now() < deadline) Append(c);
            }));
        continue;
      }
      Add(own, RunClients(owners, {}, [&](Client& c, Clock::time_point) {
            for (int64_t k = round * per_round; k < (round + 1) * per_round; ++k) {
              for (int64_t d = 0; d < sizes.deposits; ++d) {
                Deposit(c, c.accounts[static_cast<size_t>(k)], env);
              }
            }
          }));
    }
  }
  PrintRate(fmt::format("append clients={}", n), append);
  fmt::print("\n");
  PrintDeposits(
      fmt::format("deposit accounts=own clients={} deposits_per_account={}", n, sizes.deposits),
      own, History(store, owners[0].accounts.back()));
}

/// Case deposit shared: each of `n` clients deposits `deposits` times to ONE account.
void RunShared(uint16_t port, const ev::EventStore& store, int n, int64_t deposits, HttpEnv env) {
  const std::string shared = fmt::format("shared{}", n);
  std::vector<Client> clients = Connect(port, n);
  OpenAccount(clients[0], shared);
  env.conflicts_expected = true;
  Figures f = RunClients(clients, {}, [&](Client& c, Clock::time_point) {
    for (int64_t k = 0; k < deposits; ++k) Deposit(c, shared, env);
  });
  PrintDeposits(
      fmt::format("deposit accounts=shared clients={} deposits_per_client={}", n, deposits), f,
      History(store, shared));
}

/// Case deposit_history: one client's deposits to an account already holding about `history`
/// events (opened by the command, then MoneyDeposited events appended directly, untimed).
void RunHistory(uint16_t port, ev::EventStore& store, int64_t history, const HttpEnv& env) {
  const std::string account = fmt::format("history-{}", history);
  std::vector<Client> clients = Connect(port, 1);
  OpenAccount(clients[0], account);
  std::vector<ev::Event> batch;
  for (int64_t i = 1; i < history; ++i) {
    ev::Event e;
    e.type = "MoneyDeposited";
    e.tags = {"account:" + account};
    e.data = json{{"account_id", account}, {"amount", 1}}.dump();
    batch.push_back(std::move(e));
  }
  if (!batch.empty()) Check(store.Append(std::move(batch)), "history fill");
  const uint64_t before = History(store, account);
  Figures f = RunClients(clients, {}, [&](Client& c, Clock::time_point) {
    for (int i = 0; i < kHistorySamples; ++i) Deposit(c, account, env);
  });
  fmt::print("bench apps=deposit_history history={} samples={} p50_us={:.0f} p99_us={:.0f}\n",
             before, f.answered, reef::bench::Quantile(f.latencies_us, 0.5),
             reef::bench::Quantile(f.latencies_us, 0.99));
  std::fflush(stdout);
}

/// The HTTP cases on one store and runtime behind one in-process server.
void RunHttp(const Sizes& sizes) {
  const fs::path dir = fs::path(g_work_dir) / "http";
  std::unique_ptr<ev::EventStore> store = Check(ev::OpenEventStore(dir / "events"), "open store");
  reef::apps::RuntimeOptions runtime_options;
  runtime_options.data_dir = dir;
  HttpEnv env{runtime_options.command_max_retries, false};
  std::unique_ptr<reef::apps::ModuleRuntime> runtime =
      Check(reef::apps::ModuleRuntime::Open(*store, runtime_options), "open runtime");
  Check(runtime->Upload(ModuleKind::kCommand, "open-account", "1.0.0",
                        GuestBytes("bank_open_account"), true),
        "upload open-account");
  Check(runtime->Upload(ModuleKind::kCommand, "deposit", "1.0.0", GuestBytes("bank_deposit"), true),
        "upload deposit");
  reef::server::ServerOptions options;
  options.listen = "127.0.0.1:0";
  options.handler_threads = kHandlerThreads;
  for (auto& route : reef::events::http::EventRoutes(*store)) options.routes.push_back(route);
  for (auto& route : reef::apps::http::ModuleRoutes(*runtime)) options.routes.push_back(route);
  std::unique_ptr<reef::server::Server> server =
      Check(reef::server::Server::Start(std::move(options)), "start server");
  const uint16_t port = server->port();

  // Warm-up, untimed: every handler thread instantiates both commands (instances are kept
  // per thread) and the store sees appends.
  {
    std::vector<Client> clients = Connect(port, kMaxClients);
    RunClients(clients, {}, [&](Client& c, Clock::time_point) {
      const std::string account = fmt::format("warm-{}", &c - clients.data());
      c.tag = "anchor:" + account;
      OpenAccount(c, account);
      for (int i = 0; i < 2; ++i) {
        Deposit(c, account, env);
        Append(c);
      }
    });
  }

  for (int n : kClients) {
    if (sizes.clients != 0 && sizes.clients != n) continue;
    RunAppendAndOwn(port, *store, n, sizes, env);
    if (n > 1) RunShared(port, *store, n, sizes.shared_deposits, env);
  }
  if (sizes.clients == 0) {
    for (int64_t history : kHistories) RunHistory(port, *store, history, env);
  }
  server->Stop();
  server.reset();
  runtime.reset();
  store.reset();
  fs::remove_all(dir);
}

}  // namespace

int main(int argc, char** argv) {
  Sizes sizes;
  const std::string parent = reef::bench::ParseFlags(argc, argv, "apps_bench", kFlags, sizes);
  spdlog::set_level(spdlog::level::warn);  // the runtime's info lines would interleave

  std::error_code ec;
  fs::create_directories(parent, ec);
  std::string templ = (fs::path(parent) / "reef-apps-bench-XXXXXX").string();
  if (::mkdtemp(templ.data()) == nullptr) Die("mkdtemp {}: {}", templ, std::strerror(errno));
  g_work_dir = templ;
  std::atexit(RemoveWorkDir);
  const std::string_view tier = Check(reef::bench::UseEngineFromEnvironment(), "REEF_ENGINE");
  fmt::print("apps_bench: dir={} millis={} deposits={} shared_deposits={} events={} tier={}\n",
             g_work_dir, sizes.millis, sizes.deposits, sizes.shared_deposits, sizes.events, tier);

  if (sizes.http != 0) RunHttp(sizes);
  if (sizes.catchup != 0) {
    const uint32_t batch = reef::apps::RuntimeOptions{}.projector_batch_events;
    RunSqlite(g_work_dir, sizes.events, batch, false);
    RunSqlite(g_work_dir, std::min(sizes.events, kStmtRows), batch, true);
    RunCatchup(g_work_dir, sizes.events);
  }
  return 0;
}
