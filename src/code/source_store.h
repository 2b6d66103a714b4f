// SourceStore: the working sources of an image and their commit history, persisted in SQLite.
//
// A working source is the current text at a source path (source.h), with its file kind and
// SourceId. Clients save with optimistic concurrency: Write names the SourceId it expects to
// replace (none = create), so a conflicting save never overwrites another client's work.
// Commit snapshots the working source as a revision with a generated, readable id; it never
// compiles (invalid source can be committed). Rollback copies a revision back into the working
// source without committing. Saving, committing and compiling are separate (spec 001, "Source
// files have canonical case-sensitive relative paths ...", "write <path> ... commit ...
// history ... rollback").
//
// Storage: the file `reef.sqlite` in the data directory given to Open (DESIGN.md,
// "Persistence"), WAL journal, tables `source_working` and `source_revisions`. Every statement
// binds its parameters. Each mutating call is one transaction: it happens entirely or not at
// all. Reopening the same directory sees every completed call.
//
// Thread ownership: any thread. One SQLite connection, serialized by an internal mutex; calls
// may block for the SQLite busy timeout (5,000 ms) when another process holds the file.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "code/source.h"
#include "core/mutex.h"
#include "core/status.h"

struct sqlite3;

namespace reef::code {

// Length of a revision id in characters.
inline constexpr std::size_t kRevisionIdLength = 12;
// The revision id alphabet: lowercase letters and digits (readable, case-insensitive safe).
inline constexpr std::string_view kRevisionIdAlphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
// Longest commit message, in bytes.
inline constexpr std::size_t kMaxCommitMessageBytes = 4096;

// One source text with its identity: the working source at a path, or a revision's snapshot.
struct SourceFile {
  std::string path;
  SourceKind kind = SourceKind::kWat;
  std::string text;  // the exact bytes that were written
  std::string id;    // SourceId(kind, text)
};

// One row of List(): a working source without its text.
struct SourceEntry {
  std::string path;
  SourceKind kind = SourceKind::kWat;
  std::string id;  // SourceId of the working text
};

// One row of History(): a commit of one path.
struct Revision {
  std::string revision;   // kRevisionIdLength characters of kRevisionIdAlphabet
  std::string source_id;  // SourceId of the committed text
  SourceKind kind = SourceKind::kWat;
  int64_t time_ms = 0;  // commit time: milliseconds since the Unix epoch (system clock)
  std::optional<std::string> message;
};

class SourceStore {
 public:
  // Opens (creating when missing) `data_dir`/reef.sqlite and its tables.
  // Errors: Unavailable when the directory or database cannot be created or opened;
  // DataLoss when the file is not a usable SQLite database.
  static Result<std::unique_ptr<SourceStore>> Open(const std::filesystem::path& data_dir);

  ~SourceStore();
  SourceStore(const SourceStore&) = delete;
  SourceStore& operator=(const SourceStore&) = delete;

  // Saves `bytes` as the working source at `path` with file kind `kind`; returns its SourceId.
  // `expected` = std::nullopt creates the path; otherwise it must equal the current SourceId.
  // Does not compile: invalid source is stored as is.
  // Errors: InvalidArgument / LimitExceeded for the path (ValidateSourcePath), the size
  // (ValidateSourceSize) or a malformed `expected`; AlreadyExists when creating a path that
  // exists; NotFound when `expected` is set but the path does not exist; Conflict when the
  // current SourceId differs from `expected` (the stored text is left unchanged).
  Result<std::string> Write(std::string_view path, SourceKind kind, std::string_view bytes,
                            const std::optional<std::string>& expected);

  // The working source at `path`.
  // Errors: InvalidArgument for the path; NotFound when there is none.
  Result<SourceFile> Read(std::string_view path) const;

  // Every working source, ordered by path (bytewise).
  // Errors: Internal when SQLite fails.
  Result<std::vector<SourceEntry>> List() const;

  // Snapshots the working source at `path` as a new revision; returns its generated id.
  // `message` is free text for people (at most kMaxCommitMessageBytes bytes).
  // Errors: InvalidArgument for the path; LimitExceeded for the message; NotFound when `path`
  // has no working source; Unavailable when no random id could be drawn.
  Result<std::string> Commit(std::string_view path, std::optional<std::string_view> message);

  // The revisions of `path`, newest first (empty when it was never committed).
  // Errors: InvalidArgument for the path.
  Result<std::vector<Revision>> History(std::string_view path) const;

  // The text of `revision` of `path`, exactly as committed.
  // Errors: InvalidArgument for the path; NotFound when `path` has no such revision.
  Result<SourceFile> ReadRevision(std::string_view path, std::string_view revision) const;

  // Restores `revision` as the working source of `path` (the working SourceId becomes the
  // revision's) without committing; returns that SourceId. Works after the working source
  // changed in any way, including its kind.
  // Errors: InvalidArgument for the path; NotFound when `path` has no such revision.
  Result<std::string> Rollback(std::string_view path, std::string_view revision);

 private:
  explicit SourceStore(sqlite3* db) : db_(db) {}

  Status ExecLocked(const char* sql) const REQUIRES(mu_);
  Result<std::optional<SourceFile>> ReadLocked(std::string_view path) const REQUIRES(mu_);
  Result<std::optional<SourceFile>> ReadRevisionLocked(std::string_view path,
                                                       std::string_view revision) const
      REQUIRES(mu_);
  Status PutWorkingLocked(const SourceFile& file) REQUIRES(mu_);

  // Protected by mu_: the connection and every statement run on it.
  mutable Mutex mu_;
  sqlite3* db_ GUARDED_BY(mu_);
};

}  // namespace reef::code
