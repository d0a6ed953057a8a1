package main

import (
	"archive/tar"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sandfs/api"
	"time"
)

var uploadBatchCommand = &command{
	name:     "upload-batch",
	short:    "send a local directory as a tar stream",
	synopsis: "upload-batch [--json] LOCALDIR [PATH]",
	about: `Send the contents of the local directory LOCALDIR to PATH on the daemon
(POST /v1/fs/upload-batch): LOCALDIR/a/b lands at PATH/a/b. The tar archive
is written on the fly while it is sent, never held whole in memory.
Directories, regular files and symlinks are sent (the daemon refuses the
whole archive if a symlink points outside PATH); sockets, devices and FIFOs
are skipped with a warning. Prints the API paths the daemon wrote, one a
line. PATH (or --to PATH) defaults to the daemon's working directory:
SOURCE then DEST, as cp and every transfer verb take them.`,
	setup: func(fs *flag.FlagSet, e *env) func(context.Context, []string) error {
		var cf clientFlags
		cf.add(fs, e.getenv, true)
		var to string
		fs.StringVar(&to, "to", "", "destination directory on the daemon (default: its working directory)")
		const usage = "upload-batch takes LOCALDIR and an optional PATH (or --to PATH)"
		return cf.run(e, nargs{1, 2, usage}, func(ctx context.Context, c *client, args []string) error {
			if len(args) == 2 && to != "" {
				return usagef(usage)
			}
			if err := cf.defaultOnly("upload-batch"); err != nil {
				return err
			}
			if len(args) == 2 {
				to = args[1]
			}
			dir := args[0]
			fi, err := os.Stat(dir)
			if err != nil {
				return err
			}
			if !fi.IsDir() {
				return fmt.Errorf("%s is not a directory (put sends one file)", dir)
			}
			q := url.Values{}
			if to != "" {
				q.Set("path", to)
			}

			pr, pw := io.Pipe()
			tarDone := make(chan error, 1)
			go func() {
				err := writeTar(ctx, pw, dir, e.stderr)
				pw.CloseWithError(err) // nil: a clean EOF
				tarDone <- err
			}()
			var res api.FSUploadBatch
			raw, err := c.callJSON(ctx, request{
				method: "POST", route: "/v1/fs/upload-batch", query: q,
				body: pr, length: -1, contentType: "application/x-tar",
			}, &res)
			// Unblock the writer if the daemon answered before reading it all.
			pr.CloseWithError(errUploadFinished)
			tarErr := <-tarDone
			if tarErr != nil && !errors.Is(tarErr, errUploadFinished) && !errors.Is(tarErr, io.ErrClosedPipe) {
				// A local failure is the cause of whatever the upload saw.
				return tarErr
			}
			if err != nil {
				return err
			}
			if cf.json {
				return writeJSON(e.stdout, raw)
			}
			return printPaths(e, res.Paths, res.Truncated, "sandfs: the daemon listed only the first %d paths")
		})
	},
}

var errUploadFinished = errors.New("upload finished")

// writeTar writes the tree under dir to w as a tar stream, entry names
// relative to dir with slashes, directories before their contents. File
// bytes are copied straight from disk; owners are not sent.
func writeTar(ctx context.Context, w io.Writer, dir string, warn io.Writer) error {
	tw := tar.NewWriter(w)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		if rel == "." {
			return nil
		}
		name := filepath.ToSlash(rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		link := ""
		switch {
		case info.IsDir(), info.Mode().IsRegular():
		case info.Mode()&fs.ModeSymlink != 0:
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		default:
			fmt.Fprintf(warn, "sandfs: skipping %s: not a file, directory or symlink (%s)\n", p, info.Mode().Type())
			return nil
		}
		hdr, err := tar.FileInfoHeader(info, link)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		hdr.Name = name
		if info.IsDir() {
			hdr.Name += "/"
		}
		hdr.Uid, hdr.Gid, hdr.Uname, hdr.Gname = 0, 0, "", ""
		hdr.AccessTime, hdr.ChangeTime = time.Time{}, time.Time{}
		if err := tw.WriteHeader(hdr); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		if !info.Mode().IsRegular() {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		n, err := io.Copy(tw, f)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		if n != hdr.Size {
			return fmt.Errorf("%s changed size while it was sent", p)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return tw.Close()
}
