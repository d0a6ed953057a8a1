// Package statedir is the daemon's state directory in one home: where it is
// (Default), what each sandbox keeps in it (Sandbox, QuotaFile,
// IdentityFile) and the token files (TokenFile: one writer, one reader;
// the identity file is written and read the same way). The daemon and the
// client verbs both use it, so a client finds the token the daemon made
// without importing the daemon. A leaf: it imports only the standard
// library and x/sys.
package statedir
