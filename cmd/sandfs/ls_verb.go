package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/url"
	"sandfs/api"
	"sort"
	"strconv"
	"strings"
	"time"
)

// ls and stat read the named family's list and stat (api.md §5), which
// every sandbox has, "default" included: they tell symlinks from files,
// carry the mode, and list a file as itself, as ls(1) does.

var lsCommand = &command{
	name:     "ls",
	short:    "list a directory",
	synopsis: "ls [-l] [-a] [--json] [--sandbox NAME] [PATH]",
	about: `List the directory PATH (GET /v1/sandboxes/NAME/fs/list), one name a line,
sorted by name; a file lists as itself. Names starting with "." are shown
with -a only. -l is the long format: mode (l for a symlink, d for a
directory), size in bytes, modification time (local, to the second), name,
and for a symlink "-> TARGET".
Combined short flags work (-la). PATH defaults to "/". --json prints the
daemon's listing {path, entries, count}.`,
	setup: func(fs *flag.FlagSet, e *env) func(context.Context, []string) error {
		var cf clientFlags
		cf.add(fs, e.getenv, true)
		long := fs.Bool("l", false, "long format: mode, size, modification time, name")
		all := fs.Bool("a", false, "show names starting with \".\"")
		return cf.run(e, nargs{0, 1, "ls takes at most one PATH"}, func(ctx context.Context, c *client, args []string) error {
			q := url.Values{}
			if len(args) == 1 {
				q.Set("path", args[0])
			}
			var l api.List
			return cf.callAndPrint(ctx, c, e.stdout, request{method: "GET", route: cf.fsRoute("/list"), query: q}, &l, func([]byte) error {
				self := len(l.Entries) == 1 && l.Entries[0].Path == l.Path
				if self && len(args) == 1 {
					l.Entries[0].Name = args[0] // ls FILE prints FILE as typed
				}
				shown := l.Entries[:0]
				for _, en := range l.Entries {
					if *all || self || !strings.HasPrefix(en.Name, ".") {
						shown = append(shown, en)
					}
				}
				sort.Slice(shown, func(i, j int) bool { return shown[i].Name < shown[j].Name })
				if err := printEntries(e.stdout, shown, *long); err != nil {
					return err
				}
				if l.Truncated {
					fmt.Fprintf(e.stderr, "sandfs: only the first %d entries were listed\n", len(l.Entries))
				}
				return nil
			})
		})
	},
}

// printEntries prints one entry a line: the name alone, or (long) mode,
// size, time and name. The name is the last column, so no padding depends
// on how wide a name is on the screen (wide characters, combining marks):
// the columns before it are ASCII, sizes right-aligned.
func printEntries(w io.Writer, entries []api.Entry, long bool) error {
	width := 0
	for _, en := range entries {
		width = max(width, len(strconv.FormatInt(en.Size, 10)))
	}
	for _, en := range entries {
		var err error
		if long {
			link := ""
			if en.Type == "symlink" {
				link = " -> " + printable(en.Target)
			}
			_, err = fmt.Fprintf(w, "%s %*d %s %s%s\n", modeString(en.Type, en.Mode), width, en.Size, localTime(en.ModTime), printable(en.Name), link)
		} else {
			_, err = fmt.Fprintln(w, printable(en.Name))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// modeString is ls -l's "drwxr-xr-x" from a type and an octal mode
// ("0755"; setuid, setgid and sticky shown as s, s and t).
func modeString(typ, octal string) string {
	m, err := strconv.ParseUint(octal, 8, 32)
	if err != nil {
		return "?---------"
	}
	b := []byte("-rwxrwxrwx")
	switch typ {
	case "directory":
		b[0] = 'd'
	case "symlink":
		b[0] = 'l'
	}
	for i := 0; i < 9; i++ {
		if m&(1<<uint(8-i)) == 0 {
			b[i+1] = '-'
		}
	}
	special := func(bit uint64, at int, set, unset byte) {
		if m&bit != 0 {
			if b[at] == '-' {
				b[at] = unset
			} else {
				b[at] = set
			}
		}
	}
	special(0o4000, 3, 's', 'S')
	special(0o2000, 6, 's', 'S')
	special(0o1000, 9, 't', 'T')
	return string(b)
}

// localTime is an RFC 3339 time as ls --full-time shows it, in local time,
// to the second ("2026-12-01 15:04:05"); what does not parse is kept.
func localTime(s string) string {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return s
	}
	return t.Local().Format("2006-01-02 15:04:05")
}

var statCommand = &command{
	name:     "stat",
	short:    "describe a file or directory",
	synopsis: "stat [--json] [--sandbox NAME] PATH",
	about: `Describe PATH, not following a symlink (GET /v1/sandboxes/NAME/fs/stat):
its API path, type (file, directory or symlink), size, mode and
modification time (local, to the second), one "key: value" a line.`,
	setup: func(fs *flag.FlagSet, e *env) func(context.Context, []string) error {
		var cf clientFlags
		cf.add(fs, e.getenv, true)
		return cf.run(e, nargs{1, 1, "stat takes one PATH"}, func(ctx context.Context, c *client, args []string) error {
			var st api.Entry
			return cf.callAndPrint(ctx, c, e.stdout, request{method: "GET", route: cf.fsRoute("/stat"), query: pathQuery(args[0])}, &st, func([]byte) error {
				link := ""
				if st.Type == "symlink" {
					link = "target: " + printable(st.Target) + "\n"
				}
				_, err := fmt.Fprintf(e.stdout, "path: %s\ntype: %s\n%ssize: %d\nmode: %s (%s)\nmodified: %s\n",
					printable(st.Path), st.Type, link, st.Size, st.Mode, modeString(st.Type, st.Mode), localTime(st.ModTime))
				return err
			})
		})
	},
}
