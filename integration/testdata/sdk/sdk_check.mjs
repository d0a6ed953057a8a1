// sdk_check.mjs drives a running sandfs daemon through the published
// sandbox-agent TypeScript SDK (the exact version pinned in package.json),
// calling the SDK's eight filesystem methods as any user of the SDK would:
//
//   listFsEntries  GET    /v1/fs/entries      ?path=            -> FsEntry[]
//   readFsFile     GET    /v1/fs/file         ?path=            -> bytes
//   writeFsFile    PUT    /v1/fs/file         ?path=  raw body  -> FsWriteResponse
//   deleteFsEntry  DELETE /v1/fs/entry        ?path=&recursive= -> FsActionResponse
//   mkdirFs        POST   /v1/fs/mkdir        ?path=            -> FsActionResponse
//   moveFs         POST   /v1/fs/move         JSON {from,to,overwrite} -> FsMoveResponse
//   statFs         GET    /v1/fs/stat         ?path=            -> FsStat
//   uploadFsBatch  POST   /v1/fs/upload-batch ?path=  tar body  -> FsUploadBatchResponse
//
// Environment:
//   SANDFS_URL        base URL of the daemon (required), e.g. http://127.0.0.1:7420
//   SANDFS_TOKEN      bearer token the daemon was started with (optional)
//   SDK_CHECK_DIR     API directory the checks work in (default /sdkcheck); it
//                     must not exist yet. Its parent must be the daemon's working
//                     directory (the listing and upload without a path go there).
//   SDK_CHECK_TRACE=1 print every HTTP request the SDK makes and the answer.
//   SDK_CHECK_STRICT_STATUS=0  accept any 4xx where sandfs promises a specific
//                     status (for running against the original sandbox-agent).
//
// Validated against the original server too: the sandbox-agent 0.4.2 binary
// (`sandbox-agent --token T server`, from the SDK's optional @sandbox-agent/cli
// dependency), with SDK_CHECK_DIR=$HOME/sdkcheck SDK_CHECK_STRICT_STATUS=0,
// passes every check except the ones where sandfs deliberately differs: the
// original caps request bodies at 2 MiB (413 on the 3 MiB write, and so the
// read and listing after it fail) and answers 502 stream_error, not 409, for
// deleting a non-empty directory. With strict statuses it also answers 400
// (not 404) for missing paths and 400 (not 409) for a move onto an existing
// path, and it writes the entries before a refused ".." tar entry.
//
// Prints one line per check ("ok - ..." or "FAIL - ...") and exits 1 if any
// check failed, 2 on an overall timeout.

import { SandboxAgent, SandboxAgentError } from "sandbox-agent";
import { randomBytes } from "node:crypto";
import { posix } from "node:path";

const baseUrl = process.env.SANDFS_URL;
if (!baseUrl) {
  console.error("SANDFS_URL is required");
  process.exit(2);
}
const token = process.env.SANDFS_TOKEN || undefined;
const dir = process.env.SDK_CHECK_DIR || "/sdkcheck";
const trace = process.env.SDK_CHECK_TRACE === "1";
const strictStatus = process.env.SDK_CHECK_STRICT_STATUS !== "0";
const parentDir = posix.dirname(dir);
const p = (...parts) => posix.join(dir, ...parts);

const overall = setTimeout(() => {
  console.log("FAIL - overall timeout: the checks did not finish within 120s");
  process.exit(2);
}, 120_000);

let failures = 0;
let passes = 0;

async function check(name, fn) {
  try {
    const note = await fn();
    passes++;
    console.log(`ok - ${name}${note ? ` (${note})` : ""}`);
  } catch (err) {
    failures++;
    console.log(`FAIL - ${name}: ${describe(err)}`);
  }
}

function describe(err) {
  if (err instanceof SandboxAgentError) {
    return `SandboxAgentError status=${err.status} message=${JSON.stringify(err.message)} problem=${JSON.stringify(err.problem)}`;
  }
  return err && err.stack ? err.stack.split("\n").slice(0, 3).join(" | ") : String(err);
}

function assert(cond, msg) {
  if (!cond) throw new Error(msg);
}

function eq(actual, expected, what) {
  const a = JSON.stringify(actual);
  const e = JSON.stringify(expected);
  if (a !== e) throw new Error(`${what}: got ${a}, want ${e}`);
}

function sameBytes(a, b, what) {
  assert(a instanceof Uint8Array, `${what}: not a Uint8Array but ${Object.prototype.toString.call(a)}`);
  if (a.length !== b.length) throw new Error(`${what}: length ${a.length}, want ${b.length}`);
  for (let i = 0; i < a.length; i++) {
    if (a[i] !== b[i]) throw new Error(`${what}: first difference at byte ${i}: ${a[i]} != ${b[i]}`);
  }
}

// expectError runs fn, which must reject with a SandboxAgentError whose status
// is `status` (or any 4xx when SDK_CHECK_STRICT_STATUS=0), and whose body the
// SDK parsed as problem details. Returns a note for the check line.
async function expectError(fn, status, kind) {
  let err;
  try {
    await fn();
  } catch (e) {
    err = e;
  }
  assert(err !== undefined, `expected an error with status ${status}, but the call succeeded`);
  if (!(err instanceof SandboxAgentError)) throw err;
  if (strictStatus) {
    eq(err.status, status, "status");
    const pr = err.problem;
    assert(pr && typeof pr === "object", `error body was not JSON problem details (SDK parsed ${JSON.stringify(pr)})`);
    eq(pr.status, status, "problem.status");
    assert(typeof pr.title === "string" && pr.title !== "", `problem.title missing: ${JSON.stringify(pr)}`);
    if (kind) eq(pr.type, `urn:sandbox-agent:error:${kind}`, "problem.type");
    const ct = err.response?.headers?.get("content-type") || "";
    assert(ct.startsWith("application/problem+json"), `error content-type ${JSON.stringify(ct)}, want application/problem+json`);
  } else {
    assert(err.status >= 400 && err.status < 500, `status ${err.status}, want 4xx`);
  }
  return `status ${err.status}, type ${err.problem?.type}`;
}

function checkModified(m, what) {
  // FsEntry/FsStat.modified is optional in the SDK types; sandfs promises RFC 3339.
  assert(typeof m === "string", `${what}.modified missing: ${JSON.stringify(m)}`);
  assert(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/.test(m), `${what}.modified not RFC 3339: ${m}`);
  const t = Date.parse(m);
  assert(Number.isFinite(t), `${what}.modified does not parse: ${m}`);
  assert(Math.abs(Date.now() - t) < 10 * 60_000, `${what}.modified ${m} is not within 10 minutes of now`);
}

// ---- a tiny ustar encoder ----------------------------------------------
function octal(n, width) {
  // width includes the trailing NUL.
  return n.toString(8).padStart(width - 1, "0") + "\0";
}

function tarHeader({ name, size = 0, type = "0", mode = 0o644, linkname = "" }) {
  const h = new Uint8Array(512);
  const enc = new TextEncoder();
  const put = (str, off, len) => {
    const b = typeof str === "string" ? enc.encode(str) : str;
    if (b.length > len) throw new Error(`tar field too long: ${str}`);
    h.set(b, off);
  };
  let prefix = "";
  let base = name;
  if (enc.encode(name).length > 100) {
    const cut = name.lastIndexOf("/", name.length - 2);
    prefix = name.slice(0, cut);
    base = name.slice(cut + 1);
  }
  put(base, 0, 100);
  put(octal(mode, 8), 100, 8);
  put(octal(0, 8), 108, 8); // uid
  put(octal(0, 8), 116, 8); // gid
  put(octal(size, 12), 124, 12);
  put(octal(Math.floor(Date.now() / 1000), 12), 136, 12);
  put("        ", 148, 8); // checksum placeholder
  put(type, 156, 1);
  put(linkname, 157, 100);
  put("ustar\0", 257, 6);
  put("00", 263, 2);
  put("root", 265, 32);
  put("root", 297, 32);
  put(prefix, 345, 155);
  let sum = 0;
  for (const b of h) sum += b;
  put(sum.toString(8).padStart(6, "0") + "\0 ", 148, 8);
  return h;
}

function tar(entries) {
  const chunks = [];
  for (const e of entries) {
    if (e.type === "5") {
      chunks.push(tarHeader({ name: e.name.endsWith("/") ? e.name : e.name + "/", type: "5", mode: 0o755 }));
      continue;
    }
    if (e.type === "2") {
      chunks.push(tarHeader({ name: e.name, type: "2", linkname: e.linkname, mode: 0o777 }));
      continue;
    }
    const data = typeof e.data === "string" ? new TextEncoder().encode(e.data) : e.data;
    chunks.push(tarHeader({ name: e.name, size: data.length }));
    chunks.push(data);
    const pad = (512 - (data.length % 512)) % 512;
    if (pad) chunks.push(new Uint8Array(pad));
  }
  chunks.push(new Uint8Array(1024));
  const total = chunks.reduce((n, c) => n + c.length, 0);
  const out = new Uint8Array(total);
  let off = 0;
  for (const c of chunks) {
    out.set(c, off);
    off += c.length;
  }
  return out;
}

// ---- the SDK client ------------------------------------------------------
let fetchImpl;
if (trace) {
  fetchImpl = async (url, init = {}) => {
    const h = new Headers(init.headers);
    const hs = [...h.entries()].map(([k, v]) => `${k}: ${k === "authorization" ? v.replace(/ .*/, " <redacted>") : v}`).join("; ");
    let bodyNote = "";
    if (typeof init.body === "string") bodyNote = ` body(string,${init.body.length}): ${init.body.slice(0, 200)}`;
    else if (init.body instanceof Uint8Array) bodyNote = ` body(Uint8Array,${init.body.length})`;
    else if (init.body !== undefined) bodyNote = ` body(${Object.prototype.toString.call(init.body)})`;
    console.log(`# > ${init.method || "GET"} ${url} [${hs}]${bodyNote}`);
    const res = await fetch(url, init);
    const text = await res.clone().text().catch(() => "");
    const shown = res.headers.get("content-type")?.includes("json") ? text.slice(0, 300) : `<${text.length} chars>`;
    console.log(`# < ${res.status} content-type=${res.headers.get("content-type")} ${shown}`);
    return res;
  };
}

const sdk = new SandboxAgent({
  baseUrl,
  token,
  // Without a timeout the SDK's health wait retries /v1/health forever.
  waitForHealth: { timeoutMs: 15_000 },
  ...(fetchImpl ? { fetch: fetchImpl } : {}),
});

const text = "hello from the sandbox-agent SDK\nünïcødé ✓ — line two\n";
const textBytes = new TextEncoder().encode(text);
const binary = new Uint8Array(4096 + 77);
for (let i = 0; i < binary.length; i++) binary[i] = (i * 7 + (i >> 8)) & 0xff; // every byte value, NULs included
const big = new Uint8Array(randomBytes(3 * 1024 * 1024 + 5));
const oddName = "sp ace+plus&amp=eq%25#hash ü.txt";

await check("health: SDK waits on GET /v1/health and getHealth() answers status ok", async () => {
  const h = await sdk.getHealth();
  eq(h.status, "ok", "health.status");
});

if (token) {
  await check("auth: a wrong bearer token is refused with 401 problem+json", async () => {
    const bad = new SandboxAgent({ baseUrl, token: token + "-wrong", skipHealthCheck: true });
    try {
      return await expectError(() => bad.listFsEntries({ path: "/" }), 401, "token_invalid");
    } finally {
      await bad.dispose();
    }
  });
  await check("auth: no token at all is refused with 401", async () => {
    const anon = new SandboxAgent({ baseUrl, skipHealthCheck: true });
    try {
      return await expectError(() => anon.statFs({ path: "/" }), 401, "token_invalid");
    } finally {
      await anon.dispose();
    }
  });
}

await check("statFs on a missing path rejects with 404 not_found", async () =>
  expectError(() => sdk.statFs({ path: dir }), 404, "not_found"));

await check("mkdirFs creates the check directory", async () => {
  const r = await sdk.mkdirFs({ path: dir });
  eq(r, { path: dir }, "FsActionResponse");
});

await check("mkdirFs creates missing parents and is idempotent", async () => {
  const r = await sdk.mkdirFs({ path: p("a/b/c") });
  eq(r, { path: p("a/b/c") }, "FsActionResponse");
  const again = await sdk.mkdirFs({ path: p("a/b/c") });
  eq(again, { path: p("a/b/c") }, "FsActionResponse (again)");
});

await check("writeFsFile with a string body (text)", async () => {
  const r = await sdk.writeFsFile({ path: p("text.txt") }, text);
  eq(r, { path: p("text.txt"), bytesWritten: textBytes.length }, "FsWriteResponse");
});

await check("writeFsFile with a Uint8Array body (binary, every byte value)", async () => {
  const r = await sdk.writeFsFile({ path: p("bin.dat") }, binary);
  eq(r, { path: p("bin.dat"), bytesWritten: binary.length }, "FsWriteResponse");
});

await check("writeFsFile with a Blob body, 3 MiB", async () => {
  const r = await sdk.writeFsFile({ path: p("big.bin") }, new Blob([big]));
  eq(r, { path: p("big.bin"), bytesWritten: big.length }, "FsWriteResponse");
});

await check("writeFsFile of an empty body", async () => {
  const r = await sdk.writeFsFile({ path: p("empty") }, new Uint8Array(0));
  eq(r, { path: p("empty"), bytesWritten: 0 }, "FsWriteResponse");
});

await check("writeFsFile creates missing parent directories", async () => {
  const r = await sdk.writeFsFile({ path: p("new/parent/dirs/deep.txt") }, "deep");
  eq(r, { path: p("new/parent/dirs/deep.txt"), bytesWritten: 4 }, "FsWriteResponse");
});

await check("writeFsFile to a name with space, +, &, =, %, # and non-ASCII (query encoding)", async () => {
  const r = await sdk.writeFsFile({ path: p(oddName) }, "odd");
  eq(r, { path: p(oddName), bytesWritten: 3 }, "FsWriteResponse");
});

await check("writeFsFile overwrites an existing file", async () => {
  await sdk.writeFsFile({ path: p("over.txt") }, "a much longer first version");
  const r = await sdk.writeFsFile({ path: p("over.txt") }, "v2");
  eq(r.bytesWritten, 2, "bytesWritten");
  const back = new TextDecoder().decode(await sdk.readFsFile({ path: p("over.txt") }));
  eq(back, "v2", "content after overwrite");
});

await check("readFsFile round-trips the text file", async () => {
  const got = await sdk.readFsFile({ path: p("text.txt") });
  sameBytes(got, textBytes, "text bytes");
  eq(new TextDecoder().decode(got), text, "decoded text");
});

await check("readFsFile round-trips the binary file", async () => {
  sameBytes(await sdk.readFsFile({ path: p("bin.dat") }), binary, "binary bytes");
});

await check("readFsFile round-trips the 3 MiB file", async () => {
  sameBytes(await sdk.readFsFile({ path: p("big.bin") }), big, "big bytes");
});

await check("readFsFile of the empty file", async () => {
  sameBytes(await sdk.readFsFile({ path: p("empty") }), new Uint8Array(0), "empty");
});

await check("readFsFile of the oddly named file", async () => {
  eq(new TextDecoder().decode(await sdk.readFsFile({ path: p(oddName) })), "odd", "content");
});

await check("readFsFile on a missing file rejects with 404 not_found", async () =>
  expectError(() => sdk.readFsFile({ path: p("nope.txt") }), 404, "not_found"));

await check("readFsFile on a directory rejects with 400", async () =>
  expectError(() => sdk.readFsFile({ path: p("a") }), 400));

await check("statFs on a file", async () => {
  const s = await sdk.statFs({ path: p("bin.dat") });
  eq(s.path, p("bin.dat"), "path");
  eq(s.entryType, "file", "entryType");
  eq(s.size, binary.length, "size");
  checkModified(s.modified, "stat");
  return `modified ${s.modified}`;
});

await check("statFs on a directory", async () => {
  const s = await sdk.statFs({ path: p("a") });
  eq(s.path, p("a"), "path");
  eq(s.entryType, "directory", "entryType");
  assert(typeof s.size === "number", `size is ${typeof s.size}`);
  checkModified(s.modified, "stat");
});

await check("listFsEntries lists names, paths, types and sizes", async () => {
  const list = await sdk.listFsEntries({ path: dir });
  assert(Array.isArray(list), `not an array: ${JSON.stringify(list)}`);
  const byName = Object.fromEntries(list.map((e) => [e.name, e]));
  const want = {
    "text.txt": ["file", textBytes.length],
    "bin.dat": ["file", binary.length],
    "big.bin": ["file", big.length],
    empty: ["file", 0],
    "over.txt": ["file", 2],
    [oddName]: ["file", 3],
    a: ["directory", null],
    new: ["directory", null],
  };
  eq(Object.keys(byName).sort(), Object.keys(want).sort(), "names");
  for (const [name, [type, size]] of Object.entries(want)) {
    const e = byName[name];
    eq(e.path, p(name), `${name}.path`);
    eq(e.entryType, type, `${name}.entryType`);
    assert(typeof e.size === "number", `${name}.size is ${typeof e.size}`);
    if (size !== null) eq(e.size, size, `${name}.size`);
    checkModified(e.modified, name);
  }
  return `${list.length} entries`;
});

await check("listFsEntries of an empty directory is []", async () => {
  eq(await sdk.listFsEntries({ path: p("a/b/c") }), [], "entries");
});

await check("listFsEntries without a path lists the working directory", async () => {
  const list = await sdk.listFsEntries();
  const mine = list.find((e) => e.name === posix.basename(dir));
  assert(mine, `${posix.basename(dir)} not among ${JSON.stringify(list.map((e) => e.name))}`);
  eq(mine.entryType, "directory", "entryType");
});

await check("listFsEntries on a file rejects with 400", async () =>
  expectError(() => sdk.listFsEntries({ path: p("text.txt") }), 400));

await check("listFsEntries on a missing directory rejects with 404", async () =>
  expectError(() => sdk.listFsEntries({ path: p("missing") }), 404, "not_found"));

await check("moveFs renames a file into another directory", async () => {
  const r = await sdk.moveFs({ from: p("text.txt"), to: p("a/moved.txt") });
  eq(r, { from: p("text.txt"), to: p("a/moved.txt") }, "FsMoveResponse");
  sameBytes(await sdk.readFsFile({ path: p("a/moved.txt") }), textBytes, "moved content");
  await expectError(() => sdk.statFs({ path: p("text.txt") }), 404, "not_found");
});

await check("moveFs onto an existing file without overwrite rejects with 409", async () => {
  const note = await expectError(() => sdk.moveFs({ from: p("over.txt"), to: p("bin.dat") }), 409, "conflict");
  sameBytes(await sdk.readFsFile({ path: p("bin.dat") }), binary, "target untouched");
  return note;
});

await check("moveFs with overwrite: true replaces the target", async () => {
  const r = await sdk.moveFs({ from: p("over.txt"), to: p("bin.dat"), overwrite: true });
  eq(r, { from: p("over.txt"), to: p("bin.dat") }, "FsMoveResponse");
  eq(new TextDecoder().decode(await sdk.readFsFile({ path: p("bin.dat") })), "v2", "content");
});

await check("moveFs renames a directory", async () => {
  const r = await sdk.moveFs({ from: p("new"), to: p("renamed") });
  eq(r, { from: p("new"), to: p("renamed") }, "FsMoveResponse");
  eq(new TextDecoder().decode(await sdk.readFsFile({ path: p("renamed/parent/dirs/deep.txt") })), "deep", "content");
});

await check("moveFs of a missing source rejects with 404", async () =>
  expectError(() => sdk.moveFs({ from: p("ghost"), to: p("ghost2") }), 404, "not_found"));

await check("deleteFsEntry deletes a file", async () => {
  const r = await sdk.deleteFsEntry({ path: p("empty") });
  eq(r, { path: p("empty") }, "FsActionResponse");
  await expectError(() => sdk.statFs({ path: p("empty") }), 404, "not_found");
});

await check("deleteFsEntry deletes an empty directory without recursive", async () => {
  const r = await sdk.deleteFsEntry({ path: p("a/b/c") });
  eq(r, { path: p("a/b/c") }, "FsActionResponse");
});

await check("deleteFsEntry on a non-empty directory without recursive rejects with 409", async () => {
  const note = await expectError(() => sdk.deleteFsEntry({ path: p("renamed") }), 409, "conflict");
  const s = await sdk.statFs({ path: p("renamed/parent/dirs/deep.txt") });
  eq(s.entryType, "file", "still there");
  return note;
});

await check("deleteFsEntry with recursive: false on a non-empty directory rejects with 409", async () =>
  expectError(() => sdk.deleteFsEntry({ path: p("renamed"), recursive: false }), 409, "conflict"));

await check("deleteFsEntry with recursive: true removes a tree", async () => {
  const r = await sdk.deleteFsEntry({ path: p("renamed"), recursive: true });
  eq(r, { path: p("renamed") }, "FsActionResponse");
  await expectError(() => sdk.statFs({ path: p("renamed") }), 404, "not_found");
});

await check("deleteFsEntry on a missing path rejects with 404", async () =>
  expectError(() => sdk.deleteFsEntry({ path: p("renamed") }), 404, "not_found"));

const longDir = "pkg/" + "long-directory-name-".repeat(6).slice(0, 110);
const tarFiles = [
  { name: "pkg/", type: "5" },
  { name: "pkg/readme.txt", data: "from a tar\n" },
  { name: "pkg/sub/data.bin", data: binary },
  { name: "pkg/sub/empty", data: new Uint8Array(0) },
  { name: `${longDir}/x.txt`, data: "ustar prefix field" },
  { name: "pkg/link-to-readme", type: "2", linkname: "readme.txt" },
];

await check("uploadFsBatch extracts a tar (Uint8Array body) into ?path=", async () => {
  const r = await sdk.uploadFsBatch(tar(tarFiles), { path: p("up") });
  assert(Array.isArray(r.paths), `paths not an array: ${JSON.stringify(r)}`);
  eq(r.truncated, false, "truncated");
  for (const f of ["pkg/readme.txt", "pkg/sub/data.bin", "pkg/sub/empty", `${longDir}/x.txt`]) {
    assert(r.paths.includes(p("up", f)), `paths lacks ${p("up", f)}: ${JSON.stringify(r.paths)}`);
  }
  for (const q of r.paths) assert(q.startsWith(p("up") + "/"), `path ${q} outside the destination`);
  return `${r.paths.length} paths`;
});

await check("uploadFsBatch content reads back through readFsFile", async () => {
  eq(new TextDecoder().decode(await sdk.readFsFile({ path: p("up/pkg/readme.txt") })), "from a tar\n", "readme");
  sameBytes(await sdk.readFsFile({ path: p("up/pkg/sub/data.bin") }), binary, "data.bin");
  sameBytes(await sdk.readFsFile({ path: p("up/pkg/sub/empty") }), new Uint8Array(0), "empty");
  eq(new TextDecoder().decode(await sdk.readFsFile({ path: p("up", longDir, "x.txt") })), "ustar prefix field", "long name");
  eq(new TextDecoder().decode(await sdk.readFsFile({ path: p("up/pkg/link-to-readme") })), "from a tar\n", "symlink inside the destination");
  const list = await sdk.listFsEntries({ path: p("up/pkg") });
  eq(list.map((e) => e.name).sort(), ["link-to-readme", posix.basename(longDir), "readme.txt", "sub"].sort(), "names");
});

await check("uploadFsBatch with a Blob body, without ?path= (the working directory)", async () => {
  const name = posix.basename(dir) + "-rootup";
  const r = await sdk.uploadFsBatch(new Blob([tar([{ name: `${name}/hello.txt`, data: "root upload" }])]));
  eq(r.truncated, false, "truncated");
  const want = posix.join(parentDir, name, "hello.txt");
  assert(r.paths.includes(want), `paths lacks ${want}: ${JSON.stringify(r.paths)}`);
  eq(new TextDecoder().decode(await sdk.readFsFile({ path: want })), "root upload", "content");
});

await check("uploadFsBatch refuses an entry climbing out with .. (400, nothing written)", async () => {
  const note = await expectError(
    () => sdk.uploadFsBatch(tar([{ name: "ok-first.txt", data: "x" }, { name: "../escaped.txt", data: "x" }]), { path: p("evil") }),
    400,
  );
  await expectError(() => sdk.statFs({ path: p("escaped.txt") }), 404, "not_found");
  if (strictStatus) {
    // sandfs validates the whole archive first; the original wrote ok-first.txt.
    await expectError(() => sdk.statFs({ path: p("evil/ok-first.txt") }), 404, "not_found");
  }
  return note;
});

await sdk.dispose();
clearTimeout(overall);
console.log(`# ${passes} passed, ${failures} failed`);
process.exit(failures ? 1 : 0);
