#!/usr/bin/env node
// An MCP server that crashes on demand, written with the official TypeScript SDK, for
// the harness's end-to-end tests (tests/e2e/tools/mcp.rs).
//
//   node crashy.mjs stdio          over its stdin and stdout
//   node crashy.mjs http PORT      streamable HTTP (stateless) on 127.0.0.1:PORT/mcp
//
// Tools: `echo {message}` answers "crashy <pid>: <message>" (the pid tells a restarted
// server from the first); `crash {}` sends a progress notification, then exits the
// process (code 3) in the middle of the call, never answering it.
import http from "node:http";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { z } from "zod";

function server() {
  const mcp = new McpServer({ name: "crashy", version: "1.0.0" });
  mcp.registerTool(
    "echo",
    { description: "Echoes the message, with the server's process id", inputSchema: { message: z.string() } },
    async ({ message }) => ({ content: [{ type: "text", text: `crashy ${process.pid}: ${message}` }] }),
  );
  mcp.registerTool(
    "crash",
    { description: "Exits the server's process in the middle of the call", inputSchema: {} },
    async (_args, extra) => {
      const token = extra._meta?.progressToken;
      if (token !== undefined) {
        await extra.sendNotification({
          method: "notifications/progress",
          params: { progressToken: token, progress: 1, message: "about to crash" },
        });
      }
      setTimeout(() => process.exit(3), 50);
      return new Promise(() => {});
    },
  );
  return mcp;
}

const [mode, port] = process.argv.slice(2);
if (mode === "stdio") {
  await server().connect(new StdioServerTransport());
  console.error(`crashy ${process.pid} serving over stdio`);
} else if (mode === "http" && port) {
  const listener = http.createServer(async (req, res) => {
    if (req.url !== "/mcp") {
      res.writeHead(404).end();
      return;
    }
    // Stateless: a server and a transport per request, as the SDK's example does.
    const mcp = server();
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on("close", () => {
      transport.close();
      mcp.close();
    });
    await mcp.connect(transport);
    await transport.handleRequest(req, res);
  });
  listener.listen(Number(port), "127.0.0.1", () => {
    console.error(`crashy ${process.pid} listening on 127.0.0.1:${port}`);
  });
} else {
  console.error("usage: crashy.mjs stdio | crashy.mjs http PORT");
  process.exit(2);
}
