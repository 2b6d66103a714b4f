#include "apps/guest_driver.h"

#include <fmt/format.h>

namespace reef::apps {

namespace {

using Then = std::function<void(GuestResults)>;

// Posts the rest of the drive to the reactor; a post that fails (stopping) ends it there.
void Continue(const std::shared_ptr<const GuestDriver>& driver, std::function<void()> step,
              const Then& then) {
  Status posted = driver->fleet->Post(driver->reactor, std::move(step));
  if (!posted.ok()) then(posted);
}

}  // namespace

void DriveGuest(std::shared_ptr<const GuestDriver> driver, ModuleInstance* instance, Then then) {
  auto results = instance->RunSlice(driver->fleet->options().free_slice);
  if (results) return then(std::move(*results));
  ModuleCallContext& ctx = instance->context();
  if (!instance->suspended()) {
    return Continue(
        driver, [driver, instance, then] { DriveGuest(driver, instance, then); }, then);
  }
  // The import left its work in the context: `work` runs it on the I/O thread and gives
  // back how to resume the call with its result, which runs here.
  std::function<std::function<Status()>()> work;
  if (ctx.pending_sql) {
    auto request = std::make_shared<SqlRequest>(std::move(*ctx.pending_sql));
    ctx.pending_sql.reset();
    work = [driver, instance, request]() -> std::function<Status()> {
      auto outcome = std::make_shared<SqlOutcome>(driver->run_sql(*request));
      return [instance, request, outcome] { return instance->CompleteSql(*request, *outcome); };
    };
  } else if (ctx.pending_append && driver->run_append) {
    auto events = std::make_shared<Value>(std::move(*ctx.pending_append));
    ctx.pending_append.reset();
    work = [driver, instance, events]() -> std::function<Status()> {
      auto appended = std::make_shared<Result<uint64_t>>(driver->run_append(*events));
      return [instance, appended] { return instance->CompleteAppend(*appended); };
    };
  } else {
    ctx.pending_append.reset();
    Status resumed =
        instance->CompleteAppend(Status::FailedPrecondition("not available to this module"));
    if (!resumed.ok()) return then(resumed);
    return DriveGuest(driver, instance, then);
  }
  auto io = [driver, instance, work, then] {
    std::function<Status()> resume = work();
    Continue(
        driver,
        [driver, instance, resume, then] {
          Status resumed = resume();
          if (!resumed.ok()) return then(resumed);
          DriveGuest(driver, instance, then);
        },
        then);
  };
  if (!driver->on_io(std::move(io))) {
    then(Status::Unavailable(
        fmt::format("{}: the I/O thread is stopping", instance->context().label)));
  }
}

}  // namespace reef::apps
