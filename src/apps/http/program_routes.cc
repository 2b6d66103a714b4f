#include "apps/http/program_routes.h"

#include <fmt/format.h>

#include <charconv>
#include <optional>

#include "core/json.h"
#include "server/protocol.h"

namespace reef::apps::http {

namespace {

using json = nlohmann::json;
using program::InvokeFailure;
using program::ProgramRuntime;
using server::HttpRequest;
using server::HttpResponse;
using server::HttpRoute;

// A deploy carries every module in base64: 64 MiB of body, JSON nested 64 levels at most.
constexpr uint64_t kMaxDeployBytes = 64ull << 20;
constexpr server::JsonDocumentLimits kDeployLimits{.max_depth = 66, .max_values = 2'000'000};
constexpr std::string_view kRetryAfterSeconds = "1";

// `text` as a whole number of type T, or nullopt when it is not one (or does not fit).
template <typename T>
std::optional<T> ParseNumber(std::string_view text) {
  T value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// A whole number in [min, max] from the query parameter `name`, or `fallback` when absent.
Result<uint64_t> NumberParam(const HttpRequest& r, std::string_view name, uint64_t fallback,
                             uint64_t min, uint64_t max) {
  auto text = r.QueryParam(name);
  if (!text) return fallback;
  std::optional<uint64_t> value = ParseNumber<uint64_t>(*text);
  if (!value || *value < min || *value > max) {
    return Status::InvalidArgument(fmt::format(
        "query parameter {} must be a whole number {}..{}, not \"{}\"", name, min, max, *text));
  }
  return *value;
}

json ProgramJson(const program::Program& p) {
  json modules = json::object();
  for (const auto& [name, m] : p.modules) {
    modules[name] = {
        {"file", p.manifest.modules.at(name)}, {"sha256", m.sha256}, {"size_bytes", m.size_bytes}};
  }
  json units = json::object();
  for (const auto& [name, u] : p.units) units[name] = program::UnitSpecJson(u.spec);
  return {{"generation", p.generation},
          {"program", p.manifest.program},
          {"deployed_at_ms", p.deployed_at_ms},
          {"modules", std::move(modules)},
          {"units", std::move(units)}};
}

json InstanceJson(const program::InstanceInfo& i) {
  json j = {{"instance", i.instance},
            {"actor", i.actor.str()},
            {"reactor", i.reactor},
            {"status", actor::ActorStatusName(i.status)},
            {"incarnation", i.incarnation},
            {"queued", i.queued},
            {"inbox_capacity", i.inbox_capacity},
            {"invocations", i.invocations},
            {"idle_ms", i.idle_ms},
            {"code_generation", i.code_generation},
            {"tier", wasm::TierName(i.tier)},
            {"retired", i.retired}};
  if (i.failure) j["failure"] = *i.failure;
  return j;
}

json ReactorJson(const actor::ReactorInfo& r) {
  return {{"id", r.id},
          {"liveness", actor::ReactorLivenessName(r.liveness)},
          {"actors", r.actors},
          {"tasks_waiting", r.tasks_waiting},
          {"tasks_run", r.tasks_run}};
}

// Asynchronous: the deploy (trial instantiations on the fleet, the fsync of the kept file)
// runs on the program runtime's deploy thread and answers from there.
void Deploy(ProgramRuntime& runtime, const HttpRequest& r,
            std::shared_ptr<server::HttpResponder> responder) {
  auto body = server::ParseJsonDocument(r.body, kDeployLimits);
  if (!body.ok()) {
    return responder->Send(body.status().WithContext("POST /programs: the body is not valid JSON"));
  }
  runtime.DeployAsync(
      std::move(*body), [responder = std::move(responder)](Result<program::DeployReport> report) {
        if (!report.ok()) return responder->Send(report.status());
        responder->Send(HttpResponse::Json(200, {{"generation", report->generation},
                                                 {"program", report->program},
                                                 {"units",
                                                  {{"added", report->added},
                                                   {"changed", report->changed},
                                                   {"unchanged", report->unchanged},
                                                   {"removed", report->removed}}}}));
      });
}

// The answer to POST /units/{unit}/invoke for `outcome` (docs/http-api.md).
HttpResponse InvokeResponse(program::InvokeMode mode, const program::InvokeOutcome& outcome) {
  auto error = [&](unsigned status, std::string_view code) {
    HttpResponse response = HttpResponse::Error(status, code, outcome.message);
    if (status == 429 || status == 503)
      response.headers.emplace_back("Retry-After", kRetryAfterSeconds);
    return response;
  };
  switch (outcome.failure) {
    case InvokeFailure::kNone:
      break;
    case InvokeFailure::kInvalid:
      return error(400, "invalid_argument");
    case InvokeFailure::kNotFound:
      return error(404, "not_found");
    case InvokeFailure::kInboxFull:
      return error(429, "inbox_full");
    case InvokeFailure::kNoRoom:
      return error(503, "no_room");
    case InvokeFailure::kTimeout:
      return error(504, "timeout");
    case InvokeFailure::kFailed:
      return error(500, "invocation_failed");
    case InvokeFailure::kUnavailable:
      return error(503, "unavailable");
  }
  if (mode == program::InvokeMode::kWait) {
    return HttpResponse::Json(200, {{"result", ValueToJson(outcome.result)},
                                    {"instance", outcome.instance},
                                    {"generation", outcome.generation}});
  }
  return HttpResponse::Json(
      202, {{"queued", true}, {"instance", outcome.instance}, {"generation", outcome.generation}});
}

// Starts the invocation of `r` and answers through `responder` when it ends: a waiting
// invocation holds no handler thread.
void Invoke(ProgramRuntime& runtime, const HttpRequest& r,
            std::shared_ptr<server::HttpResponder> responder) {
  auto parsed = [&]() -> Result<program::InvokeRequest> {
    program::InvokeRequest request;
    request.unit = r.PathParam("unit");
    if (auto mode = r.QueryParam("mode")) {
      REEF_ASSIGN_OR_RETURN(request.mode, program::ParseInvokeMode(*mode));
    }
    if (r.QueryParam("instance")) {
      REEF_ASSIGN_OR_RETURN(uint64_t instance, NumberParam(r, "instance", 0, 1, UINT32_MAX));
      request.instance = static_cast<uint32_t>(instance);
    }
    REEF_ASSIGN_OR_RETURN(
        uint64_t timeout,
        NumberParam(r, "timeout_ms", 10'000, 0,
                    static_cast<uint64_t>(runtime.options().max_timeout.count())));
    request.timeout = std::chrono::milliseconds(timeout);
    if (r.body.empty()) {
      return Status::InvalidArgument(
          "the body must be the message as JSON (e.g. {\"op\": \"add\"})");
    }
    auto message =
        ValueFromJson(std::string_view(r.body), runtime.runtime().options().value_limits);
    if (!message.ok()) return message.status().WithContext("the message");
    request.message = std::move(*message);
    return request;
  }();
  if (!parsed.ok()) return responder->Send(parsed.status());
  program::InvokeMode mode = parsed->mode;
  runtime.InvokeAsync(std::move(*parsed),
                      [mode, responder = std::move(responder)](program::InvokeOutcome outcome) {
                        responder->Send(InvokeResponse(mode, outcome));
                      });
}

// A route answered through its responder (docs/http-api.md: these wait for a reactor, a pool
// or a guest, never on a server thread).
HttpRoute AsyncRoute(std::string method, std::string path, std::string summary,
                     server::HttpAsyncHandler handler) {
  HttpRoute route;
  route.method = std::move(method);
  route.path = std::move(path);
  route.summary = std::move(summary);
  route.async_handler = std::move(handler);
  return route;
}

}  // namespace

std::vector<HttpRoute> ProgramRoutes(ProgramRuntime& runtime) {
  ProgramRuntime* rt = &runtime;
  std::vector<HttpRoute> routes;

  HttpRoute deploy = AsyncRoute(
      "POST", "/programs", "deploy a program ({\"manifest\": ..., \"modules\": {name: base64}})",
      [rt](const HttpRequest& r, std::shared_ptr<server::HttpResponder> responder) {
        Deploy(*rt, r, std::move(responder));
      });
  deploy.max_body_bytes = kMaxDeployBytes;
  routes.push_back(std::move(deploy));

  routes.push_back({"GET", "/programs/current",
                    [rt](const HttpRequest&) -> Result<json> {
                      auto current = rt->Current();
                      if (!current) return Status::NotFound("no program is deployed");
                      return ProgramJson(*current);
                    },
                    "the deployed program: generation, modules and units"});
  routes.push_back({"GET", "/units",
                    [rt](const HttpRequest&) -> Result<json> {
                      auto current = rt->Current();
                      json units = json::array();
                      for (const program::UnitInfo& u : rt->Units()) {
                        json j = program::UnitSpecJson(u.spec);
                        j["unit"] = u.spec.name;
                        j["code_generation"] = u.code_generation;
                        j["instances"] = u.instances;
                        j["invocations"] = u.invocations;
                        j["rejected"] = u.rejected;
                        j["poisoned"] = u.poisoned;
                        j["evicted"] = u.evicted;
                        units.push_back(std::move(j));
                      }
                      return json{{"generation", current ? current->generation : 0},
                                  {"units", std::move(units)}};
                    },
                    "the units of the deployed program with their counters"});
  HttpRoute instances =
      AsyncRoute("GET", "/units/{unit}/instances", "the unit's live instances",
                 [rt](const HttpRequest& r, std::shared_ptr<server::HttpResponder> responder) {
                   std::string unit(r.PathParam("unit"));
                   rt->InstancesAsync(unit, [unit, responder = std::move(responder)](
                                                Result<std::vector<program::InstanceInfo>> listed) {
                     if (!listed.ok()) return responder->Send(listed.status());
                     json list = json::array();
                     for (const auto& i : *listed) list.push_back(InstanceJson(i));
                     responder->Send(HttpResponse::Json(
                         200, json{{"unit", unit}, {"instances", std::move(list)}}));
                   });
                 });
  routes.push_back(std::move(instances));

  HttpRoute invoke =
      AsyncRoute("POST", "/units/{unit}/invoke",
                 "invoke a unit (body: the message); ?mode=wait|enqueue|try&instance=N",
                 [rt](const HttpRequest& r, std::shared_ptr<server::HttpResponder> responder) {
                   Invoke(*rt, r, std::move(responder));
                 });
  // Parsed and routed on the connection's I/O thread; only a new instance's spawn waits, for
  // its reactor to take it (a slice at most).
  invoke.hand_off_on_io = true;
  routes.push_back(std::move(invoke));

  HttpRoute kill = AsyncRoute(
      "POST", "/units/{unit}/instances/{instance}/kill",
      "kill the instance's invocation; the instance is poisoned (reset)",
      [rt](const HttpRequest& r, std::shared_ptr<server::HttpResponder> responder) {
        auto instance = ParseNumber<uint32_t>(r.PathParam("instance"));
        if (!instance || *instance == 0) {
          return responder->Send(
              Status::NotFound(fmt::format("no instance \"{}\"", r.PathParam("instance"))));
        }
        std::string unit(r.PathParam("unit"));
        rt->KillAsync(
            unit, *instance,
            [unit, instance = *instance, responder = std::move(responder)](Status killed) {
              if (!killed.ok()) return responder->Send(killed);
              responder->Send(HttpResponse::Json(
                  200, json{{"unit", unit}, {"instance", instance}, {"killed", true}}));
            });
      });
  routes.push_back(std::move(kill));
  routes.push_back({"GET", "/reactors",
                    [rt](const HttpRequest&) -> Result<json> {
                      json list = json::array();
                      for (const auto& reactor : rt->Reactors())
                        list.push_back(ReactorJson(reactor));
                      return json{{"reactors", std::move(list)}};
                    },
                    "the reactor threads that host unit instances"});
  HttpRoute drain = AsyncRoute(
      "POST", "/reactors/{id}/drain",
      "stop placing instances on a reactor and move its idle ones away",
      [rt](const HttpRequest& r, std::shared_ptr<server::HttpResponder> responder) {
        auto id = ParseNumber<uint32_t>(r.PathParam("id"));
        if (!id) {
          return responder->Send(
              Status::NotFound(fmt::format("no reactor \"{}\"", r.PathParam("id"))));
        }
        if (r.body.find_first_not_of(" \t\r\n") != std::string::npos) {
          // Nothing in a body is ignored silently: {"timeout_ms": N} would drain with 5 s.
          json body = json::parse(r.body, nullptr, false);
          if (!body.is_object() || !body.empty()) {
            return responder->Send(Status::InvalidArgument(
                "a drain takes no body (or {}); pass its timeout as a query parameter: "
                "POST /reactors/{id}/drain?timeout_ms=N"));
          }
        }
        auto timeout = NumberParam(r, "timeout_ms", 5'000, 0, 60'000);
        if (!timeout.ok()) return responder->Send(timeout.status());
        rt->DrainAsync(*id, std::chrono::milliseconds(*timeout),
                       [responder = std::move(responder)](Result<actor::ReactorInfo> info) {
                         if (!info.ok()) return responder->Send(info.status());
                         responder->Send(HttpResponse::Json(200, ReactorJson(*info)));
                       });
      });
  routes.push_back(std::move(drain));
  return routes;
}

}  // namespace reef::apps::http
