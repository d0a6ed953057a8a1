"""Drive a sandfs daemon's /v1/file/* routes with the AIO sandbox's own
Python SDK (vendored unchanged in aio-python-sdk/), as a user of the AIO
sandbox would: write, read a line range, list, find, glob, grep, the editor
with undo, upload and download, a watcher while another process changes the
root, wait, and the failures the SDK reports in its own types.

Run by integration/aio_sdk_test.go with /usr/bin/python3 and PYTHONPATH at
the vendored SDK. Environment: SANDFS_URL, SANDFS_TOKEN, SANDFS_ROOT (the
root's host directory, for the outside writer), CHECK_DIR (an API path).
Prints one line per check; exits 1 with the failed check on stderr.
"""

import os
import subprocess
import sys
import threading
import time

from agent_sandbox import Sandbox
from agent_sandbox.core.api_error import ApiError
from agent_sandbox.errors import UnprocessableEntityError
from agent_sandbox.types import FileOperationError

URL = os.environ["SANDFS_URL"]
TOKEN = os.environ["SANDFS_TOKEN"]
ROOT = os.environ["SANDFS_ROOT"]
D = os.environ.get("CHECK_DIR", "/aiosdk")

# The SDK takes a token as any header it should send with every request.
sb = Sandbox(base_url=URL, headers={"Authorization": "Bearer " + TOKEN}, timeout=30)
f = sb.file


def check(cond, what, got=None):
    if not cond:
        sys.stderr.write("FAIL: %s: got %r\n" % (what, got))
        sys.exit(1)


def ok(resp, what):
    """resp is a ResponseUnion…: success, and data not the error type."""
    check(resp.success is True, what + ": success", resp)
    check(not isinstance(resp.data, FileOperationError), what + ": data is not an error", resp.data)
    print("ok  ", what)
    return resp.data


def fails(resp, what, error_type, as_error_type=True):
    """An expected filesystem failure: 200 success:false, data the SDK's
    FileOperationError with the AIO error_type. The SDK parses data as the
    first model of its union that fits, and its models allow extra fields:
    where the result model needs only `path` (list, find, glob, grep), an
    error body fits it, so there the error fields arrive as its extras
    (as_error_type=False): the same body from the AIO sandbox parses so."""
    check(resp.success is False, what + ": success false", resp)
    if as_error_type:
        check(isinstance(resp.data, FileOperationError), what + ": data is a FileOperationError", resp.data)
    check(getattr(resp.data, "error_type", None) == error_type, what + ": error_type " + error_type, resp.data)
    check(resp.data.message and resp.data.message in (resp.message or ""), what + ": message", resp)
    print("ok  ", what, "->", type(resp.data).__name__, resp.data.error_type, resp.data.errno_name)
    return resp.data


def raises(call, cls, status, what):
    try:
        call()
    except cls as e:
        check(e.status_code == status, what + ": status %d" % status, e.status_code)
        print("ok  ", what, "->", type(e).__name__, e.status_code)
        return e
    check(False, what + ": raises " + cls.__name__)


def outside(script):
    """Change the root as another process would (not through the API)."""
    subprocess.run(["/bin/sh", "-c", script], cwd=ROOT + D, check=True)


# Files: write, read a line range, list, find, glob, grep.
text = "line 0\nline 1\nneedle 2\nline 3\n"
w = ok(f.write_file(file=D + "/src/a.txt", content=text), "write_file (parents made)")
check(w.bytes_written == len(text), "bytes_written", w)
ok(f.write_file(file=D + "/src/b.py", content="print('needle')\n"), "write_file b.py")
ino = os.stat(ROOT + D + "/src/a.txt").st_ino
ok(f.write_file(file=D + "/src/a.txt", content="line 4\n", append=True), "write_file append")
# The seed: "A plain write keeps the destination's inode".
check(os.stat(ROOT + D + "/src/a.txt").st_ino == ino, "append kept the inode", ino)
r = ok(f.read_file(file=D + "/src/a.txt", start_line=1, end_line=3), "read_file lines 1-3")
check(r.content == "line 1\nneedle 2\n", "read range content", r.content)
r = ok(f.read_file(file=D + "/src/a.txt"), "read_file whole")
check(r.content == text + "line 4\n", "read whole content", r.content)

ls = ok(f.list_path(path=D + "/src"), "list_path")
names = sorted(x.name for x in ls.files)
check(names == ["a.txt", "b.py"], "list names", names)
check(ls.file_count == 2 and ls.directory_count == 0, "list counts", ls)
ls = ok(f.list_path(path=D, recursive=True), "list_path recursive")
check(sorted(x.path for x in ls.files) == [D + "/src", D + "/src/a.txt", D + "/src/b.py"], "recursive paths", [x.path for x in ls.files])

fd = ok(f.find_files(path=D, glob="**/*.py"), "find_files")
check(fd.files == [D + "/src/b.py"], "find files", fd.files)
g = ok(f.glob_files(path=D, pattern="**/*.txt"), "glob_files")
check([x.path for x in g.files] == [D + "/src/a.txt"], "glob paths", g.files)
check(g.pattern == "**/*.txt", "glob pattern echoed", g.pattern)

# Sorted, then cut at max_results: the largest file even if found last.
for name, body in [("c-1.dat", "1"), ("b-2.dat", "22"), ("a-10.dat", "1010101010")]:
    ok(f.write_file(file=D + "/glob/" + name, content=body), "write_file glob/" + name)
g = ok(f.glob_files(path=D + "/glob", pattern="*.dat", sort_by="size", sort_desc=True, max_results=2), "glob_files by size, max 2")
check([(x.name, x.size) for x in g.files] == [("a-10.dat", 10), ("b-2.dat", 2)] and g.truncated is True, "glob sorted then cut", g)
g = ok(f.glob_files(path=D + "/glob", pattern="*", sort_by="name", include_metadata=False), "glob_files by name, no metadata")
check([(x.name, x.size, x.modified_time) for x in g.files] == [("a-10.dat", None, None), ("b-2.dat", None, None), ("c-1.dat", None, None)], "glob by name", g)
ls = ok(f.list_path(path=D + "/glob", sort_by="size", sort_desc=True, include_size=False), "list_path by size, sizes not shown")
check([(x.name, x.size) for x in ls.files] == [("a-10.dat", None), ("b-2.dat", None), ("c-1.dat", None)], "list by size", ls.files)

gr = ok(f.grep_files(path=D, pattern="needle"), "grep_files")
got = sorted((m.file, m.line_number, m.line_content) for m in gr.matches)
check(got == [(D + "/src/a.txt", 3, "needle 2"), (D + "/src/b.py", 1, "print('needle')")], "grep matches", got)
check(gr.match_count == 2 and gr.files_matched == 2, "grep counts", gr)
gr = ok(f.grep_files(path=D, pattern="NEEDLE", case_insensitive=True, include=["*.txt"], context_before=1), "grep_files -i include context")
check([(m.line_number, m.context_before) for m in gr.matches] == [(3, ["line 1"])], "grep -i context", gr.matches)
s = ok(f.search_in_file(file=D + "/src/a.txt", regex="^line [0-3]$"), "search_in_file")
check(s.line_numbers == [0, 1, 3] or s.line_numbers == [1, 2, 4], "search line numbers", s)

# The editor, with undo.
e = ok(f.str_replace_editor(command="str_replace", path=D + "/src/a.txt", old_str="needle 2", new_str="pin 2"), "editor str_replace")
check(e.prev_exist is True and "pin 2" in e.new_content and "needle 2" in e.old_content, "str_replace result", e)
e = ok(f.str_replace_editor(command="insert", path=D + "/src/a.txt", insert_line=0, new_str="top"), "editor insert")
check(open(ROOT + D + "/src/a.txt").read() == "top\nline 0\nline 1\npin 2\nline 3\nline 4\n", "after insert", open(ROOT + D + "/src/a.txt").read())
ok(f.str_replace_editor(command="undo_edit", path=D + "/src/a.txt"), "editor undo_edit (insert)")
ok(f.str_replace_editor(command="undo_edit", path=D + "/src/a.txt"), "editor undo_edit (str_replace)")
check(open(ROOT + D + "/src/a.txt").read() == text + "line 4\n", "after two undos", open(ROOT + D + "/src/a.txt").read())
e = ok(f.str_replace_editor(command="create", path=D + "/new.md", file_text="# new\n"), "editor create")
check(e.prev_exist is False, "create prev_exist", e)
v = ok(f.str_replace_editor(command="view", path=D + "/src/a.txt", view_range=[2, 3]), "editor view range")
check("line 1" in v.output and "line 0" not in v.output, "view output", v.output)
rp = ok(f.replace_in_file(file=D + "/new.md", old_str="new", new_str="renewed"), "replace_in_file")
check(open(ROOT + D + "/new.md").read() == "# renewed\n", "replace_in_file on disk", open(ROOT + D + "/new.md").read())

# Upload and download.
blob = bytes((i * 7 + (i >> 8)) & 0xFF for i in range(300000))
u = ok(f.upload_file(file=("blob.bin", blob), path=D + "/up/blob.bin"), "upload_file")
check(u.file_path == D + "/up/blob.bin" and u.file_size == len(blob), "upload result", u)
got = b"".join(f.download_file(path=D + "/up/blob.bin"))
check(got == blob, "download bytes", len(got))
print("ok   download_file", len(got), "bytes")

# A watcher while another process writes, renames and removes.
os.makedirs(ROOT + D + "/w", exist_ok=True)
wc = f.watch_create(path=D + "/w", debounce=50)
check(wc["success"] is True, "watch_create", wc)
wid, cursor = wc["data"]["watcher_id"], wc["data"]["initial_cursor"]
print("ok   watch_create", wid)
lst = f.watch_list()
check(any(x["watcher_id"] == wid for x in lst["data"]["watchers"]), "watch_list has it", lst)
outside("echo one > w/f.txt && mv w/f.txt w/g.txt && rm w/g.txt")
seen = []
deadline = time.time() + 15
while time.time() < deadline and not any(ev["type"] == "remove" for ev in seen):
    p = f.watch_poll(wid, cursor=cursor, timeout=5)
    check(p["success"] is True, "watch_poll", p)
    seen += p["data"]["events"]
    cursor = p["data"]["cursor"]
kinds = [(ev["type"], ev["path"], ev.get("old_path")) for ev in seen]
for want in [("create", D + "/w/f.txt", None), ("rename", D + "/w/g.txt", D + "/w/f.txt"), ("remove", D + "/w/g.txt", None)]:
    check(want in kinds, "watch saw %s" % (want,), kinds)
check(all(ev["origin"] == "external" for ev in seen), "origin external", seen)
print("ok   watch_poll", kinds)
st = f.watch_stop(wid)
check(st["success"] is True, "watch_stop", st)
print("ok   watch_stop")
raises(lambda: f.watch_poll(wid, cursor=cursor, timeout=1), ApiError, 404, "watch_poll of a stopped watcher")

# Wait for a file (its exact path), while another process creates it.
timer = threading.Timer(0.5, outside, args=("echo hi > w/waited.txt",))
timer.start()
wt = f.watch_wait(path=D + "/w/waited.txt", timeout=10, event_types=["create"])
timer.join()
# data is the event, shaped as a poll's.
check(wt["success"] is True and wt["data"]["path"] == D + "/w/waited.txt" and wt["data"]["type"] == "create", "watch_wait event", wt)
check(wt["data"]["origin"] == "external", "watch_wait origin", wt)
print("ok   watch_wait", wt["data"]["type"], wt["data"]["path"])
raises(lambda: f.watch_wait(path=D + "/w/never.txt", timeout=1), ApiError, 503, "watch_wait timeout")

# Expected failures, in the SDK's own types.
fails(f.read_file(file=D + "/missing.txt"), "read_file of a missing file", "not_found")
fails(f.list_path(path=D + "/missing"), "list_path of a missing dir", "not_found", as_error_type=False)
fails(f.grep_files(path=D + "/missing", pattern="x"), "grep_files of a missing dir", "not_found", as_error_type=False)
fails(f.read_file(file=D + "/src"), "read_file of a directory", "invalid_target")
# The seed: an absent anchor answers 400 "old_str not found in file", one
# that matches twice 400 "old_str has multiple occurrences".
e = raises(lambda: f.str_replace_editor(command="str_replace", path=D + "/src/a.txt", old_str="absent", new_str="x"), ApiError, 400, "str_replace of an absent anchor")
check(e.body["message"] == "old_str not found in file", "absent anchor message", e.body)
e = raises(lambda: f.str_replace_editor(command="str_replace", path=D + "/src/a.txt", old_str="line", new_str="x"), ApiError, 400, "str_replace of a repeated anchor")
check(e.body["message"] == "old_str has multiple occurrences", "repeated anchor message", e.body)
check(open(ROOT + D + "/src/a.txt").read() == text + "line 4\n", "refused edits changed nothing", open(ROOT + D + "/src/a.txt").read())
fails(f.replace_in_file(file=D + "/missing.txt", old_str="a", new_str="b"), "replace_in_file of a missing file", "not_found")
raises(lambda: f.write_file(file=D + "/x.txt", content="x", encoding="rot13"), UnprocessableEntityError, 422, "write_file with a bad encoding")
raises(lambda: f.read_file(file=D + "/src/a.txt", start_line="one"), UnprocessableEntityError, 422, "read_file with a bad start_line")
raises(lambda: f.watch_create(path=D + "/w", debounce=1), ApiError, 400, "watch_create with a debounce under 50")
check(not os.path.exists(ROOT + D + "/x.txt"), "a refused write wrote nothing", os.listdir(ROOT + D))
try:
    b"".join(f.download_file(path=D + "/missing.bin"))
    check(False, "download of a missing file raises")
except ApiError as e:
    check(e.status_code == 404, "download missing: 404", e.status_code)
    print("ok   download_file of a missing file -> ApiError 404")

print("all checks passed")
