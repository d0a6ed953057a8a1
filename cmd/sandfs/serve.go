package main

import (
	"context"
	"flag"
	"log/slog"
	"net"
	"time"

	"sandfs/core"
	"sandfs/daemon"
)

// serveConfig is what the serve flags say.
type serveConfig struct {
	root             string
	sandboxes        multiFlag // NAME=DIR
	inotifyInstances int       // --inotify-instances: raise the kernel's bound at start (inotify_limit.go)
	listen           string
	auth             authFlags    // --token, --token-file, --state, --no-auth, --insecure-no-token (auth.go)
	history          historyFlags // --no-history, --history-max-* (history.go)
	events           eventsFlags  // --events, --events-host, --replicate, --placement, --advertise, --lease-ttl (events_flags.go)
	workdir          string
	maxJSONBody      sizeFlag
	maxTarBody       sizeFlag
	maxTarEntries    int
	maxTarBytes      sizeFlag
	shutdownTimeout  time.Duration
	headerTimeout    time.Duration // ReadHeaderTimeout: a client has this long to send its headers
	idleTimeout      time.Duration // IdleTimeout: a keep-alive connection with no request is closed after it
	maxHeaderBytes   sizeFlag
	mounts           multiFlag // MNT or NAME=MNT, repeatable: the FUSE mirrors
	sandboxesDir     string    // --sandboxes DIR: the live registry's directory ("" = none)
	mountAll         string    // --mount-all MNTDIR: each sandbox at MNTDIR/NAME ("" = none)
	defaultQuota     quotaFlag // --default-quota: of a sandbox of DIR that keeps none
	fuseDebug        bool
	logEvents        bool
	noPassthrough    bool
	directMount      bool
	fuseURing        bool
	mountCache       time.Duration
	debugListen      string        // loopback ADDR for Go's profiles (debug.go); "" = none
	checkpointEvery  time.Duration // --checkpoint-every: automatic checkpoints (0 = off)
	checkpointKeep   int           // --checkpoint-keep: the scheduled checkpoints kept
	checkpointMax    sizeFlag      // --checkpoint-max-size: each checkpoint store's bound (0: half the state filesystem)
	forkCopy         bool          // --fork-copy: every fork a copy of its checkpoint's tree, never an overlay

	// Browser guard (rest/browser.go).
	allowOrigins multiFlag // --allow-origin ORIGIN: a page that may call the daemon
	allowHosts   multiFlag // --allow-host NAME: a Host accepted beside loopback and localhost
	allowSetid   bool      // API calls may make setuid and setgid files (core/setid.go)

	quotas quotaFlags // --quota [NAME=]SIZE[,ENTRIES] (quota_flags.go)
}

const (
	defaultRoot   = "./sandbox"
	defaultListen = "127.0.0.1:7420"
)

var serveCommand = &command{
	name:     "serve",
	short:    "run the daemon",
	synopsis: "serve [--root DIR] [--sandboxes DIR] [--mount MNT | --mount-all MNTDIR] [--listen ADDR] [--state STATE | --token-file PATH | --no-auth] [--workdir P] [limit flags]",
	about: `Run the daemon: serve the directory DIR as the sandbox "default" over HTTP on
ADDR until SIGINT or SIGTERM, then end the watch streams (each told the
daemon is stopping), finish the requests in flight (up to
--shutdown-timeout) and exit 0; a second signal exits at once (130). DIR is created if missing. ADDR is HOST:PORT
or unix:/path.sock (a stale socket file is replaced, and removed on exit).
Every route but health needs a token, sent as "Authorization: Bearer T".
The token comes from --token-file PATH or SANDFS_TOKEN (or --token, which
every local user can read in ps); without one the daemon uses STATE/token,
STATE being its state directory (--state), made 0600 with 256 random bits
at the first start and kept, and logs the console URL that carries it. The client verbs
of the same user read that file, so "sandfs ls" works with no set-up.
--no-auth serves without a token (every client that reaches ADDR may read
and write DIR); it is refused beyond loopback unless --insecure-no-token
is given too. --sandboxes DIR serves every subdirectory of DIR named by a
DNS label as the sandbox of that name, live (made, removed or renamed in
DIR, or by POST and DELETE /v1/sandboxes); each sandbox, the fixed ones
too, has its own token in STATE/sandboxes/NAME/token, and --mount-all
MNTDIR mounts each at MNTDIR/NAME while it is served. Sizes take K, M, G,
T suffixes (powers of 1024); 0 means the default.`,
	setup: func(fs *flag.FlagSet, e *env) func(context.Context, []string) error {
		cfg := serveConfig{
			maxJSONBody:    64 << 20,
			maxTarBody:     4 << 30,
			maxTarEntries:  core.DefaultLimits.TarEntries,
			maxTarBytes:    sizeFlag(core.DefaultLimits.TarBytes),
			maxHeaderBytes: daemon.DefaultMaxHeaderBytes,
		}
		fs.StringVar(&cfg.root, "root", defaultRoot, "host `DIR` served as the sandbox \"default\" (created if missing)")
		fs.Var(&cfg.sandboxes, "sandbox", "also serve a directory as a named sandbox: `NAME=DIR` (repeatable)")
		fs.StringVar(&cfg.sandboxesDir, "sandboxes", "", "serve every subdirectory of `DIR` named by a DNS label as the sandbox of that name, live: one made appears, one removed disappears; POST and DELETE /v1/sandboxes make and remove them")
		fs.StringVar(&cfg.mountAll, "mount-all", "", "mount each sandbox through FUSE at `MNTDIR`/NAME as it appears (unmounted, and the directory removed, when it goes)")
		fs.Var(&cfg.defaultQuota, "default-quota", "the quota `BYTES[,ENTRIES]` of a sandbox of --sandboxes DIR that was given none (0: no bound)")
		fs.StringVar(&cfg.listen, "listen", defaultListen, "`ADDR` to serve on: HOST:PORT or unix:/path.sock")
		cfg.auth.add(fs)
		cfg.history.add(fs)
		cfg.events.add(fs)
		fs.StringVar(&cfg.workdir, "workdir", "/", "API `PATH` relative request paths are taken against")
		fs.Var(&cfg.maxJSONBody, "max-json-body", "`SIZE` of the largest JSON request body")
		fs.Var(&cfg.maxTarBody, "max-tar-body", "`SIZE` of the largest upload body (a tar of upload-batch, a sandboxd PUT)")
		fs.IntVar(&cfg.maxTarEntries, "max-tar-entries", cfg.maxTarEntries, "most entries (`N`) in one tar upload")
		fs.Var(&cfg.maxTarBytes, "max-tar-bytes", "most bytes (`SIZE`) extracted from one tar upload")
		fs.Var(&cfg.quotas, "quota", "bound the sandbox \"default\" (NAME=… for another) to `[NAME=]SIZE[,ENTRIES]`: bytes of its files and names in its tree, 0 for no bound (repeatable)")
		fs.Var(&cfg.mounts, "mount", "mount the sandbox \"default\" at `MNT` through FUSE (NAME=MNT for another sandbox; repeatable)")
		fs.BoolVar(&cfg.fuseDebug, "fuse-debug", false, "log every FUSE request")
		fs.BoolVar(&cfg.noPassthrough, "no-passthrough", false, "never use FUSE passthrough (every read and write of the mount goes through the daemon)")
		fs.BoolVar(&cfg.directMount, "direct-mount", false, "mount with mount(2) instead of fusermount3 (root only; no fallback)")
		fs.BoolVar(&cfg.fuseURing, "fuse-uring", false, "serve the mounts' requests over FUSE over io_uring where the kernel offers it, over /dev/fuse where not (root; needs kernel 6.14+ and /sys/module/fuse/parameters/enable_uring=Y set by root; costs per mount one thread and 2 entries of ~1 MiB per possible CPU)")
		fs.DurationVar(&cfg.mountCache, "mount-cache", time.Minute, "how long (`DURATION`) the kernel may cache names, attributes and pages of the mount where the kernel watch covers them; the journal invalidates each change before it is told, and 0 makes the kernel ask the daemon at every system call")
		fs.BoolVar(&cfg.logEvents, "log-events", false, "log every journal event (type, path, old_path, origin, pid, uid)")
		fs.StringVar(&cfg.debugListen, "debug-listen", "", "serve Go's runtime profiles (/debug/pprof/) on the loopback `ADDR` (for leak checks; no token)")
		fs.DurationVar(&cfg.headerTimeout, "header-timeout", 10*time.Second, "how long (`DURATION`) a client may take to send a request's headers before its connection is closed")
		fs.DurationVar(&cfg.idleTimeout, "idle-timeout", 120*time.Second, "how long (`DURATION`) an idle keep-alive connection stays open")
		fs.Var(&cfg.maxHeaderBytes, "max-header-bytes", "`SIZE` of the largest request line and headers (431 over it)")
		// Browser guard: which web pages and Host names may reach the daemon.
		fs.Var(&cfg.allowOrigins, "allow-origin", "let pages of `ORIGIN` (scheme://host[:port]) call the daemon; others are refused 403 (repeatable)")
		fs.Var(&cfg.allowHosts, "allow-host", "answer requests whose Host is `NAME` (beside loopback addresses, localhost and the address connected to); others get 421 (repeatable)")
		fs.BoolVar(&cfg.allowSetid, "allow-setid", false, "let API callers make setuid and setgid files (chmod, write modes, kept on replace, preserveAttrs); without it they are refused or dropped, since the daemon's root would own them")
		fs.IntVar(&cfg.inotifyInstances, "inotify-instances", 0, "raise the kernel's bound on inotify instances per user (fs.inotify.max_user_instances, 128 by default) to `N` at start when lower; each sandbox holds one (root only; 0: leave it)")
		fs.DurationVar(&cfg.checkpointEvery, "checkpoint-every", 0, "take a checkpoint of each sandbox every `DURATION` when its tree changed (0: off)")
		fs.IntVar(&cfg.checkpointKeep, "checkpoint-keep", 24, "keep the newest `N` scheduled checkpoints of each sandbox")
		fs.Var(&cfg.checkpointMax, "checkpoint-max-size", "bound each sandbox's checkpoint store to `SIZE` on disk; a checkpoint that could pass it is refused (507) before it copies a byte (default: half the state filesystem)")
		fs.BoolVar(&cfg.forkCopy, "fork-copy", false, "make every fork a copy of its checkpoint's tree (reflinks where the state's filesystem makes them) instead of an overlay mount; a daemon not root, or refused the overlay, copies anyway")
		fs.DurationVar(&cfg.shutdownTimeout, "shutdown-timeout", 10*time.Second, "how long (`DURATION`) a signalled daemon waits for requests in flight before closing their connections (the watch streams end first, at once)")
		return func(ctx context.Context, args []string) error {
			if len(args) > 0 {
				return usagef("serve takes no arguments (got %q)", args[0])
			}
			log := slog.New(slog.NewTextHandler(e.stderr, nil))
			return serve(ctx, cfg, e.getenv, log)
		}
	},
}

// serve runs the daemon until ctx is done.
func serve(ctx context.Context, cfg serveConfig, getenv func(string) string, log *slog.Logger) error {
	if cfg.checkpointEvery < 0 || cfg.checkpointKeep < 1 {
		return usagef("--checkpoint-every must not be negative and --checkpoint-keep must be at least 1")
	}
	if cfg.maxTarEntries < 0 {
		return usagef("--max-tar-entries must not be negative")
	}
	noToken, err := cfg.auth.noToken(getenv)
	if err != nil {
		return err
	}
	if err := cfg.auth.checkListen(noToken, cfg.listen, daemon.LocalAddr(cfg.listen)); err != nil {
		return err
	}
	if err := daemon.CheckAllowed(cfg.allowOrigins, cfg.allowHosts); err != nil {
		return usagef("%v", err) // --allow-origin, --allow-host
	}
	dirs, err := sandboxDirs(cfg.root, cfg.sandboxes)
	if err != nil {
		return err
	}
	if err := checkRootsApart(dirs, cfg.sandboxesDir, cfg.mountAll, cfg.mounts...); err != nil {
		return err
	}
	if err := cfg.quotas.check(dirs); err != nil {
		return err
	}
	if cfg.inotifyInstances < 0 {
		return usagef("--inotify-instances must not be negative")
	}
	if cfg.inotifyInstances > 0 {
		if _, err := raiseInotifyInstances(maxUserInstances, cfg.inotifyInstances, log); err != nil {
			return err
		}
	}
	// The token first: a daemon that cannot have one starts nothing.
	roots := make([]string, 0, len(dirs)+1)
	for _, d := range dirs {
		roots = append(roots, d.dir)
	}
	if cfg.sandboxesDir != "" {
		roots = append(roots, cfg.sandboxesDir)
	}
	auth, err := cfg.auth.resolve(getenv, roots, log)
	if err != nil {
		return err
	}
	keep, err := cfg.history.retention()
	if err != nil {
		return err
	}
	if err := cfg.events.check(cfg.history.off); err != nil {
		return err
	}
	advertise, err := cfg.events.advertiseURL(cfg.listen)
	if err != nil {
		return err
	}
	state, err := sandboxesState(cfg, auth, noToken, getenv, roots, log)
	if err != nil {
		return err
	}
	fixed := make([]daemon.Fixed, len(dirs))
	for i, d := range dirs {
		fixed[i] = daemon.Fixed{Name: d.name, Dir: d.dir, Quota: cfg.quotas.of(d.name)}
	}
	return daemon.Run(ctx, daemon.RunConfig{
		Host: daemon.Config{
			Options: core.Options{
				Workdir:    cfg.workdir,
				Limits:     core.Limits{TarEntries: cfg.maxTarEntries, TarBytes: int64(cfg.maxTarBytes)},
				AllowSetid: cfg.allowSetid,
				Retention:  keep,

				CheckpointMaxSize: int64(cfg.checkpointMax),
				Log:               log,
			},
			State:           state,
			History:         !cfg.history.off,
			Tokens:          !noToken,
			CheckpointEvery: cfg.checkpointEvery,
			CheckpointKeep:  cfg.checkpointKeep,
			LogEvents:       cfg.logEvents,
			MountAll:        cfg.mountAll,
			ForkCopy:        cfg.forkCopy,
			Log:             log,
		},
		Fixed:        fixed,
		SandboxesDir: cfg.sandboxesDir,
		DefaultQuota: core.Quota(cfg.defaultQuota),
		Mounts:       cfg.mounts,
		Mount: daemon.MountConfig{Debug: cfg.fuseDebug, NoPassthrough: cfg.noPassthrough, DirectMount: cfg.directMount,
			Uring: cfg.fuseURing, Cache: cfg.mountCache},
		EventsURL:    cfg.events.url,
		EventsHost:   cfg.events.host,
		ReplicateURL: cfg.events.replicate,
		PlacementURL: cfg.events.placement,
		Advertise:    advertise,
		LeaseTTL:     cfg.events.leaseTTL,
		Listen:       cfg.listen,
		Token:        auth.token,
		DebugListen:  cfg.debugListen,
		REST: daemon.RESTConfig{
			MaxJSONBody:  int64(cfg.maxJSONBody),
			MaxTarBody:   int64(cfg.maxTarBody),
			AllowOrigins: cfg.allowOrigins,
			AllowHosts:   cfg.allowHosts,
		},
		HTTP: daemon.HTTPConfig{
			HeaderTimeout:   cfg.headerTimeout,
			IdleTimeout:     cfg.idleTimeout,
			MaxHeaderBytes:  int(cfg.maxHeaderBytes),
			ShutdownTimeout: cfg.shutdownTimeout,
		},
		CheckListener: func(where string, local bool) error {
			if err := cfg.auth.checkListen(noToken, where, local); err != nil {
				return err
			}
			if noToken && !local {
				log.Warn("no token set and listening beyond loopback: anyone who reaches " + where +
					" can read and write the sandbox; drop --no-auth and --insecure-no-token to have a token")
			}
			return nil
		},
		Serving: func(addr net.Addr) { logConsole(log, addr, auth) },
	})
}
