package statedir

import (
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"regexp"
)

// The daemon's state directory holds what it keeps between runs and what
// only its own user may read: its API token (STATE/token), and per sandbox
// STATE/sandboxes/NAME (Sandbox): the sandbox's token, its kept quota
// (QuotaFile), its durable journal and checkpoints. It is --state DIR, else
// env SANDFS_STATE, else $XDG_STATE_HOME/sandfs, else
// ~/.local/state/sandfs (Default), and the client verbs resolve it the same
// way, so `make run` and `sandfs ls` of the same user meet at the same file
// with no set-up.

// Env is the environment variable that names the state directory.
const Env = "SANDFS_STATE"

// QuotaFile is a sandbox's kept quota in its state directory.
const QuotaFile = "quota.json"

// Default resolves the state directory from the --state flag's value (may
// be "") and the environment. XDG says a relative $XDG_STATE_HOME is to be
// ignored.
func Default(flagValue string, getenv func(string) string) (string, error) {
	if flagValue != "" {
		return filepath.Abs(flagValue)
	}
	if v := getenv(Env); v != "" {
		return filepath.Abs(v)
	}
	if x := getenv("XDG_STATE_HOME"); filepath.IsAbs(x) {
		return filepath.Join(x, "sandfs"), nil
	}
	home := getenv("HOME")
	if home == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return "", errors.New("no state directory: set --state DIR (or SANDFS_STATE, XDG_STATE_HOME, HOME)")
		}
		home = h
	}
	return filepath.Join(home, ".local", "state", "sandfs"), nil
}

var plainName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// Sandbox is a sandbox's own directory in the state directory state:
// STATE/sandboxes/NAME, or sandboxes/x-HEX for a name that is not a plain
// file name (so no name can reach outside it).
func Sandbox(state, name string) string {
	dir := name
	if !plainName.MatchString(name) || name == "." || name == ".." {
		dir = "x-" + hex.EncodeToString([]byte(name))
	}
	return filepath.Join(state, "sandboxes", dir)
}
