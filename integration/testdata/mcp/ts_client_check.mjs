// Drives sandfs's /mcp with the MCP TypeScript SDK's own client (the one
// Claude Code, the Claude Agent SDK and VS Code build on) over streamable
// HTTP, as integration/mcp_test.go's TestMCPTypeScriptClient asks: list the
// tools, write, edit and read a file. Prints one JSON line per step; exits
// non-zero on the first failure.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const url = new URL(process.env.SANDFS_MCP_URL);
const headers = { Authorization: `Bearer ${process.env.SANDFS_TOKEN}`, "X-Sandfs-Actor": "ts-sdk" };
const client = new Client({ name: "ts-check", version: "1" });
await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers } }));

const step = (name, value) => console.log(JSON.stringify({ step: name, value }));
const fail = (msg) => { console.error(msg); process.exit(1); };

step("server", client.getServerVersion());
const { tools } = await client.listTools();
step("tools", tools.map((t) => t.name).sort());

const call = async (name, args) => {
  const res = await client.callTool({ name, arguments: args });
  const text = res.content.map((c) => c.text ?? "").join("");
  step(name, { text, isError: !!res.isError });
  if (res.isError) fail(`${name}: ${text}`);
  return { text, res };
};
await call("create_directory", { path: "/ts" });
await call("write_file", { path: "/ts/hello.txt", content: "hello\nworld\n" });
await call("edit_file", { path: "/ts/hello.txt", edits: [{ oldText: "world", newText: "sandfs" }] });
const { text } = await call("read_text_file", { path: "/ts/hello.txt" });
if (text !== "hello\nsandfs\n") fail(`read back ${JSON.stringify(text)}`);
await client.close();
