package grep

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"sandfs/core"
	"sandfs/core/pathmatch"
)

// Op names grep failures.
const Op = "grep"

// DefaultMaxResults and DefaultMaxFileSize are the limits of api.md
// §1: 500 matches, files over 1 MiB skipped.
const (
	DefaultMaxResults  = 500
	DefaultMaxFileSize = 1 << 20
)

// The bounds a client's options are held to, by every route that searches
// (the AIO grep routes, the MCP grep tool): at most MaxContext lines of
// context on each side of a match, at most MaxResultsLimit matches.
const (
	MaxContext      = 20
	MaxResultsLimit = 10_000
)

// Options shape a Grep. The zero value searches recursively for a regular
// expression with the default limits and excludes.
type Options struct {
	Pattern         string
	Include         []string // pathmatch.BaseOrPath globs: the file name, or the relative path when they hold "/"
	Exclude         []string // nil: pathmatch.DefaultExcludes; empty: none
	Type            string   // ripgrep type alias ("go", "py", …); "" none
	CaseInsensitive bool
	FixedStrings    bool
	Multiline       bool // "." matches newlines, matches may span lines
	ContextBefore   int
	ContextAfter    int
	MaxResults      int   // 0: DefaultMaxResults
	Offset          int   // matches skipped before the first one returned
	MaxFileSize     int64 // 0: DefaultMaxFileSize; < 0: no limit
	NoRecurse       bool  // only the files directly in the directory
	// OneFile makes p name one regular file (a directory is EISDIR), which
	// is searched whatever its content; one over MaxFileSize is EFBIG.
	OneFile bool
}

// Match is one matching line.
type Match struct {
	File   string // API path
	Line   int    // 1-based
	Text   string // the line (the lines a multiline match spans), no newline
	Before []string
	After  []string
}

// Result reports a Grep. Matches are in path order, then line order;
// FilesSearched and FilesMatched count the files up to where the walk
// stopped.
type Result struct {
	Matches       []Match
	FilesSearched int
	FilesMatched  int
	Truncated     bool // more matches existed past Offset+MaxResults
}

// grepTypes are ripgrep's type aliases (rg --type-list), the common ones.
var grepTypes = map[string][]string{
	"c":          {"*.c", "*.h", "*.H"},
	"cpp":        {"*.C", "*.cc", "*.cpp", "*.cxx", "*.c++", "*.h", "*.hh", "*.hpp", "*.hxx", "*.h++", "*.inl"},
	"cs":         {"*.cs"},
	"css":        {"*.css", "*.scss"},
	"csv":        {"*.csv"},
	"dart":       {"*.dart"},
	"docker":     {"*Dockerfile*", "*.dockerfile"},
	"go":         {"*.go"},
	"h":          {"*.h", "*.hh", "*.hpp"},
	"html":       {"*.htm", "*.html", "*.ejs"},
	"java":       {"*.java", "*.jsp"},
	"js":         {"*.js", "*.jsx", "*.mjs", "*.cjs", "*.vue"},
	"json":       {"*.json", "*.jsonl", "*.geojson"},
	"kotlin":     {"*.kt", "*.kts"},
	"lua":        {"*.lua"},
	"make":       {"Makefile", "makefile", "GNUmakefile", "*.mk", "*.mak"},
	"markdown":   {"*.md", "*.markdown", "*.mdown", "*.mkd", "*.mkdn", "*.mdx"},
	"md":         {"*.md", "*.markdown", "*.mdown", "*.mkd", "*.mkdn", "*.mdx"},
	"php":        {"*.php", "*.php3", "*.php4", "*.php5", "*.phtml"},
	"proto":      {"*.proto"},
	"py":         {"*.py", "*.pyi"},
	"python":     {"*.py", "*.pyi"},
	"rb":         {"*.rb", "*.gemspec", "Gemfile", "Rakefile"},
	"ruby":       {"*.rb", "*.gemspec", "Gemfile", "Rakefile"},
	"rust":       {"*.rs"},
	"scala":      {"*.scala", "*.sbt"},
	"sh":         {"*.sh", "*.bash", "*.zsh", "*.ksh", "*.csh", ".bashrc", ".zshrc", ".profile", ".bash_profile"},
	"sql":        {"*.sql", "*.psql"},
	"swift":      {"*.swift"},
	"toml":       {"*.toml", "Cargo.lock"},
	"ts":         {"*.ts", "*.tsx", "*.cts", "*.mts"},
	"typescript": {"*.ts", "*.tsx", "*.cts", "*.mts"},
	"txt":        {"*.txt"},
	"xml":        {"*.xml", "*.xsd", "*.xsl", "*.xslt", "*.svg"},
	"yaml":       {"*.yaml", "*.yml"},
}

// GrepTypes lists the known type aliases, sorted.
func Types() []string {
	out := make([]string, 0, len(grepTypes))
	for k := range grepTypes {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Run searches the file or directory at p for o.Pattern, the way ripgrep
// does: binary files (a NUL in the first 8 KiB) and files over
// o.MaxFileSize are skipped; in a directory, names matching the excludes
// are pruned, symlinks are not followed, and only regular files matching
// the include globs and the type are searched. Files are searched in
// parallel by a bounded set of workers, but the answer is deterministic:
// files in path order (names sorted byte-wise at each level), lines in order.
// A file named directly is searched whatever the globs say.
func Run(ctx context.Context, s *core.Sandbox, p string, o Options) (Result, error) {
	ap, err := s.Clean(p)
	if err != nil {
		return Result{}, err
	}
	m, err := newMatcher(o)
	if err != nil {
		return Result{}, err
	}
	var typeGlobs []string
	if o.Type != "" {
		for _, t := range strings.Split(o.Type, ",") {
			g, ok := grepTypes[strings.TrimSpace(t)]
			if !ok {
				return Result{}, &pathmatch.PatternError{Pattern: o.Type, Err: errors.New("unknown file type; known types: " + strings.Join(Types(), ", "))}
			}
			typeGlobs = append(typeGlobs, g...)
		}
	}
	if o.MaxResults <= 0 {
		o.MaxResults = DefaultMaxResults
	}
	if o.Offset < 0 {
		o.Offset = 0
	}
	if o.MaxFileSize == 0 {
		o.MaxFileSize = DefaultMaxFileSize
	}
	excludes := o.Exclude
	if excludes == nil {
		excludes = pathmatch.DefaultExcludes
	}
	for _, list := range [][]string{o.Include, excludes} {
		for _, g := range list {
			if err := pathmatch.CheckGlob(g); err != nil {
				return Result{}, err
			}
		}
	}
	// The work bound of the pattern caps the file size too: a tree's
	// larger files are skipped as too large, a file named alone is refused.
	maxFile := o.MaxFileSize
	if w := m.maxInput(); w >= 0 && (maxFile < 0 || w < maxFile) {
		maxFile = w
	}
	need := o.Offset + o.MaxResults + 1 // one past: tells truncated

	info, err := s.Stat(ctx, ap)
	if err != nil {
		return Result{}, core.PathErr(Op, ap, err)
	}
	if o.OneFile {
		switch {
		case info.IsDir():
			return Result{}, core.PathErr(Op, ap, unix.EISDIR)
		case !info.IsRegular():
			return Result{}, core.PathErr(Op, ap, unix.EINVAL)
		case o.MaxFileSize > 0 && info.Size > o.MaxFileSize:
			return Result{}, core.PathErr(Op, ap, unix.EFBIG)
		case maxFile >= 0 && info.Size > maxFile:
			return Result{}, &pathmatch.PatternError{Pattern: o.Pattern, Err: fmt.Errorf("%w: a pattern of %d instructions may search at most %d bytes of one file, and %s has %d",
				pathmatch.ErrPatternTooComplex, m.insts, maxFile, ap, info.Size)}
		}
	}
	o.MaxFileSize = maxFile

	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := make(chan grepJob, 256)
	outcomes := make(chan grepOutcome, 256)
	var walkErr error
	go func() {
		defer close(jobs)
		if !info.IsDir() {
			if info.IsRegular() {
				jobs <- grepJob{idx: 0, path: ap, follow: true}
			}
			return
		}
		w := grepWalk{s: s, ctx: ctx, jobs: jobs, root: ap, o: &o, include: o.Include, types: typeGlobs, excludes: excludes}
		fd, err := s.Root().OpenBeneath(ap, unix.O_RDONLY|unix.O_DIRECTORY, 0)
		if err != nil {
			walkErr = core.PathErr(Op, ap, err)
			return
		}
		walkErr = w.dir(fd, ap, "")
	}()

	workers := min(runtime.GOMAXPROCS(0), 8)
	var big sync.Mutex
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				if ctx.Err() != nil {
					if j.dir != nil {
						j.dir.release()
					}
					outcomes <- grepOutcome{idx: j.idx}
					continue
				}
				ms, searched, err := searchFile(ctx, s, j, m, &o, need, &big)
				outcomes <- grepOutcome{idx: j.idx, matches: ms, searched: searched, err: err}
			}
		}()
	}
	go func() { wg.Wait(); close(outcomes) }()

	// Collect in walk order; stop the walk once `need` matches are known in
	// the prefix of files done.
	var res Result
	pending := map[int]grepOutcome{}
	next, total := 0, 0
	stopped := false
	for oc := range outcomes {
		pending[oc.idx] = oc
		for !stopped {
			cur, ok := pending[next]
			if !ok {
				break
			}
			delete(pending, next)
			next++
			if cur.searched {
				res.FilesSearched++
			}
			if len(cur.matches) > 0 {
				res.FilesMatched++
			}
			for _, gm := range cur.matches {
				total++
				switch {
				case total <= o.Offset:
				case total <= o.Offset+o.MaxResults:
					res.Matches = append(res.Matches, gm)
				default:
					res.Truncated = true
				}
			}
			if total >= need {
				stopped = true
				cancel()
			}
		}
	}
	if !stopped && walkErr != nil && !errors.Is(walkErr, context.Canceled) {
		return Result{}, walkErr
	}
	if err := parent.Err(); err != nil {
		return Result{}, err
	}
	return res, nil
}
