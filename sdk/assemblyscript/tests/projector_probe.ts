// Test projector for the SDK's unit tests: every event is written with sqlExec (so thousands
// of events show whether memory stays bounded), and sqlQuery's and env's "call again with a
// larger buffer" protocol is exercised.
import { Value, Event, Query, projector, sqlExec, sqlQuery, env } from "../assembly";
export * from "../assembly/exports/projector";

const TYPES = ["Deposited", "Big"]; // static data
const START = Value.record().setString("made", "at start"); // made at start: must survive every call

function query(): Query {
  sqlExec("CREATE TABLE IF NOT EXISTS t (position INTEGER, type TEXT, data TEXT)");
  return Query.types(TYPES);
}

function project(event: Event): void {
  if (event.type == "Big") {
    const rows = sqlQuery("SELECT * FROM big", [Value.int(event.position), Value.str("p"), Value.bool(true), Value.float(0.5), Value.null()]);
    const long = env("LONG");
    sqlExec("INSERT INTO t VALUES (?1, ?2, ?3)", [Value.int(rows.length), Value.str(rows[rows.length - 1].toString()), Value.int(long != null ? long.length : -1)]);
    return;
  }
  const data = Value.record().set("event", event.data).set("tags", Value.strings(event.tags))
    .setString("types", TYPES.join(",")).set("start", START);
  sqlExec("INSERT INTO t VALUES (?1, ?2, ?3)", [Value.int(event.position), Value.str(event.type), Value.str(data.toString())]);
}

projector(query, project);
