// The PostgreSQL client layer (pg.h) over libpq: binary parameters, results and connections
// (the pool, lock keys and migrations: pg_pool.cc).
#include "pg/pg.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <libpq-fe.h>
#include <poll.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <utility>

namespace reef::pg {

namespace {

void PutU32(std::string& out, uint32_t value) {
  uint32_t be = htonl(value);
  out.append(reinterpret_cast<const char*>(&be), 4);
}

std::string BigEndian64(int64_t value) {
  std::string out(8, '\0');
  auto u = static_cast<uint64_t>(value);
  for (int i = 7; i >= 0; --i) {
    out[i] = static_cast<char>(u & 0xff);
    u >>= 8;
  }
  return out;
}

std::string BigEndian32(int32_t value) {
  std::string out;
  PutU32(out, static_cast<uint32_t>(value));
  return out;
}

// libpq's messages end with a newline; a Status message should not.
std::string Trimmed(const char* text) {
  std::string out = text ? text : "";
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

// SQLSTATE classes that mean the connection or the server is gone, not the statement.
bool IsConnectionState(std::string_view state) {
  return state.starts_with("08") || state == "57P01" || state == "57P02" || state == "57P03";
}

// Replaces every occurrence of `secret` in `text` with "***".
void Scrub(std::string& text, std::string_view secret) {
  for (size_t at; !secret.empty() && (at = text.find(secret)) != std::string::npos;) {
    text.replace(at, secret.size(), "***");
  }
}

}  // namespace

// ---- Params -------------------------------------------------------------------------------------

Params& Params::Add(Oid type, std::string bytes) {
  types_.push_back(static_cast<uint32_t>(type));
  values_.push_back(std::move(bytes));
  nulls_.push_back(false);
  return *this;
}

Params& Params::Null(Oid type) {
  Add(type, {});
  nulls_.back() = true;
  return *this;
}

Params& Params::Int8(int64_t value) {
  return Add(Oid::kInt8, BigEndian64(value));
}
Params& Params::Int4(int32_t value) {
  return Add(Oid::kInt4, BigEndian32(value));
}
Params& Params::Bool(bool value) {
  return Add(Oid::kBool, std::string(1, value ? 1 : 0));
}
Params& Params::Text(std::string_view value) {
  return Add(Oid::kText, std::string(value));
}
Params& Params::Bytea(std::string_view value) {
  return Add(Oid::kBytea, std::string(value));
}
Params& Params::Uuid(std::span<const uint8_t, 16> value) {
  return Add(Oid::kUuid, std::string(reinterpret_cast<const char*>(value.data()), 16));
}

// The binary array format (array_send): dimensions, a has-null flag, the element type, then
// per dimension its length and lower bound, then each element as a length and its bytes.
Params& Params::AddArray(Oid array_type, Oid element_type,
                         std::span<const std::string_view> elements) {
  std::string out;
  size_t bytes = 20;
  for (std::string_view e : elements) bytes += 4 + e.size();
  out.reserve(bytes);
  PutU32(out, elements.empty() ? 0 : 1);
  PutU32(out, 0);
  PutU32(out, static_cast<uint32_t>(element_type));
  if (!elements.empty()) {
    PutU32(out, static_cast<uint32_t>(elements.size()));
    PutU32(out, 1);
  }
  for (std::string_view e : elements) {
    PutU32(out, static_cast<uint32_t>(e.size()));
    out.append(e);
  }
  return Add(array_type, std::move(out));
}

Params& Params::Int8Array(std::span<const int64_t> values) {
  std::vector<std::string> encoded;
  encoded.reserve(values.size());
  for (int64_t v : values) encoded.push_back(BigEndian64(v));
  std::vector<std::string_view> views(encoded.begin(), encoded.end());
  return AddArray(Oid::kInt8Array, Oid::kInt8, views);
}

Params& Params::Int4Array(std::span<const int32_t> values) {
  std::vector<std::string> encoded;
  encoded.reserve(values.size());
  for (int32_t v : values) encoded.push_back(BigEndian32(v));
  std::vector<std::string_view> views(encoded.begin(), encoded.end());
  return AddArray(Oid::kInt4Array, Oid::kInt4, views);
}

Params& Params::BoolArray(std::span<const uint8_t> values) {
  static constexpr char kFalse = 0, kTrue = 1;
  std::vector<std::string_view> views;
  views.reserve(values.size());
  for (uint8_t v : values) views.emplace_back(v != 0 ? &kTrue : &kFalse, 1);
  return AddArray(Oid::kBoolArray, Oid::kBool, views);
}

Params& Params::TextArray(std::span<const std::string_view> values) {
  return AddArray(Oid::kTextArray, Oid::kText, values);
}

Params& Params::ByteaArray(std::span<const std::string_view> values) {
  return AddArray(Oid::kByteaArray, Oid::kBytea, values);
}

Params& Params::UuidArray(std::span<const std::array<uint8_t, 16>> values) {
  std::vector<std::string_view> views;
  views.reserve(values.size());
  for (const auto& v : values) views.emplace_back(reinterpret_cast<const char*>(v.data()), 16);
  return AddArray(Oid::kUuidArray, Oid::kUuid, views);
}

// ---- BinaryCopy ---------------------------------------------------------------------------------

BinaryCopy::BinaryCopy() {
  out_.append("PGCOPY\n\xff\r\n\0", 11);  // signature
  PutU32(out_, 0);                        // flags
  PutU32(out_, 0);                        // header extension length
}

void BinaryCopy::Row(int16_t fields) {
  const auto n = static_cast<uint16_t>(fields);
  out_.push_back(static_cast<char>(n >> 8));
  out_.push_back(static_cast<char>(n & 0xff));
}

void BinaryCopy::Bytes(std::string_view bytes) {
  PutU32(out_, static_cast<uint32_t>(bytes.size()));
  out_.append(bytes);
}

void BinaryCopy::Uuid(std::span<const uint8_t, 16> value) {
  Bytes(std::string_view(reinterpret_cast<const char*>(value.data()), 16));
}

void BinaryCopy::Int8(int64_t value) {
  Bytes(BigEndian64(value));
}

void BinaryCopy::TextArray(std::span<const std::string_view> values) {
  Params one;
  one.TextArray(values);
  Bytes(one.values_.front());
}

std::string BinaryCopy::Finish() {
  out_.push_back('\xff');  // the trailer: a field count of -1
  out_.push_back('\xff');
  return std::move(out_);
}

// ---- PgResult -----------------------------------------------------------------------------------

PgResult::PgResult(pg_result* result) : result_(result) {}
PgResult::~PgResult() {
  if (result_) PQclear(result_);
}
PgResult::PgResult(PgResult&& other) noexcept : result_(std::exchange(other.result_, nullptr)) {}
PgResult& PgResult::operator=(PgResult&& other) noexcept {
  if (this != &other) {
    if (result_) PQclear(result_);
    result_ = std::exchange(other.result_, nullptr);
  }
  return *this;
}

bool PgResult::ok() const {
  if (!result_) return false;
  ExecStatusType s = PQresultStatus(result_);
  return s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK;
}

std::string PgResult::sqlstate() const {
  const char* s = result_ ? PQresultErrorField(result_, PG_DIAG_SQLSTATE) : nullptr;
  return s ? s : "";
}

std::string PgResult::message() const {
  const char* s = result_ ? PQresultErrorField(result_, PG_DIAG_MESSAGE_PRIMARY) : nullptr;
  return s ? s : (result_ ? Trimmed(PQresultErrorMessage(result_)) : "no result");
}

std::string PgResult::detail() const {
  const char* s = result_ ? PQresultErrorField(result_, PG_DIAG_MESSAGE_DETAIL) : nullptr;
  return s ? s : "";
}

Status PgResult::ToStatus() const {
  if (ok()) return Status::Ok();
  return Status::Internal(fmt::format("PostgreSQL error {}: {}", sqlstate(), message()));
}

int PgResult::rows() const {
  return result_ ? PQntuples(result_) : 0;
}

bool PgResult::is_null(int row, int column) const {
  return PQgetisnull(result_, row, column) != 0;
}

std::string_view PgResult::field(int row, int column) const {
  return {PQgetvalue(result_, row, column), static_cast<size_t>(PQgetlength(result_, row, column))};
}

Result<int64_t> PgResult::Int(int row, int column) const {
  std::string_view text = field(row, column);
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) {
    return Status::DataLoss(fmt::format("PostgreSQL returned '{}' where a number belongs", text));
  }
  return value;
}

// ---- Connection ---------------------------------------------------------------------------------

Result<std::unique_ptr<Connection>> Connection::Open(const ConnectOptions& options) {
  // Defaults first: what the caller's connection string says overrides them (expand_dbname).
  const std::string timeout = std::to_string(options.connect_timeout.count());
  const char* keywords[] = {"fallback_application_name",
                            "connect_timeout",
                            "keepalives_idle",
                            "keepalives_interval",
                            "keepalives_count",
                            "dbname",
                            nullptr};
  const char* values[] = {"reef", timeout.c_str(),          "10",   "5",
                          "3",    options.conninfo.c_str(), nullptr};
  pg_conn* conn = PQconnectdbParams(keywords, values, /*expand_dbname=*/1);
  if (conn == nullptr) return Status::Unavailable("cannot connect to PostgreSQL: out of memory");
  if (PQstatus(conn) != CONNECTION_OK) {
    std::string why = Trimmed(PQerrorMessage(conn));
    PQfinish(conn);
    // libpq may quote parts of the connection string back (a malformed URI): never the password.
    if (PQconninfoOption* parsed = PQconninfoParse(options.conninfo.c_str(), nullptr)) {
      for (PQconninfoOption* o = parsed; o->keyword != nullptr; ++o) {
        if (std::string_view(o->keyword) == "password" && o->val != nullptr) Scrub(why, o->val);
      }
      PQconninfoFree(parsed);
    }
    if (auto colon = options.conninfo.find("://"); colon != std::string::npos) {
      // An unparsable URI: drop whatever libpq quoted from its authority.
      size_t at = options.conninfo.find('@', colon);
      size_t pw = options.conninfo.find(':', colon + 3);
      if (at != std::string::npos && pw != std::string::npos && pw < at) {
        Scrub(why, std::string_view(options.conninfo).substr(pw + 1, at - pw - 1));
      }
    }
    return Status::Unavailable(fmt::format("cannot connect to PostgreSQL: {}", why));
  }
  // The server's notices (e.g. "relation ... already exists, skipping") go to the debug log,
  // not stderr.
  PQsetNoticeProcessor(
      conn, [](void*, const char* message) { spdlog::debug("PostgreSQL: {}", Trimmed(message)); },
      nullptr);
  return std::unique_ptr<Connection>(new Connection(conn));
}

Connection::~Connection() {
  PQfinish(conn_);
}

bool Connection::healthy() const {
  return PQstatus(conn_) == CONNECTION_OK;
}

bool Connection::Alive() {
  if (!healthy()) return false;
  pollfd fd{PQsocket(conn_), POLLIN, 0};
  if (poll(&fd, 1, 0) > 0 && PQconsumeInput(conn_) == 0) return false;
  return healthy();
}
int Connection::socket() const {
  return PQsocket(conn_);
}
int Connection::backend_pid() const {
  return PQbackendPID(conn_);
}

Status Connection::LostConnection(std::string_view what) const {
  return Status::Unavailable(fmt::format("PostgreSQL connection lost{}{}: {}",
                                         what.empty() ? "" : " during ", what,
                                         Trimmed(PQerrorMessage(conn_))));
}

namespace {

// libpq's view of `params`: values (NULL for a null), lengths, formats (all binary).
struct ParamArrays {
  std::vector<const char*> values;
  std::vector<int> lengths;
  std::vector<int> formats;
};

ParamArrays ArraysOf(const std::vector<std::string>& values, const std::vector<bool>& nulls) {
  ParamArrays a;
  a.formats.assign(values.size(), 1);
  for (size_t i = 0; i < values.size(); ++i) {
    a.values.push_back(nulls[i] ? nullptr : values[i].data());
    a.lengths.push_back(static_cast<int>(values[i].size()));
  }
  return a;
}

}  // namespace

Result<PgResult> Connection::Checked(PgResult result) const {
  if (!result.ok() && (!healthy() || IsConnectionState(result.sqlstate()))) {
    return LostConnection({});
  }
  return result;
}

Result<PgResult> Connection::Run(std::string_view sql, const Params& params, bool binary_rows) {
  const std::string text(sql);
  const ParamArrays a = ArraysOf(params.values_, params.nulls_);
  return Checked(
      PgResult(PQexecParams(conn_, text.c_str(), static_cast<int>(params.size()),
                            reinterpret_cast<const ::Oid*>(params.types_.data()), a.values.data(),
                            a.lengths.data(), a.formats.data(), binary_rows ? 1 : 0)));
}

Result<PgResult> Connection::RunPrepared(std::string_view sql, const Params& params,
                                         bool binary_rows) {
  auto known = std::find_if(prepared_.begin(), prepared_.end(), [&](const Prepared& p) {
    return p.sql == sql && p.types == params.types_;
  });
  if (known == prepared_.end()) {
    if (prepared_.size() >= kMaxPrepared) return Run(sql, params, binary_rows);
    Prepared next{std::string(sql), params.types_, fmt::format("reef_{}", prepared_count_++)};
    PgResult prepared(PQprepare(conn_, next.name.c_str(), next.sql.c_str(),
                                static_cast<int>(params.size()),
                                reinterpret_cast<const ::Oid*>(params.types_.data())));
    if (!prepared.ok()) return Checked(std::move(prepared));
    known = prepared_.insert(prepared_.end(), std::move(next));
  }
  const ParamArrays a = ArraysOf(params.values_, params.nulls_);
  PgResult result(PQexecPrepared(conn_, known->name.c_str(), static_cast<int>(params.size()),
                                 a.values.data(), a.lengths.data(), a.formats.data(),
                                 binary_rows ? 1 : 0));
  const std::string state = result.sqlstate();
  if ((state == "26000" || state == "0A000") && healthy()) {
    // Neither ran anything: forget the statement (a later call prepares it afresh) and run this
    // one unprepared.
    if (state == "0A000") {
      PgResult(PQexec(conn_, fmt::format("DEALLOCATE {}", known->name).c_str()));
    }
    prepared_.erase(known);
    return Run(sql, params, binary_rows);
  }
  return Checked(std::move(result));
}

Result<PgResult> Connection::Exec(std::string_view sql, const Params& params, std::string_view what,
                                  bool binary_rows) {
  REEF_ASSIGN_OR_RETURN(PgResult result, Run(sql, params, binary_rows));
  if (!result.ok()) {
    Status status = result.ToStatus();
    if (what.empty()) return status;
    return Status(status.code(), fmt::format("{}: {}", what, status.message()));
  }
  return result;
}

Status Connection::ExecScript(std::string_view sql, std::string_view what) {
  const std::string text(sql);
  if (PQsendQuery(conn_, text.c_str()) == 0) return LostConnection(what);
  Status status = Status::Ok();
  while (pg_result* raw = PQgetResult(conn_)) {
    PgResult result(raw);
    if (!result.ok() && status.ok()) {
      status = IsConnectionState(result.sqlstate())
                   ? LostConnection(what)
                   : Status::Internal(fmt::format("{}: PostgreSQL error {}: {}", what,
                                                  result.sqlstate(), result.message()));
    }
  }
  if (!healthy()) return LostConnection(what);
  return status;
}

Result<PgResult> Connection::CopyIn(std::string_view copy_sql, std::string_view data) {
  const std::string text(copy_sql);
  PgResult started(PQexec(conn_, text.c_str()));
  if (PQresultStatus(started.raw()) != PGRES_COPY_IN) {
    if (!healthy() || IsConnectionState(started.sqlstate())) return LostConnection("COPY");
    return started;  // refused before any data (a bad statement)
  }
  constexpr size_t kChunk = 1 << 20;
  for (size_t at = 0; at < data.size(); at += kChunk) {
    const size_t n = std::min(kChunk, data.size() - at);
    if (PQputCopyData(conn_, data.data() + at, static_cast<int>(n)) != 1) {
      return LostConnection("COPY");
    }
  }
  if (PQputCopyEnd(conn_, nullptr) != 1) return LostConnection("COPY");
  PgResult last;
  while (pg_result* raw = PQgetResult(conn_)) last = PgResult(raw);
  if (!healthy() || (!last.ok() && IsConnectionState(last.sqlstate()))) {
    return LostConnection("COPY");
  }
  return last;
}

Result<std::vector<Connection::Notification>> Connection::TakeNotifications() {
  if (PQconsumeInput(conn_) == 0) return LostConnection("LISTEN");
  std::vector<Notification> received;
  const int self = PQbackendPID(conn_);
  while (PGnotify* notify = PQnotifies(conn_)) {
    if (notify->be_pid != self) received.push_back({notify->relname, notify->extra});
    PQfreemem(notify);
  }
  return received;
}

// ---- Helpers ------------------------------------------------------------------------------------

bool IsPostgresUri(std::string_view store) {
  return store.starts_with("postgresql://") || store.starts_with("postgres://");
}

std::string RedactConninfo(std::string_view conninfo) {
  std::string out(conninfo);
  if (IsPostgresUri(out)) {
    // scheme://user:password@host... : drop ":password" before the last '@' ahead of the query
    // (a password with an unencoded '/' or '@' in it is still dropped whole).
    size_t start = out.find("://") + 3;
    size_t query = out.find('?', start);
    size_t at = out.rfind('@', query == std::string::npos ? std::string::npos : query);
    if (at != std::string::npos && at >= start) {
      size_t colon = out.find(':', start);
      if (colon != std::string::npos && colon < at) out.erase(colon, at - colon);
    }
  }
  // key=value form and URI query parameters: password=... becomes password=***.
  for (size_t pos = out.find("password="); pos != std::string::npos;
       pos = out.find("password=", pos + 1)) {
    size_t value = pos + 9;
    size_t end = out.find_first_of(" &", value);
    if (end == std::string::npos) end = out.size();
    out.replace(value, end - value, "***");
  }
  return out;
}

}  // namespace reef::pg
