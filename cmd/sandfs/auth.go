package main

import (
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"sandfs/internal/statedir"
	"strings"
)

// The daemon's token, by precedence (serve -h; README, "The daemon"):
//
//	--no-auth            no token: every client that reaches --listen is the
//	                     daemon's user. Refused beyond loopback unless
//	                     --insecure-no-token is given too.
//	--insecure-no-token  alone, as before: no token even beyond loopback
//	                     (a token given another way still wins, as before).
//	--token T            works, with a warning: argv is world-readable.
//	--token-file PATH    the token is the file's content.
//	SANDFS_TOKEN         the environment.
//	(none)               STATE/token of the state directory, made at the
//	                     first start (256 random bits) and kept.

// authFlags are the serve flags that choose the token, kept together.
type authFlags struct {
	token           string // --token
	tokenFile       string // --token-file
	state           string // --state
	noAuth          bool   // --no-auth
	insecureNoToken bool   // --insecure-no-token: no token even beyond loopback
}

func (a *authFlags) add(fs *flag.FlagSet) {
	fs.StringVar(&a.token, "token", "", "bearer `TOKEN` every route but health needs (on the command line until the daemon overwrites it there, at start: prefer --token-file or SANDFS_TOKEN)")
	fs.StringVar(&a.tokenFile, "token-file", "", "read the bearer token from `PATH`")
	fs.StringVar(&a.state, "state", "", "state directory `STATE` (env SANDFS_STATE; default $XDG_STATE_HOME/sandfs, else ~/.local/state/sandfs): without another token the daemon uses STATE/token, made 0600 at the first start and kept")
	fs.BoolVar(&a.noAuth, "no-auth", false, "serve without a token: every client that reaches --listen may read and write the sandboxes (loopback and unix sockets only, unless --insecure-no-token)")
	fs.BoolVar(&a.insecureNoToken, "insecure-no-token", false, "serve without a token even on a non-loopback address (anyone who reaches it may read and write the sandboxes)")
}

// tokenSource says where the daemon's token came from.
type tokenSource int

const (
	tokenNone  tokenSource = iota // --no-auth
	tokenGiven                    // --token, --token-file, SANDFS_TOKEN
	tokenState                    // DIR/token of the state directory
)

// daemonAuth is the token the daemon serves with, and where it came from.
type daemonAuth struct {
	token     string
	source    tokenSource
	tokenFile string // the state token's path (tokenState)
	state     string // the state directory opened and checked for the token (tokenState), else ""
}

// noToken reports whether the flags ask for no token at all. The command
// line is checked here, before anything is opened: --no-auth with a token
// is a contradiction.
func (a *authFlags) noToken(getenv func(string) string) (bool, error) {
	given := a.token != "" || a.tokenFile != ""
	if a.token != "" && a.tokenFile != "" {
		return false, usagef("--token and --token-file both give a token; give one")
	}
	if a.noAuth && given {
		return false, usagef("--no-auth and a token (--token or --token-file) contradict each other")
	}
	if a.noAuth {
		return true, nil
	}
	// --insecure-no-token keeps its old sense: with no token given, none.
	return a.insecureNoToken && !given && getenv("SANDFS_TOKEN") == "", nil
}

// checkListen refuses to serve without a token beyond loopback unless
// --insecure-no-token says so.
func (a *authFlags) checkListen(noToken bool, where string, local bool) error {
	if noToken && !local && !a.insecureNoToken {
		return errNoToken(where)
	}
	return nil
}

// resolve finds the token as the table above says. roots are the served
// host directories (the state directory must lie outside them). The state
// directory is opened only when its token is the one used.
func (a *authFlags) resolve(getenv func(string) string, roots []string, log *slog.Logger) (daemonAuth, error) {
	noTok, err := a.noToken(getenv)
	if err != nil {
		return daemonAuth{}, err
	}
	switch {
	case noTok:
		if getenv("SANDFS_TOKEN") != "" {
			log.Warn("SANDFS_TOKEN is set but --no-auth says to serve without a token; ignoring SANDFS_TOKEN")
		}
		return daemonAuth{source: tokenNone}, nil
	case a.token != "":
		log.Warn("--token put the token on the command line, which every local user could read (ps, /proc/PID/cmdline) until the daemon overwrote it there; " +
			"give it with --token-file or SANDFS_TOKEN instead")
		tok := strings.Clone(a.token) // argv.go: the flag's value shares the bytes overwritten
		scrubArgv(tok)
		return daemonAuth{token: tok, source: tokenGiven}, nil
	case a.tokenFile != "":
		tok, loose, err := readTokenFile(a.tokenFile)
		if err != nil {
			return daemonAuth{}, fmt.Errorf("--token-file: %w", err)
		}
		if loose {
			log.Warn("the token file may be read by other users; chmod 600 it", "token_file", a.tokenFile)
		}
		return daemonAuth{token: tok, source: tokenGiven}, nil
	case getenv("SANDFS_TOKEN") != "":
		return daemonAuth{token: getenv("SANDFS_TOKEN"), source: tokenGiven}, nil
	}
	dir, err := statedir.Default(a.state, getenv)
	if err != nil {
		return daemonAuth{}, err
	}
	sd, tightened, err := openStateDir(dir, roots)
	if err != nil {
		return daemonAuth{}, err
	}
	defer sd.Close()
	if tightened {
		log.Warn("the state directory was open to other users; made it 0700", "state", dir)
	}
	tok, created, err := sd.token()
	if err != nil {
		return daemonAuth{}, err
	}
	if created {
		log.Info("made a new API token", "token_file", sd.tokenPath())
	}
	return daemonAuth{token: tok, source: tokenState, tokenFile: sd.tokenPath(), state: dir}, nil
}

// consoleURL is the web console's address on the listener l, with the token
// in the fragment when the daemon made it (as Jupyter prints its URL): a
// fragment never reaches a server, a proxy log or a Referer, and the
// console moves it to sessionStorage and out of the address bar. A token
// the user gave is theirs to paste; it is not written to the log. A unix
// socket has no console URL ("").
func consoleURL(l net.Addr, a daemonAuth) string {
	tcp, ok := l.(*net.TCPAddr)
	if !ok {
		return ""
	}
	host := "127.0.0.1" // for 0.0.0.0 and [::], which take IPv4 too
	if !tcp.IP.IsUnspecified() {
		host = tcp.IP.String()
	}
	u := url.URL{Scheme: "http", Host: net.JoinHostPort(host, fmt.Sprint(tcp.Port)), Path: "/ui/"}
	if a.source == tokenState {
		u.Fragment = "token=" + a.token
	}
	return u.String()
}

// logConsole tells where the console is and how the token is had.
func logConsole(log *slog.Logger, l net.Addr, a daemonAuth) {
	u := consoleURL(l, a)
	switch {
	case u == "" && a.source == tokenState:
		log.Info("clients of this user read the token from the token file", "token_file", a.tokenFile)
	case u == "":
	case a.source == tokenState:
		log.Info("web console: "+u, "url", u, "token_file", a.tokenFile)
	case a.source == tokenGiven:
		log.Info("web console (it asks for the token): "+u, "url", u)
	default:
		log.Info("web console: "+u, "url", u)
	}
}

// errNoToken refuses to serve beyond loopback without a token.
func errNoToken(where string) error {
	return fmt.Errorf("refusing to listen on %s without a token: anyone who reaches it could read and write the sandbox; "+
		"drop --no-auth (the daemon then makes a token), give --token-file or SANDFS_TOKEN, listen on loopback or a unix socket, "+
		"or add --insecure-no-token", where)
}
