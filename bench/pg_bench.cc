// pg_bench: the PostgreSQL store against plain PostgreSQL in one run on one throwaway cluster
// with PostgreSQL's durable defaults (scripts/pg_cluster.sh; fsync on). scripts/bench.sh
// prints its table (docs/benchmarks.md "PostgreSQL"). Cases, each for --millis:
//   insert       anchor: plain single-row INSERTs of the same rows, autocommit, 1 and 10 writers
//                (in 4 rounds alternating with cond and cond_alone, --millis x 2 in all)
//   copy         anchor: COPY of 100 and 1000 of the same rows per transaction, 1 writer
//   cond         Reef: conditional appends of one event, 1 and 10 writers (each append's
//                condition on its own tag, read once: no conflicts)
//   cond_alone   the same with 10 writers and grouping off (each append its own transaction)
//   batch        Reef: appends of 100 and 1000 events, 1 writer
//   lag          Reef: 10 writers appending while a subscriber on a second store (another
//                node's) and one on the writers' store deliver; lag = delivery - acknowledgement
//   bank         deposits over HTTP by 16 keep-alive clients: `reef serve` on its embedded
//                store, on PostgreSQL, and two nodes sharing the database (clients split)
// Every line: `bench pg=<case> key=value ...`.
//
//   pg_bench --state DIR [--millis N] [--bank 0] [--store 0]   (0: skip the bank / the store cases)
//            [--group-appends N] [--group-transactions N]        (the store's grouping options)
#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "bench_die.h"
#include "bench_http.h"
#include "events/event_store.h"
#include "pg/pg.h"
#include "support/reef_server.h"

namespace reef::bench {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

std::string g_cluster;  // the cluster's conninfo (dbname=postgres)

void Expect(bool ok, std::string_view what) {
  if (!ok) Die("{}", what);
}

std::string StartCluster(const std::string& state) {
  std::string command = fmt::format("bash '{}' start '{}' 2>&1", REEF_PG_CLUSTER_SCRIPT, state);
  std::string out;
  FILE* pipe = popen(command.c_str(), "r");
  Expect(pipe != nullptr, "popen failed");
  char buffer[512];
  while (fgets(buffer, sizeof buffer, pipe) != nullptr) out += buffer;
  Expect(pclose(pipe) == 0, "cannot start PostgreSQL: " + out);
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

std::unique_ptr<pg::Connection> Connect(const std::string& conninfo) {
  return Check(pg::Connection::Open({conninfo}), "connect");
}

// A fresh database; its conninfo.
std::string FreshDatabase(const std::string& name) {
  auto admin = Connect(g_cluster);
  Check(admin->ExecScript(fmt::format("DROP DATABASE IF EXISTS {} WITH (FORCE)", name), "drop"),
        "drop database");
  Check(admin->ExecScript(fmt::format("CREATE DATABASE {}", name), "create"), "create database");
  return g_cluster + " dbname=" + name;
}

std::string Uri(const std::string& conninfo) {
  auto field = [&](std::string_view key) {  // the last occurrence wins, as in libpq
    size_t at = conninfo.rfind(std::string(key) + "=");
    at += key.size() + 1;
    return conninfo.substr(at, conninfo.find(' ', at) - at);
  };
  return fmt::format("postgresql://{}@/{}?host={}&port={}", field("user"), field("dbname"),
                     field("host"), field("port"));
}

// ~100 bytes of JSON, like a bank event.
std::string Data(int writer, int64_t i) {
  return fmt::format(R"({{"account_id":"acct-{}-{}","amount":{},"note":"benchmark deposit"}})",
                     writer, i, 1000 + i % 100);
}

struct Samples {
  std::mutex mu;
  std::vector<double> us;
  void Add(std::vector<double>& local) {
    std::lock_guard lock(mu);
    us.insert(us.end(), local.begin(), local.end());
  }
};

void Print(std::string_view name, std::string extra, uint64_t count, double seconds,
           std::vector<double> us) {
  fmt::print("bench pg={} {} count={} per_s={:.0f} p50_us={:.0f} p99_us={:.0f}\n", name, extra,
             count, count / seconds, Quantile(us, 0.5), Quantile(us, 0.99));
  std::fflush(stdout);
}

// Runs `writers` threads calling `one(writer, i)` (which returns how many it wrote) until
// `millis` pass; prints the line.
template <typename Setup, typename One>
void RunWriters(std::string_view name, int writers, std::chrono::milliseconds millis,
                std::string extra, Setup setup, One one) {
  std::atomic<uint64_t> total{0};
  Samples samples;
  std::vector<std::thread> threads;
  const auto start = Clock::now();
  const auto end = start + millis;
  for (int w = 0; w < writers; ++w) {
    threads.emplace_back([&, w] {
      auto state = setup(w);
      std::vector<double> local;
      uint64_t n = 0;
      for (int64_t i = 0; Clock::now() < end; ++i) {
        const auto t0 = Clock::now();
        n += one(state, w, i);
        local.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
      }
      total += n;
      samples.Add(local);
    });
  }
  for (auto& t : threads) t.join();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  Print(name, extra, total.load(), seconds, std::move(samples.us));
}

// One side of an interleaved comparison: its name and what one call writes (returns how many
// events; `i` counts each writer's calls across rounds).
struct Side {
  std::string name;
  std::function<uint64_t(int writer, int64_t i)> one;
  uint64_t count = 0;
  double seconds = 0;
  std::vector<double> us;
};

// Runs the sides in turn, `writers` threads each, in `rounds` rounds of `millis` / rounds, so
// that a machine whose speed drifts during the run (other load, a noisy neighbour) moves every
// side alike; then prints each side's line.
void RunRounds(std::vector<Side*> sides, int writers, std::chrono::milliseconds millis, int rounds,
               const std::string& extra) {
  std::vector<std::vector<int64_t>> next(sides.size(), std::vector<int64_t>(writers, 0));
  for (int r = 0; r < rounds; ++r) {
    for (size_t k = 0; k < sides.size(); ++k) {
      Side& side = *sides[k];
      std::atomic<uint64_t> total{0};
      Samples samples;
      std::vector<std::thread> threads;
      const auto start = Clock::now();
      const auto end = start + millis / rounds;
      for (int w = 0; w < writers; ++w) {
        threads.emplace_back([&, w] {
          std::vector<double> local;
          uint64_t n = 0;
          int64_t& i = next[k][static_cast<size_t>(w)];
          for (; Clock::now() < end; ++i) {
            const auto t0 = Clock::now();
            n += side.one(w, i);
            local.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
          }
          total += n;
          samples.Add(local);
        });
      }
      for (auto& t : threads) t.join();
      side.seconds += std::chrono::duration<double>(Clock::now() - start).count();
      side.count += total.load();
      side.us.insert(side.us.end(), samples.us.begin(), samples.us.end());
    }
  }
  for (Side* side : sides) Print(side->name, extra, side->count, side->seconds, side->us);
}

constexpr const char* kAnchorTable = R"sql(
CREATE TABLE anchor_events (
  position bigserial PRIMARY KEY, id uuid NOT NULL UNIQUE, type text NOT NULL,
  tags text[] NOT NULL, data bytea NOT NULL, timestamp_ms bigint NOT NULL,
  correlation_id text NOT NULL, causation_id text NOT NULL, idempotency_key text NOT NULL,
  user_metadata text NOT NULL))sql";

// COPY of as many rows per transaction as the batches below append.
void CopyAnchors(std::chrono::milliseconds millis) {
  const std::string db = FreshDatabase("reef_bench_anchor_copy");
  Check(Connect(db)->ExecScript(kAnchorTable, "anchor table"), "anchor table");
  for (int batch : {100, 1000}) {
    RunWriters(
        "copy", 1, millis, fmt::format("writers=1 events_per_append={}", batch),
        [&](int) { return Connect(db); },
        [batch](std::unique_ptr<pg::Connection>& conn, int w, int64_t i) -> uint64_t {
          std::string rows;
          for (int k = 0; k < batch; ++k) {
            const events::EventId id = Check(events::NewEventId(), "id");
            std::string hex;
            for (unsigned char c : Data(w, i * batch + k)) hex += fmt::format("{:02x}", c);
            rows += fmt::format("{}\tMoneyDeposited\t{{account:acct-{}-{}}}\t\\\\x{}\t{}\t\t\t\t\n",
                                events::FormatEventId(id), w, i * batch + k, hex, i);
          }
          pg::PgResult copied =
              Check(conn->CopyIn("COPY anchor_events (id, type, tags, data, timestamp_ms, "
                                 "correlation_id, causation_id, idempotency_key, user_metadata) "
                                 "FROM STDIN",
                                 rows),
                    "copy");
          Check(copied.ToStatus(), "copy");
          return static_cast<uint64_t>(batch);
        });
  }
}

// The store's options: its grouping of small appends from --group-appends and
// --group-transactions, else its defaults.
events::PostgresEventStoreOptions g_store_options;

std::unique_ptr<events::EventStore> OpenStore(const std::string& db,
                                              events::PostgresEventStoreOptions options) {
  return Check(events::OpenPostgresEventStore(db, options), "open the store");
}

std::unique_ptr<events::EventStore> OpenStore(const std::string& db) {
  return OpenStore(db, g_store_options);
}

events::Event MakeEvent(int w, int64_t i) {
  events::Event e;
  e.type = "MoneyDeposited";
  e.tags = {fmt::format("account:acct-{}-{}", w, i)};
  e.data = Data(w, i);
  return e;
}

// Conditional appends against plain INSERTs of the same rows, 1 and 10 writers, in
// interleaved rounds.
void Conditional(std::chrono::milliseconds millis) {
  const std::string anchor_db = FreshDatabase("reef_bench_anchor");
  Check(Connect(anchor_db)->ExecScript(kAnchorTable, "anchor table"), "anchor table");
  std::vector<std::unique_ptr<pg::Connection>> conns;
  for (int w = 0; w < 10; ++w) conns.push_back(Connect(anchor_db));
  auto store = OpenStore(FreshDatabase("reef_bench_store"));
  events::PostgresEventStoreOptions alone_options = g_store_options;
  alone_options.group_appends = 1;
  auto alone_store = OpenStore(FreshDatabase("reef_bench_alone"), alone_options);
  const events::Position after = store->Head();
  for (int writers : {1, 10}) {
    Side insert{"insert", [&](int w, int64_t i) -> uint64_t {
                  const events::EventId id = Check(events::NewEventId(), "id");
                  std::string data = Data(w, i);
                  std::string tag = fmt::format("account:acct-{}-{}", w, i);
                  std::vector<std::string_view> tags = {tag};
                  pg::Params p;
                  p.Uuid(id).Text("MoneyDeposited").TextArray(tags).Bytea(data).Int8(i);
                  // Prepared, as the store's own statements are.
                  pg::PgResult inserted =
                      Check(conns[static_cast<size_t>(w)]->RunPrepared(
                                "INSERT INTO anchor_events (id, type, tags, data, timestamp_ms, "
                                "correlation_id, causation_id, idempotency_key, user_metadata) "
                                "VALUES ($1, $2, $3, $4, $5, '', '', '', '')",
                                p),
                            "insert");
                  Check(inserted.ToStatus(), "insert");
                  return 1;
                }};
    Side cond{"cond", [&, writers](int w, int64_t i) -> uint64_t {
                events::Event e = MakeEvent(w + 100 * writers, i);
                events::Query q{{events::QueryItem{{e.type}, {e.tags[0]}}}};
                Check(store->Append({e}, events::AppendCondition{q, after}), "append");
                return 1;
              }};
    // With 10 writers also the same appends with grouping off: each its own transaction.
    Side alone{"cond_alone", [&](int w, int64_t i) -> uint64_t {
                 events::Event e = MakeEvent(w + 5000, i);
                 events::Query q{{events::QueryItem{{e.type}, {e.tags[0]}}}};
                 Check(alone_store->Append({e}, events::AppendCondition{q, after}), "append");
                 return 1;
               }};
    std::vector<Side*> sides = {&insert, &cond};
    if (writers == 10) sides.push_back(&alone);
    RunRounds(sides, writers, millis, 4, fmt::format("writers={} events_per_append=1", writers));
  }
}

// Appends of 100 and 1000 events (the second through COPY), 1 writer.
void ReefStore(std::chrono::milliseconds millis) {
  auto store = OpenStore(FreshDatabase("reef_bench_batches"));
  for (int size : {100, 1000}) {
    RunWriters(
        "batch", 1, millis, fmt::format("writers=1 events_per_append={}", size),
        [](int) { return 0; },
        [&, size](int, int w, int64_t i) -> uint64_t {
          std::vector<events::Event> batch;
          for (int k = 0; k < size; ++k) {
            batch.push_back(MakeEvent(w + 7000 + size, i * size + k));
          }
          Check(store->Append(std::move(batch)), "append");
          return static_cast<uint64_t>(size);
        });
  }
}

// Lag: 10 writers on one store; subscribers on it and on a second store instance.
void Lag(std::chrono::milliseconds millis) {
  const std::string db = FreshDatabase("reef_bench_lag");
  auto writers_store = OpenStore(db);
  auto other_store = OpenStore(db);
  std::mutex mu;
  std::map<events::Position, Clock::time_point> acked;
  std::atomic<bool> done{false};
  auto follow = [&](events::EventStore& store, std::vector<double>& lags) {
    auto sub = Check(store.Subscribe(events::Query{}, store.Head()), "subscribe");
    std::vector<std::pair<events::Position, Clock::time_point>> seen;
    while (!done.load()) {
      auto next = Check(sub->Next(1000, 100ms), "next");
      const auto now = Clock::now();
      for (const auto& e : next) seen.emplace_back(e.position, now);
    }
    std::lock_guard lock(mu);
    for (const auto& [position, at] : seen) {
      auto it = acked.find(position);
      if (it == acked.end()) continue;
      lags.push_back(
          std::max(0.0, std::chrono::duration<double, std::micro>(at - it->second).count()));
    }
  };
  std::vector<double> remote, local;
  std::thread remote_thread([&] { follow(*other_store, remote); });
  std::thread local_thread([&] { follow(*writers_store, local); });
  std::this_thread::sleep_for(200ms);
  RunWriters(
      "lag_writers", 10, millis, "writers=10 events_per_append=1", [](int) { return 0; },
      [&](int, int w, int64_t i) -> uint64_t {
        events::Event e = MakeEvent(w, i);
        events::Query q{{events::QueryItem{{e.type}, {e.tags[0]}}}};
        const events::Position p =
            Check(writers_store->Append({e}, events::AppendCondition{q, 0}), "append");
        const auto now = Clock::now();
        std::lock_guard lock(mu);
        acked[p] = now;
        return 1;
      });
  std::this_thread::sleep_for(500ms);
  done = true;
  remote_thread.join();
  local_thread.join();
  for (auto [name, lags] : {std::pair{"lag_remote", &remote}, std::pair{"lag_local", &local}}) {
    fmt::print("bench pg={} writers=10 delivered={} p50_us={:.0f} p99_us={:.0f} max_us={:.0f}\n",
               name, lags->size(), Quantile(*lags, 0.5), Quantile(*lags, 0.99),
               Quantile(*lags, 1.0));
  }
  std::fflush(stdout);
}

// Deposits over HTTP: 16 clients on `nodes` nodes sharing a PostgreSQL database, or (nodes 0)
// on one node with the embedded store.
void Bank(std::chrono::milliseconds millis, int nodes) {
  const std::string db = FreshDatabase(fmt::format("reef_bench_bank_{}", nodes));
  const bool embedded = nodes == 0;
  nodes = std::max(nodes, 1);
  std::vector<std::unique_ptr<testing::ReefServer>> servers;
  for (int n = 0; n < nodes; ++n) {
    std::vector<std::string> args;
    if (!embedded) args = {"--store", Uri(db)};
    servers.push_back(std::make_unique<testing::ReefServer>(REEF_BINARY, args));
    std::string started = servers.back()->Start();
    Expect(started.empty(), started);
  }
  KeepAliveConnection admin("pg_bench", servers[0]->port());
  for (auto [kind, name, wasm] : {std::tuple{"commands", "open-account", "bank_open_account"},
                                  std::tuple{"commands", "deposit", "bank_deposit"}}) {
    std::string path = fmt::format("{}/{}.wasm", REEF_GUEST_DIR, wasm);
    FILE* f = fopen(path.c_str(), "rb");
    Expect(f != nullptr, "missing " + path);
    std::string bytes;
    char chunk[65536];
    for (size_t n; (n = fread(chunk, 1, sizeof chunk, f)) > 0;) bytes.append(chunk, n);
    fclose(f);
    auto [status, body] = admin.Post(fmt::format("/{}/{}/versions/1.0.0?activate=true", kind, name),
                                     bytes, "application/wasm");
    Expect(status == 201, "upload: " + body);
  }
  constexpr int kClients = 16, kAccountsPerClient = 4;
  for (int c = 0; c < kClients; ++c) {
    for (int a = 0; a < kAccountsPerClient; ++a) {
      auto [status, body] =
          admin.Post("/commands/open-account/execute",
                     fmt::format(R"({{"account_id":"c{}-{}","owner":"Ada"}})", c, a));
      Expect(status == 200, "open: " + body);
    }
  }
  // Both nodes know the command before the clients start.
  std::this_thread::sleep_for(300ms);
  RunWriters(
      "bank", kClients, millis,
      fmt::format("store={} nodes={} clients={}", embedded ? "embedded" : "postgresql", nodes,
                  kClients),
      [&](int c) {
        return std::make_unique<KeepAliveConnection>("pg_bench", servers[c % nodes]->port());
      },
      [](std::unique_ptr<KeepAliveConnection>& conn, int c, int64_t i) -> uint64_t {
        auto [status, body] = conn->Post(
            "/commands/deposit/execute",
            fmt::format(R"({{"account_id":"c{}-{}","amount":5}})", c, i % kAccountsPerClient));
        Expect(status == 200, "deposit: " + body);
        return 1;
      });
}

}  // namespace
}  // namespace reef::bench

int main(int argc, char** argv) {
  using namespace reef::bench;
  std::string state;
  int64_t millis = 2000;
  bool bank = true;
  bool store = true;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string_view flag = argv[i];
    if (flag == "--state")
      state = argv[i + 1];
    else if (flag == "--millis")
      millis = std::stoll(argv[i + 1]);
    else if (flag == "--bank")
      bank = std::string_view(argv[i + 1]) != "0";
    else if (flag == "--store")
      store = std::string_view(argv[i + 1]) != "0";
    else if (flag == "--group-appends")
      g_store_options.group_appends = static_cast<uint32_t>(std::stoul(argv[i + 1]));
    else if (flag == "--group-transactions")
      g_store_options.group_transactions = static_cast<uint32_t>(std::stoul(argv[i + 1]));
    else
      Die("unknown flag {}", flag);
  }
  Expect(!state.empty(), "usage: pg_bench --state DIR [--millis N] [--bank 0]");
  g_cluster = StartCluster(state);
  const auto duration = std::chrono::milliseconds(millis);
  if (store) {
    Conditional(2 * duration);
    CopyAnchors(duration);
    ReefStore(duration);
    Lag(duration);
  }
  if (bank) {
    Bank(duration, 0);
    Bank(duration, 1);
    Bank(duration, 2);
  }
  return 0;
}
