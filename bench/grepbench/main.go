// Command grepbench measures POST /v2/fs/grep of a running sandfs binary
// against ripgrep (rg --json) on the same tree, best of -runs, for a few
// patterns (a literal, a regex, one that never matches). The tree is
// -tree (default: the Go distribution's src, ~150 MB of source). It prints
// a markdown table; the target (issue #5) is sandfs within 2x of rg.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"

	"time"

	"sandfs/bench/benchd"
)

func main() {
	bin := flag.String("bin", "bin/sandfs", "sandfs binary")
	tree := flag.String("tree", filepath.Join(runtime.GOROOT(), "src"), "directory to search")
	runs := flag.Int("runs", 3, "runs per figure (best kept)")
	flag.Parse()
	if err := run(*bin, *tree, *runs); err != nil {
		fmt.Fprintln(os.Stderr, "grepbench:", err)
		os.Exit(1)
	}
}

func run(bin, tree string, runs int) error {
	base, stop, err := benchd.Start(bin, tree)
	if err != nil {
		return err
	}
	defer stop()
	rg, _ := exec.LookPath("rg")
	fmt.Printf("tree: %s (%s), %d CPUs\n\n", tree, size(tree), runtime.NumCPU())
	fmt.Println("| pattern | sandfs /v2/fs/grep | rg --json | ratio | matches (sandfs / rg) |")
	fmt.Println("|---|---|---|---|---|")
	for _, pat := range []string{"EINVAL", `func \w+Unlock\(`, "zq9xnotthere"} {
		var ours, theirs time.Duration
		var n, rn int
		for i := 0; i < runs; i++ {
			t, m, err := grep(base, pat)
			if err != nil {
				return err
			}
			if i == 0 || t < ours {
				ours, n = t, m
			}
			if rg != "" {
				start := time.Now()
				out, _ := exec.Command(rg, "--json", "--no-ignore", "--hidden", pat, tree).Output()
				t := time.Since(start)
				if i == 0 || t < theirs {
					theirs, rn = t, bytes.Count(out, []byte(`"type":"match"`))
				}
			}
		}
		ratio := "n/a (rg missing)"
		if theirs > 0 {
			ratio = fmt.Sprintf("%.2f", float64(ours)/float64(theirs))
		}
		fmt.Printf("| `%s` | %v | %v | %s | %d / %d |\n", pat, ours.Round(time.Millisecond), theirs.Round(time.Millisecond), ratio, n, rn)
	}
	return nil
}

// grep asks the daemon for every match (up to 10,000, no size limit).
func grep(base, pat string) (time.Duration, int, error) {
	body, _ := json.Marshal(map[string]any{"path": "/", "pattern": pat, "max_results": 10000, "max_file_size": "1G", "exclude": []string{}})
	start := time.Now()
	r, err := http.Post(base+"/v2/fs/grep", "application/json", bytes.NewReader(body))
	if err != nil {
		return 0, 0, err
	}
	defer r.Body.Close()
	var env struct {
		Data struct {
			MatchCount int `json:"match_count"`
		} `json:"data"`
	}
	if err := json.NewDecoder(r.Body).Decode(&env); err != nil {
		return 0, 0, err
	}
	if r.StatusCode != 200 {
		return 0, 0, fmt.Errorf("grep: status %d", r.StatusCode)
	}
	return time.Since(start), env.Data.MatchCount, nil
}

func size(dir string) string {
	var n int64
	filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			n += fi.Size()
		}
		return nil
	})
	return fmt.Sprintf("%d MB", n>>20)
}
