package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"sandfs/bench/load"
)

// mcpConns is how many goroutines call at once, on every kind: they share
// one MCP session (sandfs over HTTP, the reference over stdio) or one
// keep-alive http.Client (the REST route), whose pool holds as many
// connections as there are goroutines.
const mcpConns = 8

// mcpRefDir is where the reference server is installed, from the lock
// file the integration tests pin (integration/testdata/mcp).
func mcpRefDir(c *cfg) string { return filepath.Join(c.cache, "mcp-ref") }

// needMCPRef installs node and npm (apt) when missing and the pinned
// @modelcontextprotocol/server-filesystem under bench/.cache/mcp-ref with
// `npm ci` of integration/testdata/mcp's package.json and lock, again
// whenever the lock changes. It returns the server's version.
func needMCPRef(c *cfg) (string, error) {
	for _, n := range [][2]string{{"node", "nodejs"}, {"npm", "npm"}} {
		if err := needApt(n[0], n[1]); err != nil {
			return "", err
		}
	}
	src, dir := filepath.Join(c.repo, "integration", "testdata", "mcp"), mcpRefDir(c)
	lock, err := os.ReadFile(filepath.Join(src, "package-lock.json"))
	if err != nil {
		return "", err
	}
	pj := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "server-filesystem", "package.json")
	have, _ := os.ReadFile(filepath.Join(dir, "package-lock.json"))
	if _, err := os.Stat(pj); err != nil || !bytes.Equal(have, lock) {
		os.MkdirAll(dir, 0o755)
		for _, f := range []string{"package.json", "package-lock.json"} {
			b, err := os.ReadFile(filepath.Join(src, f))
			if err != nil {
				return "", err
			}
			if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
				return "", err
			}
		}
		logf("installing the reference MCP filesystem server: npm ci in %s", dir)
		cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("npm ci in %s: %v: %s", dir, err, tail(string(out)))
		}
	}
	var v struct{ Version string }
	b, err := os.ReadFile(pj)
	if err != nil {
		return "", err
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return "", err
	}
	return v.Version, nil
}

// mcpText is the 4 KiB text file every kind reads: numbered lines of
// ASCII (read_text_file answers text, so not the rps rows' random bytes).
func mcpText() []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < 4096; i++ {
		fmt.Fprintf(&b, "%04d the quick brown fox jumps over the lazy dog\n", i)
	}
	return b.Bytes()[:4096]
}

// mcpHTTP is a keep-alive client with a pool of conns connections that
// sends tok.
func mcpHTTP(tok string, conns int) *http.Client {
	return &http.Client{Transport: load.WithToken(tok, &http.Transport{MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns, DisableCompression: true})}
}

// readCall calls read_text_file of p on cs and checks the answer is want.
func readCall(ctx context.Context, cs *sdk.ClientSession, p string, want []byte) error {
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "read_text_file", Arguments: map[string]any{"path": p}})
	if err != nil {
		return err
	}
	if res.IsError || len(res.Content) == 0 {
		return fmt.Errorf("read_text_file %s: isError %v, %d content blocks", p, res.IsError, len(res.Content))
	}
	if tc, ok := res.Content[0].(*sdk.TextContent); !ok || tc.Text != string(want) {
		return fmt.Errorf("read_text_file %s: not the file's text", p)
	}
	return nil
}

// runMCP: tools/call read_text_file of a 4 KiB text file over one MCP
// session to sandfs's POST /mcp, against the same read on its REST route
// GET /v1/fs/file and against the reference filesystem server (node,
// stdio), with a fourth kind for the note (sandfs on a session at the
// reference's protocol), the four taking turns in a Williams order.
func runMCP(c *cfg, t *table) error {
	ver, err := needMCPRef(c)
	if err != nil {
		return err
	}
	root, err := httpRoot(c)
	if err != nil {
		return err
	}
	if root, err = filepath.EvalSymlinks(root); err != nil {
		return err
	}
	want := mcpText()
	if err := os.WriteFile(filepath.Join(root, "t4k.txt"), want, 0o644); err != nil {
		return err
	}
	// With a token, as /mcp is meant to be served (docs/mcp.md): both
	// sandfs kinds send it.
	st := stateDir(c)
	addr := freePort()
	sd, err := withState(st)(startProc("", addr, "/health", c.bin, "serve", "--root", root, "--listen", addr, "--state", st))
	if err != nil {
		return err
	}
	defer sd.stop()
	tok, err := os.ReadFile(filepath.Join(st, "token"))
	if err != nil {
		return err
	}
	token := strings.TrimSpace(string(tok))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	impl := &sdk.Implementation{Name: "sandfs-bench", Version: "1"}
	ours, err := sdk.NewClient(impl, nil).Connect(ctx, &sdk.StreamableClientTransport{
		Endpoint: sd.base + "/mcp", HTTPClient: mcpHTTP(token, mcpConns), MaxRetries: -1}, nil)
	if err != nil {
		return fmt.Errorf("MCP session to sandfs: %v", err)
	}
	defer ours.Close()
	var refErr lockedBuf
	node, err := exec.LookPath("node")
	if err != nil {
		return err
	}
	cmd := exec.Command(node, filepath.Join(mcpRefDir(c), "node_modules", "@modelcontextprotocol", "server-filesystem", "dist", "index.js"), root)
	cmd.Stderr = &refErr
	ref, err := sdk.NewClient(impl, nil).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		return fmt.Errorf("starting the reference server: %v: %s", err, tail(refErr.String()))
	}
	defer ref.Close()
	nodeVer, _ := exec.Command(node, "--version").Output()
	// A second session to sandfs at the protocol the reference speaks, to
	// tell the protocol's cost from the server's (2026-07-28 adds the
	// Mcp-Method and Mcp-Name headers the server checks on every call).
	refProto := proto(ref)
	older, err := sdk.NewClient(impl, nil).Connect(ctx, &sdk.StreamableClientTransport{
		Endpoint: sd.base + "/mcp", HTTPClient: mcpHTTP(token, mcpConns), MaxRetries: -1}, &sdk.ClientSessionOptions{ProtocolVersion: refProto})
	if err != nil {
		return fmt.Errorf("MCP session to sandfs at %s: %v", refProto, err)
	}
	defer older.Close()

	restc := mcpHTTP(token, mcpConns)
	restURL := sd.base + "/v1/fs/file?path=" + q("/t4k.txt")
	self := os.Getpid()
	kinds := []struct {
		pid int
		do  func(int, int) error
	}{
		{sd.pid(), func(int, int) error { return readCall(ctx, ours, "/t4k.txt", want) }},
		{sd.pid(), func(int, int) error {
			r, err := restc.Get(restURL)
			if err != nil {
				return err
			}
			b, err := io.ReadAll(r.Body)
			r.Body.Close()
			if err != nil || r.StatusCode != 200 || !bytes.Equal(b, want) {
				return fmt.Errorf("GET %s: %d, %d bytes, %v", restURL, r.StatusCode, len(b), err)
			}
			return nil
		}},
		{cmd.Process.Pid, func(int, int) error { return readCall(ctx, ref, filepath.Join(root, "t4k.txt"), want) }},
		{sd.pid(), func(int, int) error { return readCall(ctx, older, "/t4k.txt", want) }},
	}
	// Four kinds: a Williams design is four rounds; two of them, quick one.
	rounds := 8
	if c.quick {
		rounds = 4
	}
	if c.runsSet {
		rounds = c.runs
	}
	rate := make([][]float64, len(kinds))
	srv := make([][]float64, len(kinds)) // server CPU per request, µs
	har := make([][]float64, len(kinds)) // the harness's (the client's)
	for i := 0; i < rounds; i++ {
		for _, k := range order(len(kinds), i) {
			v, us, err := driveCPU([]int{kinds[k].pid, self}, mcpConns, c.dur, kinds[k].do)
			if err != nil {
				if k == 2 {
					err = fmt.Errorf("%v: %s", err, tail(refErr.String()))
				}
				return err
			}
			rate[k], srv[k], har[k] = append(rate[k], v), append(srv[k], us[0]), append(har[k], us[1])
		}
	}
	cpu := func(k int) string {
		return fmt.Sprintf("%.0f µs server, %.0f µs harness", median(srv[k]), median(har[k]))
	}
	how := fmt.Sprintf("%d goroutines calling back to back", mcpConns)
	t.pair(fmt.Sprintf("4 KiB `tools/call read_text_file` requests/s over one MCP session (`POST /mcp`), %d at once, vs the same read on `GET /v1/fs/file`", mcpConns),
		"req/s", rate[0], rate[1], atLeast, 0.8,
		fmt.Sprintf("%s: on one Go SDK client session (streamable HTTP, protocol %s, stateless server, the daemon's token), on one keep-alive http.Client (pool of %d) for REST; CPU per request: MCP %s, REST %s; %d rounds, the four kinds (this MCP session, REST, the reference, sandfs at the reference's protocol) taking turns in a Williams order",
			how, proto(ours), mcpConns, cpu(0), cpu(1), rounds))
	t.pair(fmt.Sprintf("4 KiB `tools/call read_text_file` requests/s, %d at once on one session: sandfs `POST /mcp` vs the reference server-filesystem %s (node, stdio)", mcpConns, ver),
		"req/s", rate[0], rate[2], atLeast, 1.0,
		fmt.Sprintf("%s; the reference over `sdk.CommandTransport` (protocol %s, node %s) serving the same directory, its path absolute; CPU per request: sandfs %s, reference %s; sandfs on a session at the reference's protocol %s: %s (%.2fx the reference), %s",
			how, refProto, strings.TrimSpace(string(nodeVer)), cpu(0), cpu(2), refProto, num(median(rate[3]), "req/s"), median(rate[3])/median(rate[2]), cpu(3)))
	return nil
}

// proto is the protocol version cs negotiated.
func proto(cs *sdk.ClientSession) string {
	if r := cs.InitializeResult(); r != nil {
		return r.ProtocolVersion
	}
	return "?"
}

// lockedBuf is a child's stderr, written by exec's copier and read on error.
type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
