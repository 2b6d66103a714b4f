#include "apps/http/module_routes.h"

#include <fmt/format.h>

#include "server/protocol.h"

namespace reef::apps::http {

namespace {

using json = nlohmann::json;
using server::HttpRequest;
using server::HttpResponse;
using server::HttpRoute;
using store::ModuleKind;

// Bodies of the JSON routes: 64 levels, 2 million values (like the event routes).
constexpr server::JsonDocumentLimits kBodyLimits{.max_depth = 66, .max_values = 2'000'000};

Result<json> ParseBody(const HttpRequest& request, bool object_required = true) {
  auto parsed = server::ParseJsonDocument(request.body, kBodyLimits);
  if (!parsed.ok()) {
    return parsed.status().WithContext(
        fmt::format("{} {}: the body is not valid JSON", request.method, request.path));
  }
  if (object_required && !parsed->is_object()) {
    return Status::InvalidArgument(
        fmt::format("{} {}: the body must be a JSON object", request.method, request.path));
  }
  return std::move(*parsed);
}

Result<std::string> StringField(const json& body, std::string_view field) {
  auto it = body.find(field);
  if (it == body.end() || !it->is_string()) {
    return Status::InvalidArgument(fmt::format("the body needs a string field \"{}\"", field));
  }
  return it->get<std::string>();
}

json QueryJson(const events::Query& query) {
  json items = json::array();
  for (const auto& item : query.items) {
    json j = json::object();
    if (!item.types.empty()) j["types"] = item.types;
    if (!item.tags.empty()) j["tags"] = item.tags;
    items.push_back(std::move(j));
  }
  return {{"items", std::move(items)}};
}

json StatusJson(const ModuleStatus& s) {
  json j = {{"version", s.version}, {"state", s.state},       {"up", s.up},
            {"error", s.error},     {"failures", s.failures}, {"restarts", s.restarts}};
  if (!s.tier.empty()) j["tier"] = s.tier;
  if (s.kind != ModuleKind::kCommand) {
    j["position"] = s.position;
    if (s.kind == ModuleKind::kEffect) j["backoff_seconds"] = s.backoff_seconds;
    if (s.query) j["query"] = QueryJson(*s.query);
  }
  return j;
}

json ModuleJson(ModuleRuntime& runtime, const store::ModuleInfo& info) {
  json versions = json::array();
  for (const auto& v : info.versions) {
    versions.push_back({{"version", v.version},
                        {"sha256", v.sha256},
                        {"size_bytes", v.size_bytes},
                        {"created_at_ms", v.created_at_ms}});
  }
  json j = {{"kind", store::ModuleKindName(info.kind)},
            {"name", info.name},
            {"active_version", info.active_version ? json(*info.active_version) : json(nullptr)},
            {"versions", std::move(versions)},
            {"env", info.env}};
  auto status = runtime.StatusOf(info.kind, info.name);
  j["status"] = status ? StatusJson(*status) : json(nullptr);
  return j;
}

Result<json> ModuleBody(ModuleRuntime& runtime, ModuleKind kind, std::string_view name) {
  REEF_ASSIGN_OR_RETURN(auto info, runtime.modules().Get(kind, name));
  return ModuleJson(runtime, info);
}

Result<json> EnvBody(ModuleRuntime& runtime, ModuleKind kind, std::string_view name) {
  REEF_ASSIGN_OR_RETURN(auto env, runtime.modules().Env(kind, name));
  return json{{"env", env}};
}

void AddKindRoutes(std::vector<HttpRoute>& routes, ModuleRuntime& runtime, ModuleKind kind) {
  std::string base = "/" + std::string(store::ModuleKindPlural(kind));
  ModuleRuntime* rt = &runtime;

  HttpRoute upload;
  upload.method = "POST";
  upload.path = base + "/{name}/versions/{version}";
  upload.summary = "upload a module version (body: the .wasm bytes); ?activate=true activates it";
  upload.max_body_bytes = runtime.options().store.max_module_bytes + 1;
  upload.response_handler = [rt, kind](const HttpRequest& r) -> Result<HttpResponse> {
    auto activate_param = r.QueryParam("activate");
    bool activate = activate_param && (*activate_param == "true" || *activate_param == "1");
    if (activate_param && !activate && *activate_param != "false" && *activate_param != "0") {
      return Status::InvalidArgument("activate must be true or false");
    }
    std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(r.body.data()), r.body.size());
    REEF_ASSIGN_OR_RETURN(auto uploaded, rt->Upload(kind, r.PathParam("name"),
                                                    r.PathParam("version"), bytes, activate));
    json body = {{"kind", store::ModuleKindName(kind)},
                 {"name", uploaded.version.name},
                 {"version", uploaded.version.version},
                 {"sha256", uploaded.version.sha256},
                 {"size_bytes", uploaded.version.size_bytes},
                 {"created", uploaded.created},
                 {"active", activate}};
    return HttpResponse::Json(uploaded.created ? 201 : 200, body);
  };
  routes.push_back(std::move(upload));

  routes.push_back({"GET", base,
                    [rt, kind](const HttpRequest&) -> Result<json> {
                      REEF_ASSIGN_OR_RETURN(auto list, rt->modules().List(kind));
                      json modules = json::array();
                      for (const auto& info : list) modules.push_back(ModuleJson(*rt, info));
                      return json{{"modules", std::move(modules)}};
                    },
                    "list the modules of this kind with their versions and status"});
  routes.push_back(
      {"GET", base + "/{name}",
       [rt, kind](const HttpRequest& r) { return ModuleBody(*rt, kind, r.PathParam("name")); },
       "one module: versions, active version, env and status"});
  routes.push_back({"DELETE", base + "/{name}",
                    [rt, kind](const HttpRequest& r) -> Result<json> {
                      REEF_RETURN_IF_ERROR(rt->DeleteModule(kind, r.PathParam("name")));
                      return json{{"deleted", r.PathParam("name")}};
                    },
                    "delete a module and all its versions (never while active)"});
  routes.push_back({"DELETE", base + "/{name}/versions/{version}",
                    [rt, kind](const HttpRequest& r) -> Result<json> {
                      REEF_RETURN_IF_ERROR(
                          rt->DeleteVersion(kind, r.PathParam("name"), r.PathParam("version")));
                      auto module = ModuleBody(*rt, kind, r.PathParam("name"));
                      // Deleting the last version deletes the module: say what was deleted.
                      if (!module.ok() && module.status().code() == Code::kNotFound) {
                        return json{{"deleted", r.PathParam("name")}};
                      }
                      return module;
                    },
                    "delete one version (never the active one); the last one deletes the module"});
  routes.push_back({"PUT", base + "/{name}/active",
                    [rt, kind](const HttpRequest& r) -> Result<json> {
                      REEF_ASSIGN_OR_RETURN(json body, ParseBody(r));
                      REEF_ASSIGN_OR_RETURN(std::string version, StringField(body, "version"));
                      REEF_RETURN_IF_ERROR(rt->Activate(kind, r.PathParam("name"), version));
                      return ModuleBody(*rt, kind, r.PathParam("name"));
                    },
                    "activate a version (a rolling upgrade when another one is active)"});
  routes.push_back({"DELETE", base + "/{name}/active",
                    [rt, kind](const HttpRequest& r) -> Result<json> {
                      REEF_RETURN_IF_ERROR(rt->Deactivate(kind, r.PathParam("name")));
                      return ModuleBody(*rt, kind, r.PathParam("name"));
                    },
                    "deactivate the module; its state is kept"});
  routes.push_back({"POST", base + "/{name}/replay",
                    [rt, kind](const HttpRequest& r) -> Result<json> {
                      REEF_RETURN_IF_ERROR(rt->Replay(kind, r.PathParam("name")));
                      return ModuleBody(*rt, kind, r.PathParam("name"));
                    },
                    "delete the module's database and restart it from position 0"});
  routes.push_back(
      {"GET", base + "/{name}/env",
       [rt, kind](const HttpRequest& r) { return EnvBody(*rt, kind, r.PathParam("name")); },
       "the module's environment variables"});
  routes.push_back({"PUT", base + "/{name}/env/{key}",
                    [rt, kind](const HttpRequest& r) -> Result<json> {
                      REEF_ASSIGN_OR_RETURN(json body, ParseBody(r));
                      REEF_ASSIGN_OR_RETURN(std::string value, StringField(body, "value"));
                      REEF_RETURN_IF_ERROR(
                          rt->SetEnv(kind, r.PathParam("name"), r.PathParam("key"), value));
                      return EnvBody(*rt, kind, r.PathParam("name"));
                    },
                    "set one environment variable ({\"value\": \"...\"})"});
  routes.push_back({"DELETE", base + "/{name}/env/{key}",
                    [rt, kind](const HttpRequest& r) -> Result<json> {
                      REEF_RETURN_IF_ERROR(
                          rt->DeleteEnv(kind, r.PathParam("name"), r.PathParam("key")));
                      return EnvBody(*rt, kind, r.PathParam("name"));
                    },
                    "delete one environment variable"});
}

// Answers `status` as the routes do; Unavailable (the runtime's max_executions, or stopping)
// with Retry-After, since it passes.
void AnswerError(server::HttpResponder& responder, const Status& status) {
  if (status.code() != Code::kUnavailable) return responder.Send(status);
  HttpResponse busy = HttpResponse::Error(503, "unavailable", status.message());
  busy.headers.emplace_back("Retry-After", "1");
  responder.Send(std::move(busy));
}

// A command execution as the route received it (parsed on the handler thread).
struct ExecuteCall {
  std::string name;
  Value input;
  ExecuteOptions options;
};

Result<ExecuteCall> ParseExecute(const HttpRequest& r) {
  ExecuteCall call;
  call.name = r.PathParam("name");
  REEF_ASSIGN_OR_RETURN(json body, ParseBody(r, /*object_required=*/false));
  REEF_ASSIGN_OR_RETURN(call.input, ValueFromJsonPlain(body));
  if (auto key = r.Header("idempotency-key")) {
    if (key->empty()) {
      return Status::InvalidArgument(
          "the Idempotency-Key header is empty: send a key of 1 to 256 bytes, or no header");
    }
    call.options.idempotency_key = *key;
  }
  if (auto id = r.Header("x-correlation-id")) {
    if (id->size() > 256)
      return Status::InvalidArgument("X-Correlation-Id is longer than 256 bytes");
    call.options.correlation_id = *id;
  }
  return call;
}

HttpResponse OutcomeResponse(const CommandOutcome& outcome) {
  if (outcome.kind == CommandOutcome::Kind::kRejected) {
    return HttpResponse::Error(422, "command_rejected", outcome.message);
  }
  json events = json::array();
  for (size_t i = 0; i < outcome.events.size(); ++i) {
    events.push_back(AppendedEventJson(outcome.events[i], outcome.event_data[i]));
  }
  return HttpResponse::Json(200, {{"position", outcome.position},
                                  {"events", std::move(events)},
                                  {"execution_id", outcome.execution_id},
                                  {"attempts", outcome.attempts},
                                  {"replayed", outcome.replayed}});
}

// POST /projectors/{name}/query, parsed on the handler thread.
struct QueryCall {
  std::string name;
  std::string sql;
  json params;
};

Result<QueryCall> ParseQuery(const HttpRequest& r) {
  REEF_ASSIGN_OR_RETURN(json body, ParseBody(r));
  for (const auto& [key, value] : body.items()) {
    if (key != "sql" && key != "params") {
      return Status::InvalidArgument(
          fmt::format("{} is not a known field (known: sql, params)", key));
    }
  }
  QueryCall call;
  call.name = r.PathParam("name");
  REEF_ASSIGN_OR_RETURN(call.sql, StringField(body, "sql"));
  call.params = body.value("params", json::array());
  return call;
}

// A POST route whose request is parsed on the connection's I/O thread (a large body: on a
// handler thread; `parse`: errors answer at once)
// and handed to the module runtime (`start`), which answers through the responder when done:
// the handler thread never waits for a guest or a store.
template <typename Call>
HttpRoute AsyncPostRoute(std::string path, std::string summary,
                         Result<Call> (*parse)(const HttpRequest&),
                         std::function<void(Call, std::shared_ptr<server::HttpResponder>)> start) {
  HttpRoute route;
  route.method = "POST";
  route.path = std::move(path);
  route.summary = std::move(summary);
  route.async_handler = [parse, start](const HttpRequest& r,
                                       std::shared_ptr<server::HttpResponder> responder) {
    auto call = parse(r);
    if (!call.ok()) return responder->Send(call.status());
    start(std::move(*call), std::move(responder));
  };
  route.hand_off_on_io = true;  // parse a small body, hand it on: no hop to a handler thread
  return route;
}

}  // namespace

std::vector<HttpRoute> ModuleRoutes(ModuleRuntime& runtime) {
  std::vector<HttpRoute> routes;
  ModuleRuntime* rt = &runtime;
  routes.push_back(AsyncPostRoute<ExecuteCall>(
      "/commands/{name}/execute",
      "execute the active version of a command on the body's input JSON", ParseExecute,
      [rt](ExecuteCall call, std::shared_ptr<server::HttpResponder> responder) {
        rt->ExecuteAsync(call.name, std::move(call.input), std::move(call.options),
                         [responder](Result<CommandOutcome> outcome) {
                           if (!outcome.ok()) return AnswerError(*responder, outcome.status());
                           responder->Send(OutcomeResponse(*outcome));
                         });
      }));
  routes.push_back(AsyncPostRoute<QueryCall>(
      "/projectors/{name}/query", "run a read-only SQL query on a projector's database", ParseQuery,
      [rt](QueryCall call, std::shared_ptr<server::HttpResponder> responder) {
        rt->QueryProjectorAsync(
            std::move(call.name), std::move(call.sql), std::move(call.params),
            [responder](Result<json> rows) {
              if (!rows.ok()) return AnswerError(*responder, rows.status());
              responder->Send(HttpResponse::Json(200, {{"rows", std::move(*rows)}}));
            });
      }));
  for (ModuleKind kind : {ModuleKind::kCommand, ModuleKind::kProjector, ModuleKind::kEffect}) {
    AddKindRoutes(routes, runtime, kind);
  }
  routes.push_back({"DELETE", "/crypto-keys/{scope}",
                    [rt](const HttpRequest& r) -> Result<json> {
                      REEF_RETURN_IF_ERROR(rt->ShredScope(r.PathParam("scope")));
                      return json{{"scope", r.PathParam("scope")}, {"shredded", true}};
                    },
                    "delete the scope's encryption keys: its events' data reads as null"});
  return routes;
}

}  // namespace reef::apps::http
