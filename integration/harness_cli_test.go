package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Running the sandfs CLI against the harness's daemon.

// cliResult is what one run of the sandfs client printed and its status.
type cliResult struct {
	Stdout string
	Stderr string
	Code   int
}

func (r cliResult) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
}

// cliEnv is the test's environment without any SANDFS_ variable, plus env.
// The race runtime of the -race binary sleeps a second before every clean
// exit (GORACE atexit_sleep_ms); the client runs many times, so it is told
// not to.
func cliEnv(env ...string) []string {
	var out []string
	gorace := "atexit_sleep_ms=0"
	for _, kv := range os.Environ() {
		switch {
		case strings.HasPrefix(kv, "SANDFS_"):
		case strings.HasPrefix(kv, "GORACE="):
			gorace = strings.TrimPrefix(kv, "GORACE=") + " " + gorace
		default:
			out = append(out, kv)
		}
	}
	out = append(out, "GORACE="+gorace)
	return append(out, env...)
}

// runSandfs runs the sandfs binary with args, the environment cliEnv(env...)
// and stdin (nil: empty), and returns what it printed and its exit status.
// It fails the test if the binary cannot run or takes over a minute.
func runSandfs(t testing.TB, env []string, stdin []byte, args ...string) cliResult {
	t.Helper()
	return runSandfsWithin(t, time.Minute, env, stdin, args...)
}

// runSandfsWithin is runSandfs with another bound than a minute.
func runSandfsWithin(t testing.TB, bound time.Duration, env []string, stdin []byte, args ...string) cliResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	cmd := exec.CommandContext(ctx, sandfsBin(t), args...)
	cmd.Env = cliEnv(env...)
	cmd.Stdin = bytes.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := cliResult{Stdout: stdout.String(), Stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee) && ee.Exited():
		res.Code = ee.ExitCode()
	default:
		t.Fatalf("sandfs %s (bound %v): %v\n%s", strings.Join(args, " "), bound, err, res)
	}
	return res
}

// CLI runs the sandfs client against d, with cliEnv(d.Env()...).
func (d *Daemon) CLI(t testing.TB, stdin []byte, args ...string) cliResult {
	t.Helper()
	return runSandfs(t, d.Env(), stdin, args...)
}

// Env is what a client of d is given: SANDFS_URL and SANDFS_STATE, and
// SANDFS_TOKEN when the token was given to the daemon. A daemon that made
// its token is reached as "make run" and "sandfs ls" are: the client reads
// the token file of the state directory.
func (d *Daemon) Env() []string {
	env := []string{"SANDFS_URL=" + d.URL, "SANDFS_STATE=" + d.State}
	if d.Socket != "" {
		env[0] = "SANDFS_URL=unix:" + d.Socket
	}
	if d.Token != "" && !d.MadeToken {
		env = append(env, "SANDFS_TOKEN="+d.Token)
	}
	return env
}
