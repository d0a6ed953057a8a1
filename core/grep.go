package core

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"regexp/syntax"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"sandfs/core/pathmatch"
)

// OpGrep names grep failures.
const OpGrep = "grep"

// GrepDefaultMaxResults and GrepDefaultMaxFileSize are the limits of API.md
// §1: 500 matches, files over 1 MiB skipped.
const (
	GrepDefaultMaxResults  = 500
	GrepDefaultMaxFileSize = 1 << 20
	// grepMaxLine caps the bytes of one reported line (a minified file can
	// have a megabyte on one line); longer lines are cut.
	grepMaxLine = 64 << 10
	// grepBinaryPeek is how much of a file is looked at for a NUL byte.
	grepBinaryPeek = 8 << 10
	// grepBigFile: files larger than this are searched one at a time, so
	// the workers together never hold more than workers×grepBigFile plus
	// one max_file_size of file data.
	grepBigFile = 8 << 20
	// grepChunk is how much of a file one line search scans between two
	// looks at the request's context (the window ends at a line end).
	grepChunk = 64 << 10
)

// GrepOptions shape a Grep. The zero value searches recursively for a regular
// expression with the default limits and excludes.
type GrepOptions struct {
	Pattern         string
	Include         []string // pathmatch.BaseOrPath globs: the file name, or the relative path when they hold "/"
	Exclude         []string // nil: pathmatch.DefaultExcludes; empty: none
	Type            string   // ripgrep type alias ("go", "py", …); "" none
	CaseInsensitive bool
	FixedStrings    bool
	Multiline       bool // "." matches newlines, matches may span lines
	ContextBefore   int
	ContextAfter    int
	MaxResults      int   // 0: GrepDefaultMaxResults
	Offset          int   // matches skipped before the first one returned
	MaxFileSize     int64 // 0: GrepDefaultMaxFileSize; < 0: no limit
	NoRecurse       bool  // only the files directly in the directory
	// OneFile makes p name one regular file (a directory is EISDIR), which
	// is searched whatever its content; one over MaxFileSize is EFBIG.
	OneFile bool
}

// GrepMatch is one matching line.
type GrepMatch struct {
	File   string // API path
	Line   int    // 1-based
	Text   string // the line (the lines a multiline match spans), no newline
	Before []string
	After  []string
}

// GrepResult reports a Grep. Matches are in path order, then line order;
// FilesSearched and FilesMatched count the files up to where the walk
// stopped.
type GrepResult struct {
	Matches       []GrepMatch
	FilesSearched int
	FilesMatched  int
	Truncated     bool // more matches existed past Offset+MaxResults
}

// PatternError is a pattern that does not compile, or an unknown type alias:
// the request's fault, not the filesystem's.
type PatternError struct {
	Pattern string
	Err     error
}

func (e *PatternError) Error() string {
	return "invalid pattern " + quote(e.Pattern) + ": " + e.Err.Error()
}
func (e *PatternError) Unwrap() error { return e.Err }

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
func GrepTypes() []string {
	out := make([]string, 0, len(grepTypes))
	for k := range grepTypes {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// matcher finds the matching lines of one file's bytes.
type matcher struct {
	re        *regexp.Regexp
	need      []byte // a literal every match contains (regex only), or nil
	lit       []byte // non-nil: a plain substring search (bytes.Index)
	multiline bool
	insts     int // size of re's program (pattern.go); 0 for lit
}

func newMatcher(o GrepOptions) (*matcher, error) {
	if o.Pattern == "" {
		return nil, &PatternError{Pattern: o.Pattern, Err: errors.New("pattern is empty")}
	}
	m := &matcher{multiline: o.Multiline}
	lit := o.FixedStrings || regexp.QuoteMeta(o.Pattern) == o.Pattern
	if lit && !o.CaseInsensitive && !strings.Contains(o.Pattern, "\n") {
		m.lit = []byte(o.Pattern)
		return m, nil
	}
	expr := o.Pattern
	if o.FixedStrings {
		expr = regexp.QuoteMeta(expr)
	}
	flags := "m" // ^ and $ at line boundaries, as rg
	if o.CaseInsensitive {
		flags += "i"
	}
	if o.Multiline {
		flags += "s"
	}
	re, insts, err := compileRegexp(o.Pattern, "(?"+flags+")"+expr, !o.Multiline)
	if err != nil {
		return nil, err
	}
	m.re, m.insts = re, insts
	m.need = requiredLiteral(re.String())
	return m, nil
}

// requiredLiteral is the longest case-sensitive literal every match of expr
// must contain (a piece of a top-level concatenation), or nil. A file
// without it cannot match, so it is skipped with one bytes.Index.
func requiredLiteral(expr string) []byte {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return nil
	}
	re = re.Simplify()
	for re.Op == syntax.OpCapture && len(re.Sub) == 1 {
		re = re.Sub[0]
	}
	var subs []*syntax.Regexp
	switch re.Op {
	case syntax.OpConcat:
		subs = re.Sub
	case syntax.OpLiteral:
		subs = []*syntax.Regexp{re}
	}
	var best []byte
	for _, sub := range subs {
		if sub.Op == syntax.OpLiteral && sub.Flags&syntax.FoldCase == 0 {
			if lit := []byte(string(sub.Rune)); len(lit) > len(best) {
				best = lit
			}
		}
	}
	return best
}

// find returns the next match in b at or after from: its start and end, or
// -1.
func (m *matcher) find(b []byte, from int) (int, int) {
	if m.lit != nil {
		i := bytes.Index(b[from:], m.lit)
		if i < 0 {
			return -1, -1
		}
		return from + i, from + i + len(m.lit)
	}
	loc := m.re.FindIndex(b[from:])
	if loc == nil {
		return -1, -1
	}
	return from + loc[0], from + loc[1]
}

// maxInput is the most bytes of one file this matcher may search
// (MaxInputFor its program size), or -1 for no bound (a substring search).
func (m *matcher) maxInput() int64 {
	if m.re == nil {
		return -1
	}
	return MaxInputFor(m.insts)
}

// search appends the matches of file data b (named file) to out, at most
// limit of them, and reports whether it stopped at the limit. It returns
// ctx's error, with the matches so far, when ctx ends: a line search looks
// at ctx every grepChunk bytes, a multiline one before every match.
func (m *matcher) search(ctx context.Context, file string, b []byte, before, after, limit int, out []GrepMatch) ([]GrepMatch, bool, error) {
	if len(m.need) > 0 && !bytes.Contains(b, m.need) {
		return out, false, nil
	}
	pos := 0    // search resumes here
	line := 1   // line number at lineAt
	lineAt := 0 // offset of the start of line `line`
	for pos <= len(b) {
		if len(out) >= limit {
			return out, true, nil
		}
		if err := ctx.Err(); err != nil {
			return out, false, err
		}
		// A line search scans a window that ends at a line end: no match
		// crosses a line (compileRegexp), so no match is cut.
		end := len(b)
		if !m.multiline {
			end = lineEnd(b, min(pos+grepChunk, len(b)))
		}
		s, e := m.find(b[:end], pos)
		if s < 0 {
			if end == len(b) {
				break
			}
			pos = end + 1
			continue
		}
		if e == s && s == len(b) && s > 0 && b[s-1] == '\n' {
			break // an empty match after the final newline is no line
		}
		ls := bytes.LastIndexByte(b[:s], '\n') + 1
		le := lineEnd(b, s)
		if m.multiline && e > le {
			le = lineEnd(b, max(e-1, s))
		}
		line += bytes.Count(b[lineAt:ls], []byte{'\n'})
		lineAt = ls
		gm := GrepMatch{File: file, Line: line, Text: lineText(b[ls:le])}
		if before > 0 {
			gm.Before = linesBefore(b, ls, before)
		}
		if after > 0 {
			gm.After = linesAfter(b, le, after)
		}
		out = append(out, gm)
		pos = le + 1
	}
	return out, false, nil
}

func lineEnd(b []byte, i int) int {
	if j := bytes.IndexByte(b[i:], '\n'); j >= 0 {
		return i + j
	}
	return len(b)
}

func lineText(l []byte) string {
	l = bytes.TrimSuffix(l, []byte{'\r'})
	if len(l) > grepMaxLine {
		l = l[:grepMaxLine]
	}
	return string(l)
}

// linesBefore is up to n lines ending just before offset ls (a line start).
func linesBefore(b []byte, ls, n int) []string {
	var out []string
	end := ls - 1 // the newline ending the line before
	for len(out) < n && end >= 0 {
		start := bytes.LastIndexByte(b[:end], '\n') + 1
		out = append(out, lineText(b[start:end]))
		end = start - 1
	}
	slices.Reverse(out)
	return out
}

// linesAfter is up to n lines starting after offset le (a line end).
func linesAfter(b []byte, le, n int) []string {
	var out []string
	start := le + 1
	for len(out) < n && start < len(b) {
		end := lineEnd(b, start)
		out = append(out, lineText(b[start:end]))
		start = end + 1
	}
	return out
}

// grepJob is one file to search, in walk order.
type grepJob struct {
	idx    int
	path   string  // API path
	follow bool    // the path named in the request: a final symlink is followed
	dir    *dirRef // non-nil: open name relative to this directory
	name   string
}

// dirRef is a directory fd shared by the walk and the workers searching its
// files; the last one done closes it.
type dirRef struct {
	fd   int
	refs atomic.Int32
}

func (d *dirRef) release() {
	if d.refs.Add(-1) == 0 {
		unix.Close(d.fd)
	}
}

type grepOutcome struct {
	idx      int
	matches  []GrepMatch
	searched bool
	err      error
}

// grepFilesRead counts the files grepFile has opened to search, for the
// tests that check an abandoned grep stops part way.
var grepFilesRead atomic.Int64

var grepBufPool = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

// Grep searches the file or directory at p for o.Pattern, the way ripgrep
// does: binary files (a NUL in the first 8 KiB) and files over
// o.MaxFileSize are skipped; in a directory, names matching the excludes
// are pruned, symlinks are not followed, and only regular files matching
// the include globs and the type are searched. Files are searched in
// parallel by a bounded set of workers, but the answer is deterministic:
// files in path order (names sorted byte-wise at each level), lines in order.
// A file named directly is searched whatever the globs say.
func (s *Sandbox) Grep(ctx context.Context, p string, o GrepOptions) (GrepResult, error) {
	ap, err := s.Clean(p)
	if err != nil {
		return GrepResult{}, err
	}
	m, err := newMatcher(o)
	if err != nil {
		return GrepResult{}, err
	}
	var typeGlobs []string
	if o.Type != "" {
		for _, t := range strings.Split(o.Type, ",") {
			g, ok := grepTypes[strings.TrimSpace(t)]
			if !ok {
				return GrepResult{}, &PatternError{Pattern: o.Type, Err: errors.New("unknown file type; known types: " + strings.Join(GrepTypes(), ", "))}
			}
			typeGlobs = append(typeGlobs, g...)
		}
	}
	if o.MaxResults <= 0 {
		o.MaxResults = GrepDefaultMaxResults
	}
	if o.Offset < 0 {
		o.Offset = 0
	}
	if o.MaxFileSize == 0 {
		o.MaxFileSize = GrepDefaultMaxFileSize
	}
	excludes := o.Exclude
	if excludes == nil {
		excludes = pathmatch.DefaultExcludes
	}
	for _, list := range [][]string{o.Include, excludes} {
		for _, g := range list {
			if err := CheckGlob(g); err != nil {
				return GrepResult{}, err
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
		return GrepResult{}, pathErr(OpGrep, ap, err)
	}
	if o.OneFile {
		switch {
		case info.IsDir():
			return GrepResult{}, pathErr(OpGrep, ap, unix.EISDIR)
		case !info.IsRegular():
			return GrepResult{}, pathErr(OpGrep, ap, unix.EINVAL)
		case o.MaxFileSize > 0 && info.Size > o.MaxFileSize:
			return GrepResult{}, pathErr(OpGrep, ap, unix.EFBIG)
		case maxFile >= 0 && info.Size > maxFile:
			return GrepResult{}, &PatternError{Pattern: o.Pattern, Err: fmt.Errorf("%w: a pattern of %d instructions may search at most %d bytes of one file, and %s has %d",
				ErrPatternTooComplex, m.insts, maxFile, ap, info.Size)}
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
		fd, err := s.openat(ap, unix.O_RDONLY|unix.O_DIRECTORY, 0)
		if err != nil {
			walkErr = pathErr(OpGrep, ap, err)
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
				ms, searched, err := s.grepFile(ctx, j, m, &o, need, &big)
				outcomes <- grepOutcome{idx: j.idx, matches: ms, searched: searched, err: err}
			}
		}()
	}
	go func() { wg.Wait(); close(outcomes) }()

	// Collect in walk order; stop the walk once `need` matches are known in
	// the prefix of files done.
	var res GrepResult
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
		return GrepResult{}, walkErr
	}
	if err := parent.Err(); err != nil {
		return GrepResult{}, err
	}
	return res, nil
}

// grepFile searches one file. It reports whether the file was searched (not
// skipped as binary, too large or unreadable).
func (s *Sandbox) grepFile(ctx context.Context, j grepJob, m *matcher, o *GrepOptions, limit int, big *sync.Mutex) ([]GrepMatch, bool, error) {
	ap := j.path
	flags := unix.O_RDONLY | unix.O_NONBLOCK | unix.O_NOCTTY
	if !j.follow {
		flags |= unix.O_NOFOLLOW
	}
	var fd int
	var err error
	if j.dir != nil {
		fd, err = unix.Openat(j.dir.fd, j.name, flags|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		j.dir.release()
	} else {
		fd, err = s.openat(ap, flags, 0)
	}
	if err != nil {
		return nil, false, nil // gone or unreadable: skipped, as rg does
	}
	grepFilesRead.Add(1)
	f := os.NewFile(uintptr(fd), ap)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, false, nil
	}
	if o.MaxFileSize > 0 && st.Size > o.MaxFileSize {
		return nil, false, nil
	}
	if st.Size > grepBigFile {
		big.Lock()
		defer big.Unlock()
	}
	bp := grepBufPool.Get().(*[]byte)
	defer func() {
		if cap(*bp) <= grepBigFile {
			grepBufPool.Put(bp)
		}
	}()
	want := int(st.Size) + 1
	if cap(*bp) < want {
		*bp = make([]byte, 0, want)
	}
	buf := (*bp)[:0]
	// Read to EOF; a file that grew past the limit while we read is skipped.
	for {
		if len(buf) == cap(buf) {
			if o.MaxFileSize > 0 && int64(len(buf)) > o.MaxFileSize {
				return nil, false, nil
			}
			buf = slices.Grow(buf, 64<<10)
			*bp = buf
		}
		if err := ctx.Err(); err != nil {
			return nil, false, err
		}
		n, err := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF || (n == 0 && err == nil) {
			break
		}
		if err != nil {
			return nil, false, nil
		}
	}
	if o.MaxFileSize > 0 && int64(len(buf)) > o.MaxFileSize {
		return nil, false, nil
	}
	if !o.OneFile && bytes.IndexByte(buf[:min(len(buf), grepBinaryPeek)], 0) >= 0 {
		return nil, false, nil
	}
	ms, _, err := m.search(ctx, ap, buf, o.ContextBefore, o.ContextAfter, limit, nil)
	if err != nil {
		return nil, false, err
	}
	return ms, true, nil
}

// grepWalk walks a directory tree in sorted order, handing out files.
type grepWalk struct {
	s        *Sandbox
	ctx      context.Context
	jobs     chan<- grepJob
	root     string
	o        *GrepOptions
	include  []string
	types    []string
	excludes []string
	n        int
}

// dir walks the directory open at fd (owned: dir closes it), API path ap,
// relPath from the grep root. Entries are read from the fd and every
// subdirectory and file is opened relative to it with O_NOFOLLOW, so the
// walk never leaves the root and a name swapped for a symlink mid-walk is
// refused, never followed.
func (w *grepWalk) dir(fd int, ap, relPath string) error {
	d := &dirRef{fd: fd}
	d.refs.Store(1)
	defer d.release()
	dup, err := unix.Dup(fd)
	if err != nil {
		return pathErr(OpGrep, ap, err)
	}
	df := os.NewFile(uintptr(dup), ap)
	ents, err := df.ReadDir(-1)
	df.Close()
	if err != nil && relPath == "" {
		return pathErr(OpGrep, ap, err)
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
	for _, e := range ents {
		if err := w.ctx.Err(); err != nil {
			return err
		}
		name := e.Name()
		if unreportable(w.ctx, name) {
			continue // names.go: not reported, not descended
		}
		rp := name
		if relPath != "" {
			rp = relPath + "/" + name
		}
		if pathmatch.BaseOrPath(rp, w.excludes) {
			continue
		}
		child := join(ap, name)
		switch t := e.Type(); {
		case t.IsDir():
			if w.o.NoRecurse {
				continue
			}
			sub, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != nil {
				continue // vanished, swapped or unreadable: skipped
			}
			if err := w.dir(sub, child, rp); err != nil {
				return err
			}
		case t.IsRegular():
			if len(w.include) > 0 && !pathmatch.BaseOrPath(rp, w.include) {
				continue
			}
			if len(w.types) > 0 && !pathmatch.BaseOrPath(rp, w.types) {
				continue
			}
			d.refs.Add(1)
			select {
			case w.jobs <- grepJob{idx: w.n, path: child, dir: d, name: name}:
				w.n++
			case <-w.ctx.Done():
				d.release()
				return w.ctx.Err()
			}
		}
	}
	return nil
}
