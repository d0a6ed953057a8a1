package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"sandfs/internal/size"
	"sandfs/internal/statedir"

	"golang.org/x/sys/unix"
)

// usageError is a bad command line: an unknown verb, a missing argument, a
// flag that does not parse. It exits 1 with the verb's usage on stderr.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// newFlagSet makes the FlagSet of one verb. Errors are returned, never
// handled by exiting; usage goes to stderr with the verb's synopsis first.
func newFlagSet(name, synopsis, about string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: sandfs %s\n\n%s\n", synopsis, about)
		var any bool
		fs.VisitAll(func(*flag.Flag) { any = true })
		if any {
			fmt.Fprintf(fs.Output(), "\nflags:\n")
			fs.PrintDefaults()
		}
	}
	return fs
}

// parseInterspersed parses args with fs, letting flags come after the
// positional arguments too ("sandfs ls / --json"), as a user expects. A lone
// "--" ends the flags: everything after it is positional. It returns the
// positional arguments in order. -h and --help return flag.ErrHelp after the
// usage has been printed.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	args = splitShortFlags(fs, args)
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, &usageError{msg: err.Error()}
		}
		rest := fs.Args()
		// flag stops at the first non-flag or after "--"; find which.
		consumed := len(args) - len(rest)
		if consumed > 0 && args[consumed-1] == "--" {
			return append(pos, rest...), nil
		}
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// splitShortFlags spells combined single-dash short flags one by one, as
// getopt reads them: "-rf" is "-r -f" and "-la" is "-l -a", where every
// letter is a boolean flag of fs (anything else, "-name" or "-C3", is left
// to the flag package as it is). Nothing after a lone "--" is touched.
func splitShortFlags(fs *flag.FlagSet, args []string) []string {
	out := make([]string, 0, len(args))
	for i, a := range args {
		if a == "--" {
			return append(out, args[i:]...)
		}
		if len(a) > 2 && a[0] == '-' && a[1] != '-' && allShortBools(fs, a[1:]) {
			for _, c := range a[1:] {
				out = append(out, "-"+string(c))
			}
			continue
		}
		out = append(out, a)
	}
	return out
}

func allShortBools(fs *flag.FlagSet, letters string) bool {
	for _, c := range letters {
		f := fs.Lookup(string(c))
		if f == nil {
			return false
		}
		b, ok := f.Value.(interface{ IsBoolFlag() bool })
		if !ok || !b.IsBoolFlag() {
			return false
		}
	}
	return true
}

// sizeFlag is a byte count: a plain integer or one with a K, M, G or T
// suffix (powers of 1024; "KiB", "MB" and the like are read the same way).
type sizeFlag int64

func (s *sizeFlag) String() string { return formatSize(int64(*s)) }

func (s *sizeFlag) Set(v string) error {
	n, err := parseSize(v)
	if err != nil {
		return err
	}
	*s = sizeFlag(n)
	return nil
}

// parseSize reads a whole byte count (internal/size).
func parseSize(v string) (int64, error) { return size.Parse(v, false) }

func formatSize(n int64) string {
	for _, u := range []struct {
		suffix string
		shift  uint
	}{{"TiB", 40}, {"GiB", 30}, {"MiB", 20}, {"KiB", 10}} {
		if n != 0 && n%(1<<u.shift) == 0 {
			return strconv.FormatInt(n>>u.shift, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}

// multiFlag collects a repeatable string flag (--include A --include B).
type multiFlag []string

func (m *multiFlag) String() string { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error {
	*m = append(*m, v)
	return nil
}

// clientFlags are the flags every client verb shares.
type clientFlags struct {
	server    string
	token     string
	tokenFile string
	state     string
	sandbox   string
	json      bool
}

// add registers --server, --token, --token-file, --state and (withJSON)
// --json on fs. Defaults come from SANDFS_URL, SANDFS_TOKEN and
// SANDFS_STATE.
func (c *clientFlags) add(fs *flag.FlagSet, getenv func(string) string, withJSON bool) {
	def := getenv("SANDFS_URL")
	if def == "" {
		def = defaultServer
	}
	fs.StringVar(&c.server, "server", def, "daemon `URL`, or unix:/path.sock (env SANDFS_URL)")
	fs.StringVar(&c.token, "token", "", "bearer `TOKEN` (default: env SANDFS_TOKEN, else the daemon's token file)")
	fs.StringVar(&c.tokenFile, "token-file", "", "read the bearer token from `PATH`")
	fs.StringVar(&c.state, "state", "", "the daemon's state directory `STATE`, whose token file a client of a loopback or unix-socket daemon reads when given no token (env SANDFS_STATE; default $XDG_STATE_HOME/sandfs, else ~/.local/state/sandfs)")
	sb := getenv("SANDFS_SANDBOX")
	if sb == "" {
		sb = "default"
	}
	fs.StringVar(&c.sandbox, "sandbox", sb, "the sandbox `NAME` (env SANDFS_SANDBOX; a name other than default uses the named family, /v1/sandboxes/NAME/fs/*)")
	if withJSON {
		fs.BoolVar(&c.json, "json", false, "print the daemon's JSON answer")
	}
}

// named reports whether the verbs are to use the named family: a sandbox
// other than default was asked for.
func (c *clientFlags) named() bool { return c.sandbox != "default" }

// fsRoute is the named family's route rest ("/list") of the sandbox asked
// for ("default" too: that family serves every sandbox).
func (c *clientFlags) fsRoute(rest string) string { return sandboxRoute(c.sandbox, "/fs"+rest) }

// defaultOnly refuses a verb that only the default sandbox's routes serve
// when --sandbox names another one.
func (c *clientFlags) defaultOnly(verb string) error {
	if c.named() {
		return usagef("%s has no route in the named family (/v1/sandboxes/NAME/fs/*): it serves the default sandbox only; drop --sandbox %s", verb, c.sandbox)
	}
	return nil
}

// client builds the HTTP client the flags describe. The token is --token,
// else --token-file, else SANDFS_TOKEN, else the token file of the state
// directory, which is sent only to a daemon on this machine (loopback or
// a unix socket): it is the local daemon's, and no remote server is to see
// it. A token file that is missing, not ours or open to others is passed
// over without a word; the daemon's 401 then says what to do.
func (c *clientFlags) client(getenv func(string) string) (*client, error) {
	tok := c.token
	if tok == "" && c.tokenFile != "" {
		t, _, err := readTokenFile(c.tokenFile)
		if err != nil {
			return nil, fmt.Errorf("--token-file: %w", err)
		}
		tok = t
	}
	if tok == "" {
		tok = getenv("SANDFS_TOKEN")
	}
	cl, err := newClient(c.server, tok)
	if err != nil || tok != "" || !cl.local {
		return cl, err
	}
	if dir, err := statedir.Default(c.state, getenv); err == nil {
		if t, err := readTokenAt(unix.AT_FDCWD, filepath.Join(dir, tokenFileName)); err == nil {
			cl.token = t
		}
	}
	return cl, nil
}
