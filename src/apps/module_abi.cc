#include "apps/module_abi.h"

#include <fmt/format.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <spdlog/spdlog.h>
#include <sqlite3.h>

#include <chrono>
#include <cstring>

#include "apps/sqlite_heap.h"
#include "core/cbor.h"
#include "core/clock.h"
#include "core/utf8.h"

namespace reef::apps {

namespace {

using wasm::HostCall;
using wasm::HostCallOutcome;
using wasm::TrapKind;
using wasm::ValType;
using wasm::WasmValue;

constexpr ValType i32 = ValType::kI32;
constexpr ValType i64 = ValType::kI64;
constexpr uint32_t kMaxLogBytes = 512;
constexpr uint32_t kMaxSqlBytes = 64u << 10;
constexpr size_t kMaxFailBytes = 1024;  // of a `fail` reason kept in errors and statuses

ModuleCallContext& Ctx(HostCall& call) {
  return *static_cast<ModuleCallContext*>(call.context());
}

uint32_t U32(HostCall& call, size_t index) {
  return static_cast<uint32_t>(call.i32(index));
}

// Traps the call as a host error, keeping the reason for the caller's error message.
HostCallOutcome HostError(HostCall& call, std::string message) {
  Ctx(call).host_error = message;
  return call.Fail(TrapKind::kHostError, std::move(message));
}

// Views guest bytes [ptr, ptr + len) given by two of the call's arguments, or traps with
// host_bounds (setting *outcome).
std::optional<std::span<const uint8_t>> ViewArg(HostCall& call, size_t ptr_arg, size_t len_arg,
                                                HostCallOutcome* outcome) {
  auto bytes = call.memory().View(U32(call, ptr_arg), U32(call, len_arg));
  if (!bytes.ok()) {
    *outcome = call.Fail(TrapKind::kHostBounds, bytes.status().message());
    return std::nullopt;
  }
  return *bytes;
}

std::optional<std::string> ReadText(HostCall& call, size_t ptr_arg, size_t len_arg,
                                    HostCallOutcome* outcome) {
  auto bytes = ViewArg(call, ptr_arg, len_arg, outcome);
  if (!bytes) return std::nullopt;
  return std::string(reinterpret_cast<const char*>(bytes->data()), bytes->size());
}

std::optional<Value> ReadValue(HostCall& call, size_t ptr_arg, size_t len_arg,
                               HostCallOutcome* outcome, std::string_view what) {
  auto bytes = ViewArg(call, ptr_arg, len_arg, outcome);
  if (!bytes) return std::nullopt;
  auto value = DecodeCbor(*bytes, ModuleValueLimits());
  if (!value.ok()) {
    *outcome = HostError(call, fmt::format("{}: {}", what, value.status().message()));
    return std::nullopt;
  }
  return std::move(*value);
}

// Writes `bytes` to the guest buffer (out_ptr, out_cap) when they fit; returns their length.
HostCallOutcome WriteSized(HostCall& call, size_t ptr_arg, size_t cap_arg,
                           std::span<const uint8_t> bytes) {
  uint32_t cap = U32(call, cap_arg);
  if (bytes.size() <= cap) {
    Status written = call.memory().Write(U32(call, ptr_arg), bytes);
    if (!written.ok()) return call.Fail(TrapKind::kHostBounds, written.message());
  }
  call.results()[0] = static_cast<int32_t>(bytes.size());
  return HostCallOutcome::kComplete;
}

HostCallOutcome Log(HostCall& call) {
  int32_t level = call.i32(0);
  HostCallOutcome outcome;
  auto text = ReadText(call, 1, 2, &outcome);
  if (!text) return outcome;
  if (level < 0 || level > 5 || !IsValidUtf8(*text)) {
    call.results()[0] = int32_t{-1};
    return HostCallOutcome::kComplete;
  }
  if (text->size() > kMaxLogBytes) {
    call.results()[0] = int32_t{-2};
    return HostCallOutcome::kComplete;
  }
  static constexpr spdlog::level::level_enum kLevels[] = {
      spdlog::level::trace, spdlog::level::debug, spdlog::level::info,
      spdlog::level::warn,  spdlog::level::err,   spdlog::level::critical};
  spdlog::log(kLevels[level], "[{}] {}", Ctx(call).label, *text);
  call.results()[0] = int32_t{0};
  return HostCallOutcome::kComplete;
}

HostCallOutcome Fail(HostCall& call) {
  HostCallOutcome outcome;
  auto text = ReadText(call, 0, 1, &outcome);
  if (!text) return outcome;
  if (!IsValidUtf8(*text)) *text = "(the reason was not valid UTF-8)";
  if (text->size() > kMaxFailBytes) {
    // Kept whole up to the limit (cut at a character boundary) and marked, never cut silently.
    size_t cut = kMaxFailBytes;
    while (cut > 0 && (static_cast<unsigned char>((*text)[cut]) & 0xC0) == 0x80) --cut;
    std::string whole = fmt::format(" [cut: {} bytes in all]", text->size());
    text->resize(cut);
    *text += whole;
  }
  Ctx(call).failure = *text;
  return call.Fail(TrapKind::kGuestFailure, *text);
}

HostCallOutcome NowMs(HostCall& call) {
  ModuleCallContext& ctx = Ctx(call);
  ctx.read_clock_or_random = true;
  int64_t now = ctx.fixed_now_ms ? *ctx.fixed_now_ms : UnixNowMs();
  call.results()[0] = now;
  return HostCallOutcome::kComplete;
}

HostCallOutcome Random(HostCall& call) {
  ModuleCallContext& ctx = Ctx(call);
  ctx.read_clock_or_random = true;
  uint32_t len = U32(call, 1);
  if (len > kMaxRandomBytes) {
    call.results()[0] = int32_t{-2};
    return HostCallOutcome::kComplete;
  }
  std::vector<uint8_t> bytes(len);
  if (ctx.random_seed) {
    // Deterministic: block i is SHA-256(seed || big-endian counter).
    size_t filled = 0;
    while (filled < len) {
      uint8_t input[40];
      std::memcpy(input, ctx.random_seed->data(), 32);
      uint64_t counter = ctx.random_counter++;
      for (int i = 0; i < 8; ++i) input[32 + i] = static_cast<uint8_t>(counter >> (56 - 8 * i));
      uint8_t block[SHA256_DIGEST_LENGTH];
      SHA256(input, sizeof input, block);
      size_t n = std::min<size_t>(sizeof block, len - filled);
      std::memcpy(bytes.data() + filled, block, n);
      filled += n;
    }
  } else if (len > 0 && RAND_bytes(bytes.data(), static_cast<int>(len)) != 1) {
    return HostError(call, "random: the system random source failed");
  }
  Status written = call.memory().Write(U32(call, 0), bytes);
  if (!written.ok()) return call.Fail(TrapKind::kHostBounds, written.message());
  call.results()[0] = int32_t{0};
  return HostCallOutcome::kComplete;
}

HostCallOutcome Env(HostCall& call) {
  HostCallOutcome outcome;
  auto key = ReadText(call, 0, 1, &outcome);
  if (!key) return outcome;
  const auto& env = Ctx(call).env;
  auto it = env.find(*key);
  if (it == env.end()) {
    call.results()[0] = int32_t{-6};
    return HostCallOutcome::kComplete;
  }
  auto bytes = std::span(reinterpret_cast<const uint8_t*>(it->second.data()), it->second.size());
  return WriteSized(call, 2, 3, bytes);
}

// ---- SQL ----------------------------------------------------------------------------------

struct StatementCloser {
  void operator()(sqlite3_stmt* s) const { sqlite3_finalize(s); }
};
using Statement = std::unique_ptr<sqlite3_stmt, StatementCloser>;

// What a guest's SQL may not do, checked when its statement is prepared: control
// transactions (the host commits each projector event with its position), attach other
// databases, change settings with PRAGMA, or touch the host's own tables (reef_*: the
// projector position, the effect watermark).
int GuestAuthorizer(void*, int action, const char* arg1, const char* arg2, const char*,
                    const char*) {
  auto host_table = [](const char* table) {
    return table != nullptr && sqlite3_strnicmp(table, "reef_", 5) == 0;
  };
  switch (action) {
    case SQLITE_TRANSACTION:
    case SQLITE_SAVEPOINT:
    case SQLITE_ATTACH:
    case SQLITE_DETACH:
      return SQLITE_DENY;
    case SQLITE_PRAGMA:
      return arg2 == nullptr ? SQLITE_OK : SQLITE_DENY;  // reading a pragma is fine
    // The table is the first argument of these (sqlite.org/c3ref/c_alter_table.html) ...
    case SQLITE_INSERT:
    case SQLITE_UPDATE:
    case SQLITE_DELETE:
    case SQLITE_DROP_TABLE:
      return host_table(arg1) ? SQLITE_DENY : SQLITE_OK;
    // ... and the second of these (the first is the database, index or trigger name).
    case SQLITE_ALTER_TABLE:
    case SQLITE_CREATE_INDEX:
    case SQLITE_DROP_INDEX:
    case SQLITE_CREATE_TRIGGER:
    case SQLITE_CREATE_TEMP_TRIGGER:
    case SQLITE_DROP_TRIGGER:
    case SQLITE_DROP_TEMP_TRIGGER:
      return host_table(arg2) ? SQLITE_DENY : SQLITE_OK;
    default:
      return SQLITE_OK;
  }
}

// Prepares `sql` (one statement) and binds `params` (a list of scalars) to ?1, ?2, ...
Result<Statement> Prepare(sqlite3* db, const std::string& sql, const Value& params) {
  if (db == nullptr) return Status::FailedPrecondition("this module kind has no SQL database");
  if (sql.size() > kMaxSqlBytes) {
    return Status::LimitExceeded(fmt::format("SQL text of {} bytes exceeds the limit of {} bytes",
                                             sql.size(), kMaxSqlBytes));
  }
  sqlite3_stmt* raw = nullptr;
  const char* tail = nullptr;
  sqlite3_set_authorizer(db, GuestAuthorizer, nullptr);
  int prepared = sqlite3_prepare_v2(db, sql.c_str(), static_cast<int>(sql.size()), &raw, &tail);
  sqlite3_set_authorizer(db, nullptr, nullptr);
  if (prepared != SQLITE_OK) {
    std::string why = sqlite3_errmsg(db);
    if (prepared == SQLITE_AUTH) {
      why +=
          "; module SQL may not control transactions, ATTACH, set PRAGMAs or write reef_* "
          "tables";
    }
    return Status::InvalidArgument(fmt::format("{} (in: {})", why, sql));
  }
  Statement statement(raw);
  if (raw == nullptr) return Status::InvalidArgument("the SQL text holds no statement");
  for (const char* p = tail; p != nullptr && *p != '\0'; ++p) {
    if (!std::isspace(static_cast<unsigned char>(*p)) && *p != ';') {
      return Status::InvalidArgument(
          fmt::format("one statement per call; text follows the first: {}", p));
    }
  }
  if (!params.is_list()) return Status::InvalidArgument("SQL params must be a list");
  const auto& list = params.as_list();
  if (static_cast<int>(list.size()) != sqlite3_bind_parameter_count(raw)) {
    return Status::InvalidArgument(fmt::format("the statement has {} parameters; {} were given",
                                               sqlite3_bind_parameter_count(raw), list.size()));
  }
  for (size_t i = 0; i < list.size(); ++i) {
    int index = static_cast<int>(i + 1);
    const Value& v = list[i];
    int rc = SQLITE_OK;
    switch (v.kind()) {
      case Kind::kNull:
        rc = sqlite3_bind_null(raw, index);
        break;
      case Kind::kBool:
        rc = sqlite3_bind_int(raw, index, v.as_bool() ? 1 : 0);
        break;
      case Kind::kInt:
        rc = sqlite3_bind_int64(raw, index, v.as_int());
        break;
      case Kind::kFloat:
        rc = sqlite3_bind_double(raw, index, v.as_float());
        break;
      case Kind::kString:
        rc = sqlite3_bind_text64(raw, index, v.as_string().data(), v.as_string().size(),
                                 SQLITE_TRANSIENT, SQLITE_UTF8);
        break;
      default:
        return Status::InvalidArgument(
            fmt::format("SQL param {} is a {}; only null, bool, int, float and string bind", index,
                        KindName(v.kind())));
    }
    if (rc != SQLITE_OK) return Status::Internal(sqlite3_errmsg(db));
  }
  return statement;
}

// Longest one SQL call of a module may run, most bytes of rows one sql_query returns, and the
// most SQLite heap one call may hold (SqlHeapBudget): the instruction budget and the guest's
// memory limit do not see time or memory spent inside SQLite.
constexpr auto kMaxSqlTime = std::chrono::seconds(10);
constexpr uint64_t kMaxSqlRowBytes = 32u << 20;
constexpr int64_t kMaxSqlHeapBytes = 64 << 20;

// Interrupts the statements of `db` once `deadline` passes (sqlite3_progress_handler) while
// alive.
class SqlDeadline {
 public:
  SqlDeadline(sqlite3* db, std::chrono::steady_clock::duration limit)
      : db_(db), until_(std::chrono::steady_clock::now() + limit) {
    sqlite3_progress_handler(db_, 10'000, &SqlDeadline::Check, this);
  }
  ~SqlDeadline() { sqlite3_progress_handler(db_, 0, nullptr, nullptr); }
  SqlDeadline(const SqlDeadline&) = delete;
  SqlDeadline& operator=(const SqlDeadline&) = delete;

 private:
  static int Check(void* self) {
    return std::chrono::steady_clock::now() > static_cast<SqlDeadline*>(self)->until_ ? 1 : 0;
  }
  sqlite3* db_;
  std::chrono::steady_clock::time_point until_;
};

std::string SqlError(sqlite3* db, int rc, const std::string& sql, const SqlHeapBudget& heap) {
  if (heap.exceeded()) {
    return fmt::format(
        "the statement needed more than {} bytes of memory (the most one SQL call may use) "
        "(in: {})",
        heap.limit_bytes(), sql);
  }
  if (heap.crowded()) {
    return fmt::format(
        "the SQL statements running on this server hold their shared memory limit ({} bytes); "
        "the call may succeed when retried (in: {})",
        kMaxSqlHeapBytesTotal, sql);
  }
  if (rc == SQLITE_INTERRUPT) {
    return fmt::format("the statement ran longer than {} s and was interrupted (in: {})",
                       std::chrono::seconds(kMaxSqlTime).count(), sql);
  }
  return fmt::format("{} (in: {})", sqlite3_errmsg(db), sql);
}

// Reads the call's SQL text and params, or traps.
std::optional<std::pair<std::string, Value>> SqlArgs(HostCall& call, HostCallOutcome* outcome) {
  auto sql = ReadText(call, 0, 1, outcome);
  if (!sql) return std::nullopt;
  auto params = ReadValue(call, 2, 3, outcome, "SQL params");
  if (!params) return std::nullopt;
  return std::make_pair(std::move(*sql), std::move(*params));
}

// An sql_exec or sql_query call: handed to the host as the context's pending_sql while the
// invocation suspends.
HostCallOutcome Sql(HostCall& call, bool query) {
  HostCallOutcome outcome;
  auto args = SqlArgs(call, &outcome);
  if (!args) return outcome;
  SqlRequest request;
  request.query = query;
  request.sql = std::move(args->first);
  request.params = std::move(args->second);
  if (query) {
    request.out_ptr = U32(call, 4);
    request.out_cap = U32(call, 5);
  }
  Ctx(call).pending_sql = std::move(request);
  return HostCallOutcome::kSuspend;
}

HostCallOutcome SqlExec(HostCall& call) {
  return Sql(call, /*query=*/false);
}

HostCallOutcome SqlQuery(HostCall& call) {
  return Sql(call, /*query=*/true);
}

// The events of an append, handed to the host as the context's pending_append while the
// invocation suspends.
HostCallOutcome Append(HostCall& call) {
  HostCallOutcome outcome;
  auto events = ReadValue(call, 0, 1, &outcome, "append");
  if (!events) return outcome;
  Ctx(call).pending_append = std::move(*events);
  return HostCallOutcome::kSuspend;
}

wasm::HostRegistry BuildRegistry(ModuleKind kind) {
  wasm::HostRegistry registry("reef." + std::string(store::ModuleKindName(kind)), 1);
  std::vector<wasm::HostFunction> rows = {
      {"reef",
       "log",
       {{i32, i32, i32}, {i32}},
       Log,
       "log a UTF-8 message (at most 512 bytes) at level 0..5 (trace..fatal)"},
      {"reef", "fail", {{i32, i32}, {}}, Fail, "end the call as a failure with a reason"},
      {"reef",
       "now_ms",
       {{}, {i64}},
       NowMs,
       "Unix time in ms (fixed for a whole command execution)"},
      {"reef",
       "random",
       {{i32, i32}, {i32}},
       Random,
       "fill a buffer with random bytes (seeded per command execution)"},
      {"reef",
       "env",
       {{i32, i32, i32, i32}, {i32}},
       Env,
       "copy the module's environment variable into a buffer; -6 when unset"},
  };
  if (kind != ModuleKind::kCommand) {
    rows.push_back({"reef",
                    "sql_exec",
                    {{i32, i32, i32, i32}, {i64}},
                    SqlExec,
                    "run one SQL statement with bound params on the module's database"});
    rows.push_back({"reef",
                    "sql_query",
                    {{i32, i32, i32, i32, i32, i32}, {i32}},
                    SqlQuery,
                    "run one SQL query; copy its rows (CBOR list of records) into a buffer"});
  }
  if (kind == ModuleKind::kEffect) {
    rows.push_back({"reef",
                    "append",
                    {{i32, i32}, {i64}},
                    Append,
                    "append a list of new events without a condition"});
  }
  for (auto& row : rows) {
    Status added = registry.Add(std::move(row));
    (void)added;  // distinct rows of number types: cannot fail
  }
  return registry;
}

struct RequiredExport {
  std::string_view name;
  wasm::FuncSignature signature;
};

std::vector<RequiredExport> RequiredExports(ModuleKind kind) {
  std::vector<RequiredExport> out = {{"reef_abi_version", {{}, {i32}}},
                                     {"reef_alloc", {{i32}, {i32}}}};
  switch (kind) {
    case ModuleKind::kCommand:
      out.push_back({"reef_command_init", {{i32, i32}, {i64}}});
      out.push_back({"reef_command_fold", {{i32, i32, i32, i32, i32, i32}, {i64}}});
      out.push_back({"reef_command_decide", {{i32, i32, i32, i32}, {i64}}});
      break;
    case ModuleKind::kProjector:
      out.push_back({"reef_query", {{}, {i64}}});
      out.push_back({"reef_project", {{i32, i32}, {i32}}});
      break;
    case ModuleKind::kEffect:
      out.push_back({"reef_query", {{}, {i64}}});
      out.push_back({"reef_partition_key", {{i32, i32}, {i64}}});
      out.push_back({"reef_effect", {{i32, i32}, {i32}}});
      break;
  }
  return out;
}

}  // namespace

ValueLimits ModuleValueLimits() {
  ValueLimits limits;
  limits.max_depth = 72;
  limits.max_nodes = 1'000'000;
  limits.max_string_bytes = 32u << 20;
  limits.max_cbor_bytes = 32u << 20;
  limits.max_json_bytes = 32u << 20;
  return limits;
}

SqlOutcome RunSql(sqlite3* db, const SqlRequest& request) {
  const char* what = request.query ? "sql_query: " : "sql_exec: ";
  SqlOutcome out;
  SqlHeapBudget heap(kMaxSqlHeapBytes);
  auto statement = Prepare(db, request.sql, request.params);
  if (!statement.ok()) {
    out.error = what + statement.status().message();
    return out;
  }
  sqlite3_stmt* s = statement->get();
  int rc;
  SqlDeadline deadline(db, kMaxSqlTime);
  if (!request.query) {
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    }
    if (rc != SQLITE_DONE) {
      out.error = what + SqlError(db, rc, request.sql, heap);
    } else {
      out.changes = static_cast<int64_t>(sqlite3_changes64(db));
    }
    return out;
  }
  List rows;
  uint64_t row_bytes = 0;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    for (int c = 0; c < sqlite3_column_count(s); ++c) row_bytes += 9 + sqlite3_column_bytes(s, c);
    if (row_bytes > kMaxSqlRowBytes) {
      out.error = fmt::format("sql_query: the rows exceed {} bytes; add a LIMIT (in: {})",
                              kMaxSqlRowBytes, request.sql);
      return out;
    }
    Record row;
    for (int c = 0; c < sqlite3_column_count(s); ++c) {
      std::string name = sqlite3_column_name(s, c);
      switch (sqlite3_column_type(s, c)) {
        case SQLITE_INTEGER:
          row[name] = Value::Int(sqlite3_column_int64(s, c));
          break;
        case SQLITE_FLOAT:
          row[name] = Value::Float(sqlite3_column_double(s, c));
          break;
        case SQLITE_TEXT:
          row[name] =
              Value::String(std::string(reinterpret_cast<const char*>(sqlite3_column_text(s, c)),
                                        sqlite3_column_bytes(s, c)));
          break;
        case SQLITE_NULL:
          row[name] = Value::Null();
          break;
        default:
          out.error =
              fmt::format("sql_query: column '{}' is a BLOB; ABI v1 values have no bytes (in: {})",
                          name, request.sql);
          return out;
      }
    }
    rows.push_back(Value::RecordOf(std::move(row)));
  }
  if (rc != SQLITE_DONE) {
    out.error = what + SqlError(db, rc, request.sql, heap);
    return out;
  }
  auto encoded = EncodeCbor(Value::ListOf(std::move(rows)), ModuleValueLimits());
  if (!encoded.ok()) {
    out.error = "sql_query: the rows " + encoded.status().message();
    return out;
  }
  out.rows = std::move(*encoded);
  return out;
}

const wasm::HostRegistry& ModuleRegistry(ModuleKind kind) {
  static const wasm::HostRegistry command = BuildRegistry(ModuleKind::kCommand);
  static const wasm::HostRegistry projector = BuildRegistry(ModuleKind::kProjector);
  static const wasm::HostRegistry effect = BuildRegistry(ModuleKind::kEffect);
  switch (kind) {
    case ModuleKind::kCommand:
      return command;
    case ModuleKind::kProjector:
      return projector;
    case ModuleKind::kEffect:
      return effect;
  }
  return command;
}

Status CheckModuleExports(ModuleKind kind, const wasm::Module& module) {
  std::string problems;
  auto add = [&problems](std::string problem) {
    problems += (problems.empty() ? "" : "; ") + problem;
  };
  const wasm::ExportInfo* memory = module.FindExport("memory");
  if (memory == nullptr || memory->kind != wasm::ExternKind::kMemory) {
    add("missing export `memory` (memory)");
  }
  for (const RequiredExport& r : RequiredExports(kind)) {
    const wasm::ExportInfo* e = module.FindExport(r.name);
    if (e == nullptr) {
      add(fmt::format("missing export `{}` (function {})", r.name, r.signature.ToString()));
    } else if (e->kind != wasm::ExternKind::kFunc || !(e->signature == r.signature)) {
      add(fmt::format("export `{}` must be function {}", r.name, r.signature.ToString()));
    }
  }
  if (problems.empty()) return Status::Ok();
  return Status::InvalidArgument(
      fmt::format("not a reef v1 {} module: {}", store::ModuleKindName(kind), problems));
}

}  // namespace reef::apps
