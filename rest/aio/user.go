package aio

import (
	"context"
	"os"
	"os/user"
	"strconv"

	"sandfs/core"
	"sandfs/rest/httpkit"
)

// Ownership identity (api.md §4, the AIO spec "Ownership identity"): on the AIO
// file routes, `user` (the ?user= query parameter on /v2, the "user" body
// field on /v1) decides only who owns the files and directories the call
// creates; the call still reads and writes with the daemon's privileges.
// The refusals are exact:
//
//   - an account that does not exist: 400 "no such user: NAME";
//   - a daemon that is not root: 400 "cannot run as NAME: sandfs is running
//     as uid N and only root can change identity".
//
// Both are decided before anything is written, so nothing is ever written
// under the wrong owner. An account may be named by its login or, when no
// login matches, by its numeric uid.

// Injectable for tests (the tests run as root).
var (
	ProcessEUID = os.Geteuid
	lookupUser  = user.Lookup
	lookupUID   = user.LookupId
)

// ResolveOwner turns the account a request names into the owner core stamps
// on what the call creates. name "" is the daemon's own account: ok false.
func ResolveOwner(name string) (o core.Owner, ok bool, err error) {
	if name == "" {
		return core.Owner{}, false, nil
	}
	u, err := lookupUser(name)
	if err != nil {
		if _, nerr := strconv.Atoi(name); nerr == nil {
			u, err = lookupUID(name)
		}
	}
	if err != nil || u == nil {
		return core.Owner{}, false, httpkit.InvalidRequest("no such user: %s", name)
	}
	uid, err1 := strconv.Atoi(u.Uid)
	gid, err2 := strconv.Atoi(u.Gid)
	if err1 != nil || err2 != nil {
		return core.Owner{}, false, httpkit.InvalidRequest("no such user: %s", name)
	}
	if euid := ProcessEUID(); euid != 0 {
		return core.Owner{}, false, httpkit.InvalidRequest("cannot run as %s: sandfs is running as uid %d and only root can change identity", name, euid)
	}
	return core.Owner{Uid: uid, Gid: gid}, true, nil
}

// withOwner returns ctx carrying the owner named by user (core.WithOwner),
// or the 400 refusal to return as it is (wrap it with httpkit.WithOp for the AIO
// operation). user "" leaves ctx as it is. Every AIO route that creates
// files (write, edit create, mkdir, copy, upload, tree) calls it first.
func withOwner(ctx context.Context, user string) (context.Context, error) {
	o, ok, err := ResolveOwner(user)
	if err != nil || !ok {
		return ctx, err
	}
	return core.WithOwner(ctx, o), nil
}
