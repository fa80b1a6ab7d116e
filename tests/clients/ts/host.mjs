// The MCP TypeScript SDK as a host runs it, for tests/test_client_matrix.py.
// Usage: node host.mjs SCENARIO_JSON stdio COMMAND ARGS... | node host.mjs SCENARIO_JSON http URL
// SCENARIO_JSON: {"phrase", "text", "entry": [x, y] in screen pixels}. Prints a JSON report on stdout.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [scenarioJson, kind, ...target] = process.argv.slice(2);
const scenario = JSON.parse(scenarioJson);
const transport =
  kind === "stdio"
    ? new StdioClientTransport({ command: target[0], args: target.slice(1), env: { ...process.env }, stderr: "inherit" })
    : new StreamableHTTPClientTransport(new URL(target[0]));
const client = new Client({ name: "symphony-ts-host", version: "1.0.0" });
await client.connect(transport);

async function call(name, args, options) {
  const result = await client.callTool({ name, arguments: args }, undefined, options);
  if (result.isError) throw new Error(`${name} failed: ${JSON.stringify(result.content)}`);
  return result;
}

const tools = (await client.listTools()).tools;
const shot = await call("screenshot", {});
const found = (await call("find_text", { phrase: scenario.phrase })).structuredContent;
const center = found.matches[0].center; // straight from one result into the next call
const click = (await call("click", { x: center.x, y: center.y })).structuredContent;
const [x, y] = scenario.entry;
const typed = (await call("type", { text: scenario.text, x, y, space: "screen", overwrite: true })).structuredContent;
// A call longer than its timeout completes when progress resets the timeout (tools/progress.py).
const progress = [];
await call("wait", { seconds: scenario.long_wait }, {
  timeout: scenario.client_timeout_ms,
  resetTimeoutOnProgress: true,
  onprogress: (p) => progress.push(p.progress),
});
await client.close();
console.log(JSON.stringify({
  tools: tools.map((t) => t.name),
  image_types: shot.content.map((c) => c.type),
  frame_id: shot.structuredContent.frame_id,
  center, click, typed, progress,
}));
