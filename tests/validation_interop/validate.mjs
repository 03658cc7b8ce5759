// Reads [{schema, args}] as JSON on stdin; prints, for each case, what pi-schema 1.6.0 makes of
// it the way pi-ai 1.6.0's validateToolArguments uses it: {ok: true, value} or {ok: false, lines}.
import { compile } from "@earendil-works/pi-schema";
import { formats } from "@earendil-works/pi-schema/formats";

const path = (pointer) =>
  pointer === "" ? "root" : pointer.slice(1).split("/").map((s) => s.replace(/~1/g, "/").replace(/~0/g, "~")).join(".");

let input = "";
for await (const chunk of process.stdin) input += chunk;
const results = JSON.parse(input).map(({ schema, args }) => {
  const result = compile(schema, { formats, coerce: true, unresolvedRefs: "reject" }).parse(structuredClone(args));
  return result.ok
    ? { ok: true, value: result.value === undefined ? null : result.value }
    : { ok: false, lines: result.errors.map((e) => `${path(e.path)}: ${e.message}`) };
});
process.stdout.write(JSON.stringify(results));
