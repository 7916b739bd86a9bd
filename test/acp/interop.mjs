// Interoperability test: drives `yolop --acp` with the official ACP client
// library (@agentclientprotocol/sdk) over stdio, through three turns, a
// two-step rewind, a resumed turn and a session/load in a new process.
//
//   YOLOP_BIN=/abs/path/to/yolop node interop.mjs
//
// Optional: YOLOP_DATA_DIR (default: a temporary directory), YOLOP_TRACE_REQUESTS
// (default: a file in that temporary directory). Every other variable in the
// environment is passed to the agent unchanged. Exits non-zero on the first
// failed check; the last line is "N passed, 0 failed".

import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, mkdirSync, readFileSync, existsSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, isAbsolute, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const bin = process.env.YOLOP_BIN;
if (!bin || !isAbsolute(bin) || !existsSync(bin)) {
  console.error(`interop: set YOLOP_BIN to the absolute path of a built yolop binary (got ${JSON.stringify(bin)})`);
  process.exit(2);
}

const tmp = mkdtempSync(join(tmpdir(), "yolop-acp-interop-"));
const repo = join(tmp, "repo");
const dataDir = process.env.YOLOP_DATA_DIR || join(tmp, "data");
const trace = process.env.YOLOP_TRACE_REQUESTS || join(tmp, "trace.jsonl");
// A fresh HOME and git config keep the run hermetic: the agent's shell
// commands run `bash -l`, which would otherwise read the user's profile.
const home = join(tmp, "home");
mkdirSync(home, { recursive: true });
const gitconfig = join(tmp, "gitconfig");
writeFileSync(gitconfig, "[user]\n\tname = interop\n\temail = interop@example.invalid\n[init]\n\tdefaultBranch = main\n");
const env = {
  ...process.env,
  HOME: home,
  GIT_CONFIG_GLOBAL: gitconfig,
  GIT_CONFIG_NOSYSTEM: "1",
  YOLOP_PROVIDER: "sim",
  YOLOP_DATA_DIR: dataDir,
  YOLOP_TRACE_REQUESTS: trace,
  // No detached spare preparation racing the cleanup of the temp dir.
  YOLOP_WORKTREE_SPARES: "0",
};
delete env.OPENAI_API_KEY;
delete env.ANTHROPIC_API_KEY;
const TIMEOUT_MS = 60_000;

let passed = 0;
const agents = [];

class CheckFailed extends Error {}

function check(cond, what, detail) {
  if (!cond) {
    throw new CheckFailed(detail === undefined ? what : `${what}\n--- detail ---\n${typeof detail === "string" ? detail : JSON.stringify(detail, null, 2)}`);
  }
  passed++;
  console.log(`ok ${passed} - ${what}`);
}

function git(...args) {
  return execFileSync("git", ["-c", "user.name=interop", "-c", "user.email=interop@example.invalid", "-c", "commit.gpgsign=false", ...args], { cwd: repo, encoding: "utf8" });
}

function withTimeout(promise, what) {
  let timer;
  const t = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new CheckFailed(`${what}: no answer within ${TIMEOUT_MS / 1000}s`)), TIMEOUT_MS);
  });
  return Promise.race([promise, t]).finally(() => clearTimeout(timer));
}

// startAgent spawns `yolop --acp` and returns a client connection with the
// session/update notifications it has received, in order.
function startAgent(name) {
  const child = spawn(bin, ["--acp"], { cwd: repo, env, stdio: ["pipe", "pipe", "pipe"] });
  const agent = { name, child, stderr: "", updates: [], exited: null };
  child.stderr.on("data", (b) => { agent.stderr += b.toString(); });
  agent.exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
  child.on("error", (err) => { agent.stderr += `spawn error: ${err.message}\n`; });
  const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  const app = acp.client({ name: "yolop-interop" })
    .onNotification("session/update", ({ params }) => { agent.updates.push(params); });
  agent.run = (op) => app.connectWith(stream, op);
  agents.push(agent);
  return agent;
}

async function kill(agent) {
  if (agent.child.exitCode === null && agent.child.signalCode === null) {
    agent.child.kill("SIGKILL");
  }
  await agent.exited;
}

function kindsOf(updates) {
  return updates.map((n) => n.update.sessionUpdate);
}

function textOf(updates, kind = "agent_message_chunk") {
  return updates
    .filter((n) => n.update.sessionUpdate === kind && n.update.content?.type === "text")
    .map((n) => n.update.content.text)
    .join("");
}

// prompt sends one prompt and returns its stop reason and the updates it
// produced.
async function prompt(ctx, agent, sessionId, text) {
  const from = agent.updates.length;
  const res = await withTimeout(
    ctx.request("session/prompt", { sessionId, prompt: [{ type: "text", text }] }),
    `session/prompt ${JSON.stringify(text.split("\n")[0])}`,
  );
  return { stop: res.stopReason, updates: agent.updates.slice(from) };
}

async function waitFor(agent, pred, what) {
  const deadline = Date.now() + TIMEOUT_MS;
  while (Date.now() < deadline) {
    const hit = agent.updates.find(pred);
    if (hit) return hit;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new CheckFailed(`${what}: not received within ${TIMEOUT_MS / 1000}s`);
}

function activeRoot(sessionId) {
  const out = execFileSync(bin, ["--data-dir", dataDir, "sessions", "show", sessionId, "--output-format", "json"], { env, encoding: "utf8" });
  const info = JSON.parse(out);
  if (!info.active_root) throw new CheckFailed(`yolop sessions show ${sessionId}: no active_root in ${out}`);
  return info.active_root;
}

function read(root, path) {
  const p = join(root, path);
  return existsSync(p) ? readFileSync(p, "utf8") : null;
}

const P1 = "think pondering turn one\nwrite one.txt\nfirst turn\nEOF";
const P2 = "write two.txt\nsecond turn\nEOF\n$ echo shell-made > shell.txt";
const P3 = "write three.txt\nthird turn\nEOF";
const P4 = "after the rewind";
const P5 = "after the reload";

async function main() {
  execFileSync("git", ["init", "-q", repo]);
  writeFileSync(join(repo, "README.md"), "interop fixture\n");
  git("add", "README.md");
  git("commit", "-q", "-m", "fixture");

  let sessionId;
  const a = startAgent("first agent");
  await a.run(async (ctx) => {
    const init = await withTimeout(ctx.request("initialize", { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: {}, clientInfo: { name: "yolop-interop", version: "1" } }), "initialize");
    check(init.protocolVersion === 1, "initialize answers protocol version 1", init);
    check(init.agentCapabilities?.loadSession === true, "initialize advertises loadSession", init);

    const created = await withTimeout(ctx.request("session/new", { cwd: repo, mcpServers: [] }), "session/new");
    sessionId = created.sessionId;
    check(typeof sessionId === "string" && sessionId.length > 0, `session/new returns a session id (${sessionId})`, created);

    const cmds = await waitFor(a, (n) => n.sessionId === sessionId && n.update.sessionUpdate === "available_commands_update", "available_commands_update after session/new");
    const names = cmds.update.availableCommands.map((c) => c.name);
    check(["rewind", "undo", "redo", "branches", "branch"].every((n) => names.includes(n)) && !names.includes("clear") && !names.includes("quit") && !names.includes("resume"),
      "available commands offer rewind, undo, redo, branches and branch, and no TUI-only commands", names);

    let r = await prompt(ctx, a, sessionId, P1);
    check(r.stop === "end_turn", "turn 1 ends with end_turn", r);
    check(textOf(r.updates, "agent_thought_chunk").includes("pondering turn one"), "turn 1 streams its reasoning as agent_thought_chunk", kindsOf(r.updates));
    const edit = r.updates.find((n) => n.update.sessionUpdate === "tool_call" && n.update.kind === "edit");
    check(edit !== undefined, "turn 1 reports the write as an edit tool_call", r.updates);
    const diffs = r.updates.flatMap((n) => n.update.content ?? []).filter((c) => c.type === "diff");
    check(diffs.some((d) => d.path.endsWith("one.txt") && d.newText === "first turn\n"), "the write is shown as a diff with the new text", diffs);
    check(r.updates.some((n) => n.update.sessionUpdate === "tool_call_update" && n.update.status === "completed"), "the write's tool_call_update completes", r.updates);
    check(textOf(r.updates).length > 0, "turn 1 streams agent_message_chunk text", r.updates);
    const usage = r.updates.find((n) => n.update.sessionUpdate === "usage_update");
    check(usage !== undefined && usage.update.size === 200000 && usage.update.used > 0, "the client accepts a usage_update with the context fill", kindsOf(r.updates));

    r = await prompt(ctx, a, sessionId, P2);
    check(r.stop === "end_turn", "turn 2 ends with end_turn", r);
    check(r.updates.some((n) => n.update.sessionUpdate === "tool_call" && n.update.kind === "execute"), "turn 2 reports the shell command as an execute tool_call", r.updates);
    r = await prompt(ctx, a, sessionId, P3);
    check(r.stop === "end_turn", "turn 3 ends with end_turn", r);

    const root = activeRoot(sessionId);
    check(read(root, "one.txt") === "first turn\n" && read(root, "two.txt") === "second turn\n" &&
      read(root, "three.txt") === "third turn\n" && read(root, "shell.txt") === "shell-made\n",
      `the three turns wrote their files in the session worktree ${root}`);

    check(["diff", "apply", "commit"].every((n) => names.includes(n)), "available commands offer diff, apply and commit", names);
    r = await prompt(ctx, a, sessionId, "/diff");
    const diff = textOf(r.updates);
    check(r.stop === "end_turn" && /^```+diff\n/.test(diff) && diff.includes("+++ b/three.txt") && diff.includes("+shell-made"), "/diff answers a fenced diff block of the session's work", diff);

    r = await prompt(ctx, a, sessionId, "/apply");
    const applyPreview = textOf(r.updates);
    const am = applyPreview.match(/^(\/apply --confirm ([A-Za-z0-9_-]+))\s*$/m);
    check(r.stop === "end_turn" && am !== null && /clean +three\.txt/.test(applyPreview), "/apply answers a preview with its outcomes and the exact confirm command", applyPreview);
    check(read(repo, "three.txt") === null, "the apply preview writes nothing into the project directory");
    r = await prompt(ctx, a, sessionId, am[1]);
    check(r.stop === "end_turn" && /Wrote 4 paths/.test(textOf(r.updates)), "the confirmed /apply reports the paths written", textOf(r.updates));
    check(read(repo, "one.txt") === "first turn\n" && read(repo, "three.txt") === "third turn\n" && read(repo, "shell.txt") === "shell-made\n",
      "the confirmed /apply brings the session's files into the client's project directory (the session's cwd)");
    r = await prompt(ctx, a, sessionId, "/apply undo");
    check(r.stop === "end_turn" && read(repo, "three.txt") === null && read(repo, "one.txt") === null, "/apply undo takes them back out", textOf(r.updates));

    r = await prompt(ctx, a, sessionId, "/rewind");
    const list = textOf(r.updates);
    check(r.stop === "end_turn" && ["cp1", "cp2", "cp3"].every((id) => list.includes(id)), "/rewind lists cp1..cp3", list);

    r = await prompt(ctx, a, sessionId, "/rewind cp2 both");
    const preview = textOf(r.updates);
    const m = preview.match(/^(\/rewind cp2 both --confirm ([A-Za-z0-9_-]+))\s*$/m);
    check(r.stop === "end_turn" && m !== null, "/rewind cp2 both answers a preview with the exact confirm command", preview);
    check(preview.includes(m[2]) && /two\.txt/.test(preview) && /three\.txt/.test(preview), "the preview names the token and the paths that change", preview);
    check(read(root, "three.txt") === "third turn\n", "a preview changes no file");

    r = await prompt(ctx, a, sessionId, m[1]);
    const restored = textOf(r.updates);
    check(r.stop === "end_turn", "the confirm ends with end_turn", r);
    check(restored.includes("Restored prompt (edit and resend):") && restored.includes("second turn"), "the confirm reports the restored prompt of cp2", restored);
    check(read(root, "one.txt") === "first turn\n" && read(root, "two.txt") === null && read(root, "three.txt") === null && read(root, "shell.txt") === null,
      "after the rewind only turn 1's file is in the worktree (shell-made file removed too)",
      { one: read(root, "one.txt"), two: read(root, "two.txt"), three: read(root, "three.txt"), shell: read(root, "shell.txt") });

    r = await prompt(ctx, a, sessionId, m[1]);
    check(r.stop === "end_turn" && /refused/i.test(textOf(r.updates)), "reusing the token is refused as a message, not an error", textOf(r.updates));

    const traceLinesBefore = existsSync(trace) ? readFileSync(trace, "utf8").trim().split("\n").length : 0;
    r = await prompt(ctx, a, sessionId, P4);
    check(r.stop === "end_turn", "a turn after the rewind ends with end_turn", r);
    const lines = readFileSync(trace, "utf8").trim().split("\n");
    check(lines.length > traceLinesBefore, "the trace file recorded the new request");
    const last = lines[lines.length - 1];
    check(last.includes("after the rewind") && last.includes("first turn"), "the last request holds turn 1 and the new prompt", last);
    for (const gone of ["second turn", "third turn", "two.txt", "three.txt", "shell-made"]) {
      check(!last.includes(gone), `the last request holds nothing of the rewound turns (${JSON.stringify(gone)})`, last);
    }

    // A second process cannot load a session this one holds.
    const b = startAgent("second agent (lock check)");
    await b.run(async (ctx2) => {
      await withTimeout(ctx2.request("initialize", { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: {}, clientInfo: { name: "yolop-interop", version: "1" } }), "initialize (second agent)");
      let err = null;
      try {
        await withTimeout(ctx2.request("session/load", { sessionId, cwd: repo, mcpServers: [] }), "session/load of a locked session");
      } catch (e) {
        err = e;
      }
      check(err !== null && !(err instanceof CheckFailed) && /locked|in use/i.test(String(err.message)), "session/load of a session held by another process fails and says it is locked (in use)", String(err?.message ?? err));
    });
    await kill(b);

    // A client's MCP server from session/new: its tools are offered and
    // used, and the server sees the session's worktree as its root.
    const everything = join(dirname(fileURLToPath(import.meta.url)), "..", "mcp", "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js");
    if (existsSync(everything)) {
      const m = await withTimeout(ctx.request("session/new", { cwd: repo, mcpServers: [{ name: "everything", command: "node", args: [everything, "stdio"], env: [] }] }), "session/new with an MCP server");
      const note = await waitFor(a, (n) => n.sessionId === m.sessionId && n.update.sessionUpdate === "agent_message_chunk" && (n.update.content?.text ?? "").includes("MCP servers work in this session's worktree"), "the note that MCP servers work in the worktree");
      check(note !== undefined, "the session says its MCP servers work in the session's worktree, not the project directory");
      const r = await prompt(ctx, a, m.sessionId, 'call mcp__everything__echo {"message":"from the editor"}');
      check(r.stop === "end_turn", "a turn calling the client's MCP server ends with end_turn", r);
      check(r.updates.some((n) => n.update.sessionUpdate === "tool_call" && (n.update.title ?? "").includes("mcp__everything__echo")),
        "the client's MCP server from session/new is offered and its tool called", kindsOf(r.updates));
      check(r.updates.some((n) => n.update.sessionUpdate === "tool_call_update" && JSON.stringify(n.update).includes("Echo: from the editor")),
        "the MCP tool's result reaches the client", r.updates.filter((n) => n.update.sessionUpdate === "tool_call_update"));
    } else {
      console.log("# skip: the MCP test server is not installed (cd test/mcp && npm ci)");
    }
  });
  await kill(a);

  // A new process resumes the session from disk.
  const c = startAgent("third agent (reload)");
  await c.run(async (ctx) => {
    await withTimeout(ctx.request("initialize", { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: {}, clientInfo: { name: "yolop-interop", version: "1" } }), "initialize (reload)");
    const loaded = await withTimeout(ctx.request("session/load", { sessionId, cwd: repo, mcpServers: [] }), "session/load");
    check(loaded !== undefined, "session/load succeeds in a new process");
    const replay = c.updates.filter((n) => n.sessionId === sessionId);
    const users = textOf(replay, "user_message_chunk");
    check(users.includes("first turn") && users.includes("after the rewind"), "the replay holds the surviving prompts", users);
    check(!users.includes("second turn") && !users.includes("third turn"), "the replay holds none of the rewound prompts", users);
    check(replay.some((n) => n.update.sessionUpdate === "tool_call" && (n.update.content ?? []).some((x) => x.type === "diff" && x.path.endsWith("one.txt"))),
      "the replay shows turn 1's write as a tool call with its diff", kindsOf(replay));
    await waitFor(c, (n) => n.sessionId === sessionId && n.update.sessionUpdate === "available_commands_update", "available_commands_update after session/load");
    check(true, "available_commands_update follows session/load");

    const r = await prompt(ctx, c, sessionId, P5);
    check(r.stop === "end_turn", "the reloaded session runs a turn", r);
    const last = readFileSync(trace, "utf8").trim().split("\n").pop();
    check(last.includes("after the reload") && last.includes("after the rewind") && !last.includes("third turn"),
      "after the reload the model sees the same active branch", last);

    // Branches through the command path: the turns the rewind abandoned are
    // branch b1; /branch b1 previews, its confirm command restores that
    // branch's files as they were left, and /redo switches back.
    const broot = activeRoot(sessionId);
    let b = await prompt(ctx, c, sessionId, "/branches");
    const branches = textOf(b.updates);
    check(b.stop === "end_turn" && /^b1 +abandoned .* cp3 /m.test(branches) && /^b2 +active /m.test(branches), "/branches lists the abandoned b1 (tip cp3) and the active b2", branches);
    b = await prompt(ctx, c, sessionId, "/branch b1");
    const bpreview = textOf(b.updates);
    const bm = bpreview.match(/^(\/branch b1 both --confirm ([A-Za-z0-9_-]+))\s*$/m);
    check(b.stop === "end_turn" && bm !== null && bpreview.includes("enter b1"), "/branch b1 answers a preview with the exact confirm command", bpreview);
    b = await prompt(ctx, c, sessionId, bm[1]);
    check(b.stop === "end_turn" && read(broot, "three.txt") === "third turn\n" && read(broot, "shell.txt") === "shell-made\n",
      "confirming /branch b1 restores that branch's files", { three: read(broot, "three.txt"), shell: read(broot, "shell.txt") });
    b = await prompt(ctx, c, sessionId, "/redo");
    const rm = textOf(b.updates).match(/^(\/redo --confirm ([A-Za-z0-9_-]+))\s*$/m);
    check(rm !== null, "/redo after a branch switch answers a preview", textOf(b.updates));
    b = await prompt(ctx, c, sessionId, rm[1]);
    check(b.stop === "end_turn" && read(broot, "three.txt") === null, "/redo switches back to b2's files", { three: read(broot, "three.txt") });

    // session/cancel ends a running turn with stop reason cancelled. The
    // cancel is repeated until the turn answers, since it may arrive before
    // the turn has started.
    const running = ctx.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "sleep 30000" }] });
    let settled = false;
    running.finally(() => { settled = true; }).catch(() => {});
    while (!settled) {
      await ctx.notify("session/cancel", { sessionId });
      await new Promise((r) => setTimeout(r, 100));
    }
    const cancelled = await withTimeout(running, "cancelled session/prompt");
    check(cancelled.stopReason === "cancelled", "session/cancel ends the turn with stop reason cancelled", cancelled);
  });
  await kill(c);
}

try {
  await main();
  console.log(`${passed} passed, 0 failed`);
  rmSync(tmp, { recursive: true, force: true });
} catch (err) {
  console.error(`\nFAIL: ${err instanceof CheckFailed ? err.message : err?.stack ?? err}`);
  for (const a of agents) {
    if (a.stderr) console.error(`--- ${a.name} stderr (last 4000 bytes) ---\n${a.stderr.slice(-4000)}`);
  }
  console.error(`(kept ${tmp} for inspection)`);
  for (const a of agents) await kill(a).catch(() => {});
  console.log(`${passed} passed, 1 failed`);
  process.exit(1);
}
