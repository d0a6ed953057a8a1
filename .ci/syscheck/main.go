// Command syscheck fails when code in the given directories calls, directly,
// a syscall that changes a file's mode, owner, times or extended attributes
// by a name the kernel may resolve through a symlink. Those calls live in
// sandfs/internal/safeat, which does them through a held descriptor or with
// AT_SYMLINK_NOFOLLOW (its doc.go says why each one cannot follow); every
// other package calls safeat. pkg/xattr's path calls count too: safeat
// hands them only /proc/self/fd names. It also fails an openat(2) whose flags do not
// say O_NOFOLLOW (or O_CREAT|O_EXCL, which never follows) on a name other
// than ".", an fstatat(2) without AT_SYMLINK_NOFOLLOW, and a linkat(2) with
// AT_SYMLINK_FOLLOW. _test.go files and internal/safeat are not checked.
//
// Run by .ci/layering (make layering, part of make test):
//
//	go run ./.ci/syscheck core fusefs rest
package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// banned are the calls no package but safeat may make, by import path.
var banned = map[string]map[string]string{
	"golang.org/x/sys/unix": sysBanned,
	"syscall":               sysBanned,
	"os": {
		"Chmod": "safeat.Chmod on a held descriptor", "Chown": "safeat.Chown", "Lchown": "safeat.LchownAt",
		"Chtimes": "safeat.Utimes", "Truncate": "ftruncate on a held descriptor",
	},
	// pkg/xattr's calls take a path, which safeat gives them only as the
	// /proc/self/fd link of a held descriptor.
	"github.com/pkg/xattr": {
		"Get": "safeat.XattrValue", "LGet": "safeat.XattrValue", "List": "safeat.XattrNames",
		"LList": "safeat.XattrNames", "Set": "safeat.Setxattr", "LSet": "safeat.Setxattr",
		"SetWithFlags": "safeat.Setxattr", "LSetWithFlags": "safeat.Setxattr",
		"Remove": "safeat.Removexattr", "LRemove": "safeat.Removexattr",
	},
}

var sysBanned = map[string]string{
	"Fchmodat": "safeat.Chmod (descriptor) or safeat.ChmodAt (never follows)", "Chmod": "safeat.Chmod",
	"Chown": "safeat.Chown", "Lchown": "safeat.LchownAt", "Fchownat": "safeat.Chown or safeat.LchownAt",
	"UtimesNanoAt": "safeat.Utimes or safeat.LutimesAt", "Utimes": "safeat.Utimes", "UtimesNano": "safeat.Utimes",
	"Utime": "safeat.Utimes", "Futimesat": "safeat.Utimes", "Lutimes": "safeat.LutimesAt",
	"Setxattr": "safeat.Setxattr", "Lsetxattr": "safeat.Setxattr", "Removexattr": "safeat.Removexattr",
	"Lremovexattr": "safeat.Removexattr", "Getxattr": "safeat.Getxattr", "Lgetxattr": "safeat.Getxattr",
	"Listxattr": "safeat.Listxattr", "Llistxattr": "safeat.Listxattr", "Truncate": "ftruncate on a held descriptor",
}

const allowed = "internal/safeat"

func main() {
	var problems []string
	for _, dir := range os.Args[1:] {
		err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if strings.HasSuffix(filepath.ToSlash(p), allowed) || d.Name() == "testdata" {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return nil
			}
			ps, err := checkFile(p)
			problems = append(problems, ps...)
			return err
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, "syscheck:", err)
			os.Exit(2)
		}
	}
	sort.Strings(problems)
	for _, p := range problems {
		fmt.Println(p)
	}
	if len(problems) > 0 {
		fmt.Printf("syscheck: %d call(s) that may follow a symlink; use sandfs/internal/safeat (its doc.go says why)\n", len(problems))
		os.Exit(1)
	}
}

func checkFile(path string) ([]string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	// Local names of the imports that matter.
	names := map[string]string{}
	for _, im := range f.Imports {
		ip, _ := strconv.Unquote(im.Path.Value)
		if _, ok := banned[ip]; !ok {
			continue
		}
		n := ip[strings.LastIndex(ip, "/")+1:]
		if im.Name != nil {
			n = im.Name.Name
		}
		names[n] = ip
	}
	var out []string
	report := func(n ast.Node, format string, a ...any) {
		out = append(out, fmt.Sprintf("%s: %s", fset.Position(n.Pos()), fmt.Sprintf(format, a...)))
	}
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		pkg, ok := sel.X.(*ast.Ident)
		if !ok {
			return true
		}
		ip, ok := names[pkg.Name]
		if !ok {
			return true
		}
		fn := sel.Sel.Name
		if use, bad := banned[ip][fn]; bad {
			report(call, "%s.%s: use %s", pkg.Name, fn, use)
			return true
		}
		if ip != "golang.org/x/sys/unix" && ip != "syscall" {
			return true
		}
		switch fn {
		case "Openat":
			if len(call.Args) == 4 && !isDot(call.Args[1]) && !mentions(call.Args[2], "O_NOFOLLOW") &&
				!(mentions(call.Args[2], "O_CREAT") && mentions(call.Args[2], "O_EXCL")) {
				report(call, "%s.Openat without O_NOFOLLOW in its flags follows a final symlink", pkg.Name)
			}
		case "Fstatat":
			if len(call.Args) == 4 && !isDot(call.Args[1]) && !mentions(call.Args[3], "AT_SYMLINK_NOFOLLOW") && !mentions(call.Args[3], "AT_EMPTY_PATH") {
				report(call, "%s.Fstatat without AT_SYMLINK_NOFOLLOW follows a final symlink", pkg.Name)
			}
		case "Linkat":
			if len(call.Args) == 5 && mentions(call.Args[4], "AT_SYMLINK_FOLLOW") {
				report(call, "%s.Linkat with AT_SYMLINK_FOLLOW follows a symlink", pkg.Name)
			}
		}
		return true
	})
	return out, nil
}

// isDot reports whether e is the literal ".".
func isDot(e ast.Expr) bool {
	l, ok := e.(*ast.BasicLit)
	return ok && l.Kind == token.STRING && l.Value == `"."`
}

// mentions reports whether the expression e names the identifier id (as
// unix.O_NOFOLLOW or O_NOFOLLOW) anywhere: flags are or-ed constants.
func mentions(e ast.Expr, id string) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.SelectorExpr:
			if x.Sel.Name == id {
				found = true
			}
		case *ast.Ident:
			if x.Name == id {
				found = true
			}
		}
		return !found
	})
	return found
}
