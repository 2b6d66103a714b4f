// Reef's PostgreSQL client layer over libpq: a connection, its results, parameters in
// PostgreSQL's binary format, and a bounded pool. The PostgreSQL event store (src/events/pg)
// and module store (src/store/pg) use it; nothing else talks to PostgreSQL.
//
// Errors: a failure to connect, a lost connection or a server shutting down is Unavailable
// (the message never includes the connection string, which may hold a password); any other
// failed statement keeps its SQLSTATE (PgResult::sqlstate) for the caller to map, and
// PgResult::ToStatus makes it Internal.
//
// Thread ownership: a PgConnection and its results belong to one thread at a time (libpq's
// rule); PgPool is used from any thread.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/mutex.h"
#include "core/status.h"

struct pg_conn;
struct pg_result;

namespace reef::pg {

// PostgreSQL type oids of the parameters Reef binds (pg_type.dat).
enum class Oid : uint32_t {
  kBool = 16,
  kBytea = 17,
  kInt8 = 20,
  kInt4 = 23,
  kText = 25,
  kUuid = 2950,
  kBoolArray = 1000,
  kByteaArray = 1001,
  kInt4Array = 1007,
  kTextArray = 1009,
  kInt8Array = 1016,
  kUuidArray = 2951,
};

// The parameters of one statement ($1, $2, ...), each kept in PostgreSQL's binary format.
class Params {
 public:
  Params& Null(Oid type);
  Params& Int8(int64_t value);
  Params& Int4(int32_t value);
  Params& Bool(bool value);
  Params& Text(std::string_view value);
  Params& Bytea(std::string_view value);
  Params& Uuid(std::span<const uint8_t, 16> value);
  // One-dimensional arrays (lower bound 1), never NULL elements.
  Params& Int8Array(std::span<const int64_t> values);
  Params& Int4Array(std::span<const int32_t> values);
  Params& BoolArray(std::span<const uint8_t> values);  // 0 = false, else true
  Params& TextArray(std::span<const std::string_view> values);
  Params& ByteaArray(std::span<const std::string_view> values);
  Params& UuidArray(std::span<const std::array<uint8_t, 16>> values);

  size_t size() const { return types_.size(); }

 private:
  friend class Connection;
  friend class BinaryCopy;
  Params& Add(Oid type, std::string bytes);
  Params& AddArray(Oid array_type, Oid element_type, std::span<const std::string_view> elements);

  std::vector<uint32_t> types_;
  std::vector<std::string> values_;
  std::vector<bool> nulls_;
};

// The input of a COPY ... FROM STDIN (FORMAT binary): rows of fields in PostgreSQL's binary
// format (the header and trailer added by Finish).
class BinaryCopy {
 public:
  BinaryCopy();
  // Starts a row of `fields` fields; then call the field functions that many times.
  void Row(int16_t fields);
  void Bytes(std::string_view bytes);  // text, bytea (raw bytes)
  void Uuid(std::span<const uint8_t, 16> value);
  void Int8(int64_t value);
  void TextArray(std::span<const std::string_view> values);
  // The whole input; the writer is spent.
  std::string Finish();

 private:
  std::string out_;
};

// A statement's result. Rows are in text format unless the statement asked for binary.
class PgResult {
 public:
  PgResult() = default;
  explicit PgResult(pg_result* result);
  ~PgResult();
  PgResult(PgResult&& other) noexcept;
  PgResult& operator=(PgResult&& other) noexcept;

  // True when the statement succeeded (command or rows).
  bool ok() const;
  // The five-character SQLSTATE of a failed statement ("" when ok or unknown).
  std::string sqlstate() const;
  // The server's primary message and its DETAIL field ("" when none).
  std::string message() const;
  std::string detail() const;
  // Ok, or Internal naming the SQLSTATE and message.
  Status ToStatus() const;
  // libpq's result (for the calls this class does not wrap); null when none.
  pg_result* raw() const { return result_; }

  int rows() const;
  bool is_null(int row, int column) const;
  // The field as stored in the result (text or binary per the statement), valid while this
  // result lives.
  std::string_view field(int row, int column) const;
  // A text-format field parsed as a signed integer. Errors: DataLoss when it is not one.
  Result<int64_t> Int(int row, int column) const;

 private:
  pg_result* result_ = nullptr;
};

// How to reach the database and how long to wait for it.
struct ConnectOptions {
  // A libpq connection string or postgresql:// URI (the caller's; never logged).
  std::string conninfo;
  std::chrono::seconds connect_timeout{10};
};

// One libpq connection.
class Connection {
 public:
  // Connects (blocking). Errors: Unavailable with libpq's reason.
  static Result<std::unique_ptr<Connection>> Open(const ConnectOptions& options);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Runs one statement with `params`; rows come back in text format, or binary when
  // `binary_rows`. A failed statement is a PgResult with !ok() (its SQLSTATE kept); a lost
  // connection or a server shutting down is Unavailable.
  Result<PgResult> Run(std::string_view sql, const Params& params = {}, bool binary_rows = false);
  // Run, as a statement prepared on this connection the first time it sees `sql` with these
  // parameter types (parsed and planned once, not at every call): for the few statements a
  // connection runs over and over. At most kMaxPrepared per connection, then Run's way. A
  // prepared statement the server no longer has (26000) or can no longer run as planned
  // (0A000: a function's result type changed under it) is forgotten and the call runs once
  // Run's way (neither error executed anything).
  Result<PgResult> RunPrepared(std::string_view sql, const Params& params,
                               bool binary_rows = false);
  static constexpr size_t kMaxPrepared = 16;
  // Run, with a failed statement as an error (PgResult::ToStatus, prefixed with `what`).
  Result<PgResult> Exec(std::string_view sql, const Params& params = {}, std::string_view what = {},
                        bool binary_rows = false);
  // Runs one or more statements without parameters (the simple query protocol).
  Status ExecScript(std::string_view sql, std::string_view what);
  // Runs `copy_sql` (a COPY ... FROM STDIN) and sends `data` as its input (in the format the
  // statement names). A failed COPY is a PgResult with !ok() (its SQLSTATE kept); a lost
  // connection is Unavailable.
  Result<PgResult> CopyIn(std::string_view copy_sql, std::string_view data);

  // False once the connection is known to be broken: it must be dropped.
  bool healthy() const;
  // Like healthy(), but first reads what the server sent while the connection sat idle, so a
  // session the server ended (a restart, pg_terminate_backend) shows as broken. Never blocks.
  bool Alive();
  // The socket, for waiting on notifications (LISTEN).
  int socket() const;
  // A NOTIFY received: its channel and payload.
  struct Notification {
    std::string channel;
    std::string payload;
  };
  // Reads what the server sent and returns the notifications received from other sessions, in
  // order. Errors: Unavailable when the connection broke.
  Result<std::vector<Notification>> TakeNotifications();
  // The server's process id (for logs and tests).
  int backend_pid() const;

 private:
  friend class Pool;
  explicit Connection(pg_conn* conn) : conn_(conn) {}
  Status LostConnection(std::string_view what) const;
  // A failed statement's result, or Unavailable when the connection broke under it.
  Result<PgResult> Checked(PgResult result) const;

  pg_conn* conn_;
  struct Prepared {
    std::string sql;
    std::vector<uint32_t> types;
    std::string name;
  };
  std::vector<Prepared> prepared_;
  uint64_t prepared_count_ = 0;  // names prepared so far: reef_0, reef_1, ...
};

// A fixed number of connections shared by any thread. Connections are opened on demand and
// reopened after one breaks; a caller waits for a free one up to `acquire_timeout`.
class Pool {
 public:
  Pool(ConnectOptions options, size_t size, std::chrono::milliseconds acquire_timeout);
  ~Pool();

  // A connection borrowed from the pool; it goes back when the lease ends (or is dropped when
  // it broke).
  class Lease {
   public:
    Lease(Pool* pool, std::unique_ptr<Connection> conn) : pool_(pool), conn_(std::move(conn)) {}
    Lease(Lease&& other) noexcept = default;
    // Gives this lease's connection back before taking `other`'s.
    Lease& operator=(Lease&& other) noexcept;
    ~Lease();
    Connection* operator->() const { return conn_.get(); }
    Connection& operator*() const { return *conn_; }

   private:
    Pool* pool_;
    std::unique_ptr<Connection> conn_;
  };

  // Borrows a connection. Errors: Unavailable when none is free within the timeout or the
  // database cannot be reached (libpq's reason).
  Result<Lease> Acquire();

  size_t size() const { return size_; }
  // Connections open now (idle and lent).
  size_t open_connections() const;
  // Failed connection attempts since the pool was made.
  uint64_t connect_failures() const;

 private:
  void Return(std::unique_ptr<Connection> conn);

  const ConnectOptions options_;
  const size_t size_;
  const std::chrono::milliseconds acquire_timeout_;
  mutable Mutex mu_;
  CondVar cv_;
  std::vector<std::unique_ptr<Connection>> idle_ GUARDED_BY(mu_);
  size_t open_ GUARDED_BY(mu_) = 0;  // idle + lent + being opened
  uint64_t connect_failures_ GUARDED_BY(mu_) = 0;
};

// Advisory lock keys (bigint) Reef reserves: high 32 bits "REEF" for the stores' fixed keys,
// "REEL" for leases (low bits: a lease's id). Hashed keys avoid both ranges.
inline constexpr int64_t kReefKeyNamespace = int64_t{0x52454546} << 32;
inline constexpr int64_t kLeaseKeyNamespace = int64_t{0x5245454c} << 32;
inline constexpr int64_t kMigrationLockKey = kReefKeyNamespace | 3;

// An advisory lock key for `text`: its 64-bit FNV-1a hash, the same in every process, moved off
// the two ranges above. Two texts may share a key (which only makes their holders take turns).
int64_t HashedLockKey(std::string_view text);

// Brings `component`'s tables to the newest of `migrations` (migration i makes version i + 1),
// each in its own transaction, recording the version in reef_schema; processes migrating at
// once take turns (an advisory lock). `what` names the component in errors.
// Errors: DataLoss when the database holds a newer version than `migrations` reach.
Status Migrate(Connection& conn, std::string_view component, std::string_view what,
               std::span<const char* const> migrations);

// True for a postgresql:// or postgres:// URI (how `--store` tells PostgreSQL apart).
bool IsPostgresUri(std::string_view store);

// Removes the password from a libpq connection string or URI, for logs and /status
// ("postgresql://ada:secret@db/reef" -> "postgresql://ada@db/reef").
std::string RedactConninfo(std::string_view conninfo);

}  // namespace reef::pg
