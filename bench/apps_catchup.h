// apps_bench's projector catch-up and its SQLite anchors (bench/apps_catchup.cc). Each prints
// one "bench apps=..." line; any failure ends the run (Die).
#pragma once

#include <cstdint>
#include <string>

namespace reef::bench::apps {

// Fills a fresh store under `work_dir` with `events` Tick events (untimed), then times the
// projector test_projector_v1 catching up on them: "bench apps=catchup ...".
void RunCatchup(const std::string& work_dir, int64_t events);

// Inserts `rows` rows into a fresh SQLite table under `work_dir` in transactions of `batch`;
// `like_runner`: per row a savepoint and a freshly prepared statement, as the projector runner
// and sql_exec do. "bench apps=sqlite ..." or "bench apps=sqlite_stmt ...".
void RunSqlite(const std::string& work_dir, int64_t rows, uint32_t batch, bool like_runner);

}  // namespace reef::bench::apps
