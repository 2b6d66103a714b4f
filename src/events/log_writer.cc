// Appends to the embedded event store (LogCore, detail/log_core.h), with group commit.
//
// Append validates and encodes its records on the caller's thread, then queues the request
// for the one writer thread. The writer takes every queued request (up to max_batch_bytes),
// checks each request's condition on its own against the index — which already holds the
// batch's earlier requests, staged but not yet visible — writes all frames with one write,
// calls fdatasync once (Flush, log_segments.cc), and only then makes the batch visible
// (head_) and answers every request in it.
//
// Thread ownership: Append on any thread (it blocks until its batch is answered); everything
// else here runs on the writer thread.
#include <fmt/format.h>

#include <algorithm>

#include "core/clock.h"
#include "events/detail/log_core.h"
#include "events/detail/log_format.h"
#include "events/detail/store_rules.h"

namespace reef::events::detail {

Result<Position> LogCore::Append(std::vector<Event> events,
                                 std::optional<AppendCondition> condition) {
  auto request = std::make_unique<AppendRequest>();
  REEF_ASSIGN_OR_RETURN(request->timestamp_given,
                        PrepareAppend(events, condition, options_.limits, UnixNowMs()));
  uint64_t total = 0;
  for (const Event& event : events) total += StoredBytes(event);
  request->body.reserve(total);
  request->record_offsets.reserve(events.size());
  for (const Event& event : events) {
    request->record_offsets.push_back(static_cast<uint32_t>(request->body.size()));
    EncodeRecord(event, request->body);
  }
  request->body_crc = Crc32c(request->body.data(), request->body.size());
  request->events = std::move(events);
  request->condition = std::move(condition);
  std::future<Result<Position>> result = request->done.get_future();
  {
    MutexLock lock(queue_mu_);
    if (closing_) return Status::Unavailable(ClosedMessage());
    queue_.push_back(std::move(request));
  }
  queue_cv_.NotifyOne();
  return result.get();
}

// ---- The writer thread -----------------------------------------------------------------------

void LogCore::WriterLoop() {
  std::vector<std::unique_ptr<AppendRequest>> batch;
  for (;;) {
    batch.clear();
    {
      MutexLock lock(queue_mu_);
      while (queue_.empty() && !closing_) queue_cv_.Wait(queue_mu_);
      if (queue_.empty()) return;
      uint64_t bytes = 0;
      while (!queue_.empty() && (batch.empty() || bytes < options_.max_batch_bytes)) {
        bytes += queue_.front()->body.size() + kFrameHeaderBytes;
        batch.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
    }
    WriteBatch(batch);
    for (auto& request : batch) request->done.set_value(std::move(request->result));
  }
}

void LogCore::WriteBatch(std::vector<std::unique_ptr<AppendRequest>>& batch) {
  if (failed_.load()) {
    for (auto& request : batch) request->result = Status::Unavailable(ClosedMessage());
    return;
  }
  Position durable = head_.load();
  staged_.clear();
  std::string buffer;
  uint64_t buffer_start = segments_.back().size;
  Status status;
  for (auto& request : batch) {
    if (Decide(*request)) {
      request->decided = true;
      continue;
    }
    uint64_t frame_bytes = kFrameHeaderBytes + request->body.size();
    if (buffer_start + buffer.size() + frame_bytes > SegmentCapacity()) {
      status = Flush(buffer, buffer_start);
      if (status.ok()) status = StartSegment(WriterIndex().last() + 1);
      if (!status.ok()) break;
      buffer.clear();
      buffer_start = segments_.back().size;
    }
    Stage(*request, buffer_start + buffer.size());
    buffer += EncodeFrameHeader({request->result.value() - request->events.size() + 1,
                                 static_cast<uint32_t>(request->events.size()),
                                 static_cast<uint32_t>(request->body.size()), request->body_crc});
    buffer += request->body;
  }
  if (status.ok()) status = Flush(buffer, buffer_start);
  if (!status.ok()) {
    Fail(durable);
    // Staged appends, retries that count on them, and those never reached are all lost.
    for (auto& request : batch) {
      if (request->staged || request->needs_this_batch || !request->decided) {
        request->result = Status::Unavailable(status.message());
      }
    }
    return;
  }
  Publish(batch);
}

bool LogCore::Decide(AppendRequest& request) {
  if (DecideIds(request)) return true;
  if (!request.condition) return false;
  const AppendCondition& condition = *request.condition;
  Position after = condition.after.value_or(0);
  const EventIndex& index = WriterIndex();
  if (after >= index.last()) return false;  // nothing comes after it (and after + 1 may wrap)
  CompiledQuery compiled = index.Compile(condition.fail_if_events_match);
  std::optional<Position> first = index.Next(compiled, after + 1, index.last());
  if (!first) return false;
  conflicts_.fetch_add(1);
  request.result = Status::Conflict(fmt::format(
      "append condition failed: event {} matches fail_if_events_match and comes after {}", *first,
      after));
  return true;
}

bool LogCore::DecideIds(AppendRequest& request) {
  const std::vector<Event>& events = request.events;
  for (size_t i = 0; i < events.size(); ++i) {
    std::optional<Position> stored = FindId(events[i].id, WriterIndex().last());
    if (!stored) continue;
    if (i == 0 && *stored + events.size() - 1 <= WriterIndex().last()) {
      bool retry = true;
      EventView view;
      for (size_t k = 0; k < events.size() && retry; ++k) {
        retry = ViewAt(*stored + k, view) && SameEvent(view, events[k], request.timestamp_given[k]);
      }
      if (retry) {
        Position end = *stored + events.size() - 1;
        request.result = end;
        request.needs_this_batch = end > head_.load();
        return true;
      }
    }
    duplicates_.fetch_add(1);
    request.result = DuplicateIdError(i, events[i].id, *stored);
    return true;
  }
  return false;
}

void LogCore::Stage(AppendRequest& request, uint64_t frame_offset) {
  auto number = static_cast<uint32_t>(segments_.size() - 1);
  std::vector<std::string_view> tags;
  std::optional<std::vector<uint64_t>> grown;
  if (WriterIds().NeedsGrowth(request.events.size())) {
    // Built before the lock is taken, so readers are held off only for the swap.
    grown = WriterIds().Grown(request.events.size(), [this](Position p) { return IdAt(p); });
  }
  WriterLock lock(index_mu_);
  if (grown) ids_.Adopt(std::move(*grown));
  Position position = index_.last();
  for (size_t i = 0; i < request.events.size(); ++i) {
    const Event& event = request.events[i];
    tags.assign(event.tags.begin(), event.tags.end());
    uint64_t record = frame_offset + kFrameHeaderBytes + request.record_offsets[i];
    index_.Add(++position, MakeLocation(number, record), event.type, tags);
    ids_.Add(event.id, position);
  }
  request.result = position;
  request.staged = true;
  request.decided = true;
  staged_.emplace_back(position - request.events.size() + 1, &request);
}

void LogCore::Fail(Position durable) {
  failed_.store(true);
  {
    WriterLock lock(index_mu_);
    index_.TruncateAfter(durable);
    ids_.TruncateAfter(durable, [this](Position p) { return IdAt(p); });
  }
  MutexLock lock(subs_mu_);
  WakeSubscribers();
}

void LogCore::Publish(const std::vector<std::unique_ptr<AppendRequest>>& batch) {
  Position head = WriterIndex().last();
  MutexLock lock(subs_mu_);
  head_.store(head);
  for (auto& request : batch) {
    if (!request->staged) continue;
    appends_.fetch_add(1);
    events_written_.fetch_add(request->events.size());
  }
  if (subs_.empty()) return;
  std::vector<std::string_view> tags;
  for (auto& sub : subs_) {
    MutexLock sub_lock(sub->mu);
    if (!sub->live) continue;
    bool pushed = false;
    for (auto& request : batch) {
      if (!request->staged || !sub->live) continue;
      Position first = request->result.value() - request->events.size() + 1;
      for (size_t i = 0; i < request->events.size() && sub->live; ++i) {
        const Event& event = request->events[i];
        tags.assign(event.tags.begin(), event.tags.end());
        if (first + i <= sub->floor || !Matches(sub->query, event.type, tags)) continue;
        if (sub->buffer.size() >= options_.subscription_buffer_events) {
          sub->FallBack();
          break;
        }
        sub->buffer.push_back(first + i);
        pushed = true;
      }
    }
    if (pushed || !sub->live) sub->cv.NotifyAll();
  }
}

}  // namespace reef::events::detail
