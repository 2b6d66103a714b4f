// Read-only SQL on a projector's read model (ModuleRuntime::QueryProjector), bounded in rows,
// bytes, value size and time so that one HTTP request cannot hold a thread or memory for long.
#include <fmt/format.h>
#include <sqlite3.h>

#include <atomic>
#include <cctype>
#include <chrono>
#include <memory>

#include "apps/runners.h"
#include "apps/sqlite_heap.h"

namespace reef::apps {
namespace {

using json = nlohmann::json;

// Plain JSON -> value for projector query params (scalars only).
Result<Value> ParamValue(const json& j, size_t index) {
  switch (j.type()) {
    case json::value_t::null:
      return Value::Null();
    case json::value_t::boolean:
      return Value::Bool(j.get<bool>());
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      if (j.is_number_unsigned() && j.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) break;
      return Value::Int(j.get<int64_t>());
    case json::value_t::number_float:
      return Value::Float(j.get<double>());
    case json::value_t::string:
      return Value::String(j.get<std::string>());
    default:
      break;
  }
  return Status::InvalidArgument(fmt::format(
      "params[{}] must be null, a boolean, a 64-bit integer, a number or a string", index));
}

// printf() and format() with a huge width or precision ('%.*c' with 900000000) run for seconds
// inside one call, where no deadline check reaches them (SQLite stops appending at the length
// limit but still loops over every character), so queries may not call them.
// `denied` points at a bool set when a call was refused.
int QueryAuthorizer(void* denied, int action, const char*, const char* function, const char*,
                    const char*) {
  if (action == SQLITE_FUNCTION && function != nullptr &&
      (sqlite3_stricmp(function, "printf") == 0 || sqlite3_stricmp(function, "format") == 0)) {
    *static_cast<bool*>(denied) = true;
    return SQLITE_DENY;
  }
  return SQLITE_OK;
}

Status HeapExceeded(const SqlHeapBudget& heap) {
  if (heap.exceeded()) {
    return Status::LimitExceeded(fmt::format(
        "the query needed more than {} bytes of memory (the most one projector query may "
        "use); aggregate fewer rows or smaller values",
        kMaxReadModelQueryHeapBytes));
  }
  return Status::Unavailable(fmt::format(
      "the SQL statements running on this server hold their shared memory limit ({} bytes); "
      "retry the query shortly",
      kMaxSqlHeapBytesTotal));
}

}  // namespace

Result<json> QueryReadModel(const std::filesystem::path& path, std::string_view sql,
                            const json& params, const std::atomic<bool>* cancel) {
  // Everything SQLite allocates for this query, from open to close, is charged to it.
  SqlHeapBudget heap(kMaxReadModelQueryHeapBytes);
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nullptr) !=
      SQLITE_OK) {
    sqlite3_close_v2(db);
    return Status::Unavailable(fmt::format("cannot open {}", path.string()));
  }
  std::unique_ptr<sqlite3, int (*)(sqlite3*)> guard(db, sqlite3_close_v2);
  sqlite3_busy_timeout(db, 5'000);
  // No value may grow past what an answer may hold: printf('%.*c', 900000000, 'x'),
  // zeroblob(1e9) and their kin fail at once instead of allocating (SQLITE_TOOBIG).
  sqlite3_limit(db, SQLITE_LIMIT_LENGTH, static_cast<int>(kMaxReadModelAnswerBytes));
  sqlite3_limit(db, SQLITE_LIMIT_SQL_LENGTH, static_cast<int>(kMaxReadModelSqlBytes));
  // LIKE and GLOB cost about value length x pattern length in one step.
  sqlite3_limit(db, SQLITE_LIMIT_LIKE_PATTERN_LENGTH, 256);
  bool denied = false;
  sqlite3_set_authorizer(db, QueryAuthorizer, &denied);
  sqlite3_stmt* raw = nullptr;
  const char* tail = nullptr;
  int prepared = sqlite3_prepare_v2(db, sql.data(), static_cast<int>(sql.size()), &raw, &tail);
  if (prepared != SQLITE_OK && denied) {
    return Status::InvalidArgument(
        "sql: printf() and format() are not available in projector queries (a large width "
        "runs for seconds in one call, past the query's deadline): format on the client");
  }
  if (prepared != SQLITE_OK) {
    if (heap.exceeded() || heap.crowded()) return HeapExceeded(heap);
    return Status::InvalidArgument(fmt::format("sql: {}", sqlite3_errmsg(db)));
  }
  std::unique_ptr<sqlite3_stmt, int (*)(sqlite3_stmt*)> s(raw, sqlite3_finalize);
  if (raw == nullptr) return Status::InvalidArgument("sql holds no statement");
  for (const char* p = tail; p != nullptr && *p != '\0'; ++p) {
    if (!std::isspace(static_cast<unsigned char>(*p)) && *p != ';') {
      return Status::InvalidArgument("sql must be one statement");
    }
  }
  if (!sqlite3_stmt_readonly(raw)) {
    return Status::InvalidArgument(
        "sql must be read-only (a SELECT); projector databases are "
        "written only by their projector");
  }
  if (!params.is_array()) return Status::InvalidArgument("params must be an array");
  if (static_cast<int>(params.size()) != sqlite3_bind_parameter_count(raw)) {
    return Status::InvalidArgument(fmt::format("the statement has {} parameters; {} were given",
                                               sqlite3_bind_parameter_count(raw), params.size()));
  }
  for (size_t i = 0; i < params.size(); ++i) {
    REEF_ASSIGN_OR_RETURN(Value v, ParamValue(params[i], i));
    int index = static_cast<int>(i + 1);
    switch (v.kind()) {
      case Kind::kNull:
        sqlite3_bind_null(raw, index);
        break;
      case Kind::kBool:
        sqlite3_bind_int(raw, index, v.as_bool());
        break;
      case Kind::kInt:
        sqlite3_bind_int64(raw, index, v.as_int());
        break;
      case Kind::kFloat:
        sqlite3_bind_double(raw, index, v.as_float());
        break;
      default:
        sqlite3_bind_text64(raw, index, v.as_string().data(), v.as_string().size(),
                            SQLITE_TRANSIENT, SQLITE_UTF8);
    }
  }
  json rows = json::array();
  int rc;
  uint64_t bytes = 0;
  // A query may not hold a query thread for long: interrupted after kMaxReadModelQueryTime,
  // or at once when `cancel` becomes true.
  struct Interrupt {
    std::chrono::steady_clock::time_point until;
    const std::atomic<bool>* cancel;
    bool cancelled = false;
  } interrupt{std::chrono::steady_clock::now() + kMaxReadModelQueryTime, cancel};
  sqlite3_progress_handler(
      db, 1'000,
      [](void* state) {
        auto* i = static_cast<Interrupt*>(state);
        if (i->cancel != nullptr && i->cancel->load(std::memory_order_relaxed)) {
          i->cancelled = true;
          return 1;
        }
        return std::chrono::steady_clock::now() > i->until ? 1 : 0;
      },
      &interrupt);
  while ((rc = sqlite3_step(raw)) == SQLITE_ROW) {
    if (rows.size() >= kMaxReadModelRows) {
      return Status::LimitExceeded(
          fmt::format("the query returns more than {} rows; add a LIMIT", kMaxReadModelRows));
    }
    for (int c = 0; c < sqlite3_column_count(raw); ++c) bytes += 16 + sqlite3_column_bytes(raw, c);
    if (bytes > kMaxReadModelAnswerBytes) {
      return Status::LimitExceeded(
          fmt::format("the query's rows exceed {} bytes; select fewer columns or rows",
                      kMaxReadModelAnswerBytes));
    }
    json row = json::object();
    for (int c = 0; c < sqlite3_column_count(raw); ++c) {
      const char* column = sqlite3_column_name(raw, c);
      switch (sqlite3_column_type(raw, c)) {
        case SQLITE_INTEGER:
          row[column] = sqlite3_column_int64(raw, c);
          break;
        case SQLITE_FLOAT:
          row[column] = sqlite3_column_double(raw, c);
          break;
        case SQLITE_TEXT:
          row[column] = std::string(reinterpret_cast<const char*>(sqlite3_column_text(raw, c)),
                                    sqlite3_column_bytes(raw, c));
          break;
        case SQLITE_NULL:
          row[column] = nullptr;
          break;
        default:
          row[column] = "(blob)";
      }
    }
    rows.push_back(std::move(row));
  }
  if (heap.exceeded() || heap.crowded()) return HeapExceeded(heap);
  if (rc == SQLITE_INTERRUPT && interrupt.cancelled) {
    return Status::Unavailable("the server is stopping; the query was interrupted");
  }
  if (rc == SQLITE_INTERRUPT) {
    return Status::LimitExceeded(fmt::format("the query ran longer than {} s and was interrupted",
                                             kMaxReadModelQueryTime.count()));
  }
  if (rc == SQLITE_TOOBIG) {
    return Status::LimitExceeded(
        fmt::format("sql: a value would exceed {} bytes (the largest a query answer may hold)",
                    kMaxReadModelAnswerBytes));
  }
  if (rc != SQLITE_DONE) return Status::InvalidArgument(fmt::format("sql: {}", sqlite3_errmsg(db)));
  return rows;
}

}  // namespace reef::apps
