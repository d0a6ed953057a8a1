// Command sandfs is the sandfs daemon ("sandfs serve") and a small client
// for it (ls, stat, cat, put, rm, mkdir, mv, upload-batch).
//
// Auth (auth.go, state.go): the daemon always has a token unless --no-auth
// says otherwise. Given none (--token-file, SANDFS_TOKEN, --token), it makes
// one in its state directory (--state, SANDFS_STATE, $XDG_STATE_HOME/sandfs,
// ~/.local/state/sandfs): STATE/token, 0600, kept across restarts, and logs
// the console URL /ui/#token=T. The client verbs of the same user resolve
// the same directory and send that token to a daemon on this machine, so
// "make run" and "sandfs ls" work together with no set-up while any other
// local user gets 401.
//
// The main function only wires signals and exit codes: everything else is
// run, which returns an error that exitCode maps to the process status:
//
//	0  success (and "help", "-h")
//	2  not found: the daemon answered 404
//	3  refused: the daemon answered any other 4xx status — 400 a bad or
//	   unusable path, 401 a missing or wrong token, 403 permission denied or
//	   read-only, 409 a conflict (the target exists, a directory is not
//	   empty), 413 over a limit, 415, 416, 422, 429
//	1  any other failure: a 5xx answer (507 when the disk is full), the
//	   daemon unreachable, a local file that cannot be read, a bad command
//	   line, or a daemon that cannot start
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sandfs/daemon"
	"syscall"
)

const (
	exitOK       = 0
	exitFailure  = 1
	exitNotFound = 2
	exitRefused  = 3
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == daemon.ReaperVerb {
		os.Exit(daemon.RunReaper(os.Args[2:], os.Stdin))
	}
	ctx, cancel := context.WithCancel(context.Background())
	onSignals(cancel, os.Exit)
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	cancel()
	os.Exit(report(err, os.Stderr))
}

// onSignals calls stop at the first SIGINT or SIGTERM (a graceful stop)
// and exit(128+N) at the second, at once. The handler stays installed for
// the second: giving the signal back its disposition (signal.Stop) would
// restore the one inherited, and a daemon a script started in the
// background ("sandfs serve &" without job control) inherits SIGINT
// ignored, so a second Ctrl-C, or kill -INT, did nothing. Notify installs
// a handler whatever the inherited disposition was.
func onSignals(stop func(), exit func(int)) {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sigs
		stop()
		s := <-sigs
		code := 128 + int(syscall.SIGINT)
		if n, ok := s.(syscall.Signal); ok {
			code = 128 + int(n)
		}
		exit(code)
	}()
}

// report prints err (if any) and returns the exit code for it.
func report(err error, stderr io.Writer) int {
	code := exitCode(err)
	var apiErr *apiError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp), errors.Is(err, errReported):
	case errors.Is(err, context.Canceled):
		fmt.Fprintln(stderr, "sandfs: interrupted")
	case errors.As(err, &apiErr) && apiErr.Status == 401 && apiErr.TokenSent:
		fmt.Fprintf(stderr, "sandfs: %v (the daemon refused the token sent: check --token, --token-file, SANDFS_TOKEN, or, for a local daemon, the token file of its state directory: --state or SANDFS_STATE)\n", err)
	case errors.As(err, &apiErr) && apiErr.Status == 401:
		fmt.Fprintf(stderr, "sandfs: %v (the daemon wants a token: SANDFS_TOKEN, --token-file, or the token file of its state directory, which only the daemon's user can read: --state or SANDFS_STATE)\n", err)
	default:
		fmt.Fprintf(stderr, "sandfs: %v\n", err)
	}
	return code
}

// errReported is returned by a verb that has already told the user what
// went wrong and only needs the exit status set.
var errReported = errors.New("error already reported")

// exitCode is the one place errors become process exit codes (see the
// package comment).
func exitCode(err error) int {
	var apiErr *apiError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.As(err, &apiErr) && apiErr.Status == 404:
		return exitNotFound
	case errors.As(err, &apiErr) && apiErr.Status >= 400 && apiErr.Status < 500:
		return exitRefused
	default:
		return exitFailure
	}
}

// run executes one command line (without the program name).
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	e := &env{stdin: stdin, stdout: stdout, stderr: stderr, getenv: os.Getenv}
	if len(args) == 0 {
		printUsage(stderr)
		return errReported
	}
	verb, rest := args[0], args[1:]
	switch verb {
	case "--version", "-version":
		verb = "version"
	case "help", "-h", "-help", "--help":
		if len(rest) > 0 {
			c, ok := lookupCommand(rest[0])
			if !ok {
				return usagef("unknown command %q (see sandfs help)", rest[0])
			}
			c.flagSet(e).Usage()
			return nil
		}
		printUsage(stdout)
		return nil
	}
	c, ok := lookupCommand(verb)
	if !ok {
		return usagef("unknown command %q (see sandfs help)", verb)
	}
	fs := newFlagSet(c.name, c.synopsis, c.about, stdout)
	usage := fs.Usage
	fs.Usage = func() {} // printed below, to stdout for -h and stderr otherwise
	fs.SetOutput(io.Discard)
	body := c.setup(fs, e)
	pos, err := parseInterspersed(fs, rest)
	if err == nil {
		err = body(ctx, pos)
	}
	var ue *usageError
	switch {
	case errors.Is(err, flag.ErrHelp):
		fs.SetOutput(stdout)
		usage()
		return nil
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "sandfs %s: %s\nusage: sandfs %s (sandfs %s -h for more)\n", verb, ue.msg, c.synopsis, verb)
		return errReported
	}
	return err
}

// env is what a command may touch of its process.
type env struct {
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	getenv func(string) string
}

// command is one verb of the command line. setup registers its flags on fs
// and returns the body, which runs on the positional arguments once the
// flags are parsed.
type command struct {
	name     string
	synopsis string // after "sandfs "
	short    string // for the list of "sandfs help"
	about    string
	setup    func(fs *flag.FlagSet, e *env) func(ctx context.Context, args []string) error
}

// flagSet is the command's FlagSet with its flags registered, printing its
// usage to stdout.
func (c *command) flagSet(e *env) *flag.FlagSet {
	fs := newFlagSet(c.name, c.synopsis, c.about, e.stdout)
	c.setup(fs, e)
	return fs
}

// commands lists the verbs in the order "sandfs help" shows them.
var commands []*command

func init() {
	commands = []*command{
		serveCommand,
		lsCommand,
		statCommand,
		catCommand,
		putCommand,
		rmCommand,
		mkdirCommand,
		mvCommand,
		uploadBatchCommand,
		grepCommand,
		findCommand,
		cpCommand,
		downloadCommand,
		tarCommand,
		watchCommand,
		logCommand,
		changesCommand,
		checkpointCommand,
		checkpointsCommand,
		restoreCommand,
		chmodCommand,
		chownCommand,
		sandboxCommand,
		forkCommand,
		mergeCommand,
		fleetCommand,
		versionCommand,
	}
}

func lookupCommand(name string) (*command, bool) {
	for _, c := range commands {
		if c.name == name {
			return c, true
		}
	}
	return nil, false
}

func printUsage(w io.Writer) {
	fmt.Fprintf(w, `sandfs serves a directory over HTTP (the sandbox-agent /v1/fs routes and
more), and talks to such a daemon from the command line.

usage: sandfs COMMAND [flags] [args]

commands:
`)
	for _, c := range commands {
		fmt.Fprintf(w, "  %-14s %s\n", c.name, c.short)
	}
	fmt.Fprintf(w, `
Client commands talk to --server (env SANDFS_URL, default
%s; unix:/path.sock works too) with the token from
--token, --token-file or SANDFS_TOKEN, else, for a daemon on this machine,
from the token file the daemon made in its state directory (--state, env
SANDFS_STATE, default ~/.local/state/sandfs), so a daemon started with no
token flag and the client of the same user work together with no set-up.
Flags may come before or after the arguments; combined short flags work
(rm -rf, ls -la). --sandbox NAME (env SANDFS_SANDBOX) picks the sandbox:
another than default uses the named family (/v1/sandboxes/NAME/fs/*).
Transfer verbs take SOURCE then DEST, as cp does: put LOCAL PATH,
download PATH LOCAL, tar --extract LOCAL.tar PATH, upload-batch LOCALDIR PATH.
"sandfs help COMMAND" or "sandfs COMMAND -h" describes one command.

exit status: 0 ok, 2 not found (404), 3 refused by the daemon (any other 4xx:
bad path, missing or wrong token, permission, conflict, over a limit),
1 anything else (daemon unreachable or failing, local errors, bad usage).
`, defaultServer)
}
