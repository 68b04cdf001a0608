# The lines each test runs, counted over failing and passing tests, for
# spectrum-based fault localization. Run in the workspace, confined like
# any test command:
#
#   python3 -c "$THIS" pytest [--only=F,F…] [--seconds=N] ARGS…
#   python3 -c "$THIS" unittest [--only=F,F…] [--seconds=N] ARGS…
#
# runs the suite under that runner with the user's ARGS. `--only` runs the
# tests of those files (the failing tests' own, relative to the workspace)
# first: the failing tests, and the passing tests nearest to them, are
# traced before the rest of the suite, which adds contrast while time
# lasts. `--seconds` bounds the tracing: when that long has passed, the
# test running stops being traced and is not counted, no test starts
# after it, and the report holds what was traced. A suite runs several
# times slower under a tracer, and one test that loops in the workspace's
# code can run for minutes under it: the bound must hold inside a test,
# not only between tests.
#
# Prints one line on its own stdout, after the run and nothing else:
#   AGENTLOOP_SPECTRUM {"failed": F, "passed": P, "lines": {path: {line: [ef, ep]}}, "failing": [id…]}
# where ef and ep count the failing and passing tests that ran the line;
# only lines some failing test ran are kept, paths relative to the
# workspace; the ids are the failing tests' own, as the runner names them
# (pytest's node ids, unittest's `module.Class.test`). The suite's own output goes to /dev/null: the caller already
# has it from the plain run.
# `unittest_cases` comes from unittest_cases.py, put before this script.
import functools
import json
import os
import sys
import threading

ROOT = os.path.realpath(os.getcwd()) + os.sep
MARK = "AGENTLOOP_SPECTRUM "
# Lines kept at most, the most suspicious first, so the report stays small.
KEEP = 6000
# Failing tests named at most.
KEEP_FAILING = 100

ONLY = set()  # the files whose tests run first
# Set by a timer when time is up; read at every traced line, so it is one
# plain global.
stopped = False

ran = set()
counts = {}
totals = {"failed": 0, "passed": 0}
failing = []
# The outcome of the test running now: None until it is known.
outcome = [None]


# Each answer below depends on the file's name only, and is asked at every
# call: each is worked out once per file.
@functools.lru_cache(maxsize=None)
def under_root(filename):
    real = os.path.realpath(filename)
    return real.startswith(ROOT) and os.sep + "site-packages" + os.sep not in real and os.path.isfile(real)


# Code a runner calls to describe a failure (pytest's assertion rewriting
# and traceback formatting, reprlib, pprint, unittest's safe_repr) runs
# only in failing tests, so its callees in the workspace (`__repr__`,
# `__eq__` for a diff) would look suspect. They are not evidence.
REPORTING = (
    os.sep + os.path.join("_pytest", "assertion") + os.sep,
    os.sep + os.path.join("_pytest", "_io") + os.sep,
    os.sep + os.path.join("_pytest", "_code") + os.sep,
    os.sep + "reprlib.py",
    os.sep + "pprint.py",
    os.sep + os.path.join("unittest", "util.py"),
)
@functools.lru_cache(maxsize=None)
def reporting(filename):
    return any(part in filename for part in REPORTING)


@functools.lru_cache(maxsize=None)
def test_file(filename):
    """Whether `filename` holds tests (as the ranking's `is_test_path`)."""
    parts = os.path.relpath(os.path.realpath(filename), ROOT).split(os.sep)
    stem = parts[-1][:-3] if parts[-1].endswith(".py") else parts[-1]
    return any(p in ("tests", "test", "testing") for p in parts) or stem.startswith("test_") or stem.endswith("_test") or stem == "conftest"


def called_to_report(frame):
    """Whether a runner describing a failure is among the callers, after
    the test that runs: the helpers of a `__repr__` so called count as
    little as the `__repr__` itself."""
    caller = frame.f_back
    while caller is not None:
        name = caller.f_code.co_filename
        if reporting(name):
            return True
        if under_root(name) and test_file(name):
            return False
        caller = caller.f_back
    return False


def local(frame, event, arg):
    if stopped:
        return None
    if event == "line":
        ran.add((frame.f_code.co_filename, frame.f_lineno))
    return local


def trace(frame, event, arg):
    if stopped or event != "call" or not under_root(frame.f_code.co_filename) or called_to_report(frame):
        return None
    ran.add((frame.f_code.co_filename, frame.f_lineno))
    return local


def first(path):
    return os.path.relpath(os.path.realpath(path), ROOT) in ONLY


def stop():
    global stopped
    stopped = True


def start():
    ran.clear()
    outcome[0] = None
    sys.settrace(trace)


def failed(yes):
    # A test fails if any of its parts did (setup, a subtest, the call).
    outcome[0] = bool(yes) or bool(outcome[0])


def finish(test_id):
    sys.settrace(None)
    # A test time ran out on was traced in part: it is not counted.
    if outcome[0] is not None and not stopped:
        if outcome[0] and len(failing) < KEEP_FAILING:
            failing.append(test_id)
        totals["failed" if outcome[0] else "passed"] += 1
        for key in ran:
            c = counts.setdefault(key, [0, 0])
            c[0 if outcome[0] else 1] += 1
    ran.clear()
    outcome[0] = None


def run_pytest(args):
    import pytest

    class Spectrum:
        session = None

        def pytest_sessionstart(self, session):
            self.session = session

        def pytest_collection_modifyitems(self, session, config, items):
            items.sort(key=lambda i: not first(str(i.path)))

        def pytest_runtest_logstart(self, nodeid, location):
            if stopped and self.session is not None:
                self.session.shouldstop = "time is up"
            start()

        def pytest_runtest_logreport(self, report):
            if report.when == "call" or report.failed:
                failed(report.failed)

        def pytest_runtest_logfinish(self, nodeid, location):
            finish(nodeid)

    pytest.main(list(args) + ["-p", "no:cacheprovider"], plugins=[Spectrum()])


def run_unittest(args):
    import unittest

    def of_first(test):
        module = sys.modules.get(type(test).__module__)
        return first(getattr(module, "__file__", None) or "")

    class Runner(unittest.TextTestRunner):
        def run(self, test):
            ordered = sorted(unittest_cases(test), key=lambda t: not of_first(t))
            return super().run(unittest.TestSuite(ordered))

    class Result(unittest.TextTestResult):
        def startTest(self, test):
            if stopped:
                self.stop()
            super().startTest(test)
            start()

        def addSuccess(self, test):
            failed(False)
            super().addSuccess(test)

        def addFailure(self, test, err):
            failed(True)
            super().addFailure(test, err)

        def addError(self, test, err):
            failed(True)
            super().addError(test, err)

        def addSubTest(self, test, subtest, err):
            failed(err is not None)
            super().addSubTest(test, subtest, err)

        def stopTest(self, test):
            finish(test.id())
            super().stopTest(test)

    runner = Runner(resultclass=Result)
    unittest.main(module=None, argv=["python3 -m unittest"] + list(args), testRunner=runner, exit=False)


def main():
    mode, args = sys.argv[1], sys.argv[2:]
    while args and args[0].startswith(("--only=", "--seconds=")):
        flag, value = args.pop(0).split("=", 1)
        if flag == "--only":
            ONLY.update(p for p in value.split(",") if p)
        else:
            timer = threading.Timer(float(value), stop)
            timer.daemon = True
            timer.start()
    report = os.fdopen(os.dup(1), "w")
    quiet = os.open(os.devnull, os.O_WRONLY)
    os.dup2(quiet, 1)
    os.dup2(quiet, 2)
    try:
        run_pytest(args) if mode == "pytest" else run_unittest(args)
    except SystemExit:
        pass
    finally:
        sys.settrace(None)
    kept = [(k, v) for k, v in counts.items() if v[0] > 0]
    kept.sort(key=lambda kv: -kv[1][0] / (kv[1][0] + kv[1][1]) ** 0.5)
    lines = {}
    for (filename, line), (ef, ep) in kept[:KEEP]:
        path = os.path.relpath(os.path.realpath(filename), ROOT)
        lines.setdefault(path, {})[str(line)] = [ef, ep]
    report.write("\n" + MARK + json.dumps({"failed": totals["failed"], "passed": totals["passed"], "lines": lines, "failing": failing}) + "\n")
    report.flush()


main()
