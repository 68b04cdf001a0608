"""The Python side of agentloop's persistent Python session.

One JSON object per line on stdin: {"id": n, "code": "...", "timeout": secs}.
One JSON object per line on stdout for each: {"id", "stdout", "stderr",
"value", "error", "timedOut", "truncated"}. The namespace is kept between
executions. The value of a final expression is returned like a notebook
shows it. A runaway execution is interrupted after its timeout and the
session goes on.

Writes outside the session folder, and starting other programs, are refused
by an audit hook: the code a model writes may read what it likes, but it only
changes files in its own folder.
"""

import ast
import io
import json
import os
import signal
import sys
import traceback

FOLDER = os.path.realpath(os.getcwd())
CAP = int(os.environ.get("AGENTLOOP_PY_OUTPUT_CAP", "65536"))
VALUE_CAP = 4096
PROTOCOL_OUT = sys.stdout
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC


class Interrupted(BaseException):
    """Raised by the timer; BaseException so `except Exception` in user code
    does not swallow it."""


def inside(path):
    try:
        if isinstance(path, int):
            return True  # an already-open descriptor
        real = os.path.realpath(os.fsdecode(path))
    except Exception:
        return False
    return real == FOLDER or real.startswith(FOLDER + os.sep) or real == os.devnull


def guard(event, args):
    if event == "open":
        path, mode, flags = args
        writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (isinstance(flags, int) and flags & WRITE_FLAGS)
        if writing and path is not None and not inside(path):
            raise PermissionError(f"the repl may only write inside its session folder {FOLDER}, not {path}")
    elif event in ("os.remove", "os.rmdir", "os.mkdir", "os.chmod", "os.chown", "os.truncate", "os.utime", "shutil.rmtree", "os.listxattr"):
        if args and not inside(args[0]):
            raise PermissionError(f"the repl may only change files inside its session folder {FOLDER}")
    elif event in ("os.rename", "os.link", "os.symlink", "shutil.copyfile", "shutil.move"):
        if not all(inside(a) for a in args[:2]):
            raise PermissionError(f"the repl may only change files inside its session folder {FOLDER}")
    elif event == "os.chdir":
        if not inside(args[0]):
            raise PermissionError(f"the repl stays in its session folder {FOLDER}")
    elif event in ("subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty", "pty.spawn"):
        raise PermissionError("the repl does not start other programs: do it in Python")


class Capped(io.StringIO):
    """Keeps the first CAP characters and counts the rest."""

    def __init__(self):
        super().__init__()
        self.dropped = 0

    def write(self, s):
        room = CAP - self.tell()
        if room <= 0:
            self.dropped += len(s)
            return len(s)
        if len(s) > room:
            self.dropped += len(s) - room
            s = s[:room]
        return super().write(s)


def on_timer(signum, frame):
    raise Interrupted()


def run(code, namespace, timeout):
    out, err = Capped(), Capped()
    value, error, timed_out = None, None, False
    old_out, old_err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    signal.setitimer(signal.ITIMER_REAL, max(timeout, 0.001))
    try:
        tree = ast.parse(code, "<repl>", "exec")
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last = ast.Expression(tree.body.pop().value)
        exec(compile(tree, "<repl>", "exec"), namespace)
        if last is not None:
            result = eval(compile(last, "<repl>", "eval"), namespace)
            if result is not None:
                value = repr(result)
                if len(value) > VALUE_CAP:
                    value = value[:VALUE_CAP] + f"… ({len(value) - VALUE_CAP} more characters)"
                namespace["_"] = result
    except Interrupted:
        timed_out = True
        error = {"type": "TimeoutError", "message": f"the code ran past its {timeout:g}s limit and was interrupted; the session's variables are kept", "traceback": ""}
    except BaseException as e:  # the user's code may raise anything, SystemExit included
        tb = traceback.format_exception(type(e), e, e.__traceback__)
        # Drop this driver's own frames: the model should see its code's.
        tb = [line for line in tb if "python_driver" not in line and "agentloop-python" not in line]
        error = {"type": type(e).__name__, "message": str(e), "traceback": "".join(tb)}
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        sys.stdout, sys.stderr = old_out, old_err
    return {
        "stdout": out.getvalue(),
        "stderr": err.getvalue(),
        "value": value,
        "error": error,
        "timedOut": timed_out,
        "truncated": out.dropped + err.dropped,
    }


def main():
    signal.signal(signal.SIGALRM, on_timer)
    namespace = {"__name__": "__main__", "__builtins__": __builtins__}
    sys.addaudithook(guard)
    print(json.dumps({"ready": True, "folder": FOLDER, "python": sys.version.split()[0]}), file=PROTOCOL_OUT, flush=True)
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            request = json.loads(line)
        except ValueError as e:
            reply = {"id": None, "error": {"type": "ProtocolError", "message": str(e), "traceback": ""}}
        else:
            reply = run(request.get("code", ""), namespace, float(request.get("timeout", 30)))
            reply["id"] = request.get("id")
        print(json.dumps(reply), file=PROTOCOL_OUT, flush=True)


if __name__ == "__main__":
    main()
