# The failing tests alone: the suite collected as the test command does,
# then only the tests named run, so that a change can be judged on them in
# seconds before the whole suite is run on it. Run in the workspace,
# confined like any test command:
#
#   python3 -c "$THIS" pytest --ids=JSON ARGS…
#   python3 -c "$THIS" unittest --ids=JSON ARGS…
#
# where JSON is a list of test ids as the runner names them (pytest's node
# ids, unittest's `module.Class.test`). The runner's output is left as it
# writes it. Exits 0 when every test run passed, 1 when one failed, and 5
# (the runners' own "no tests ran") when none of the ids was found.
# `unittest_cases` comes from unittest_cases.py, put before this script.
import json
import sys

NO_TESTS = 5


def run_pytest(args, ids):
    import pytest

    class Select:
        def pytest_collection_modifyitems(self, session, config, items):
            dropped = [i for i in items if i.nodeid not in ids]
            items[:] = [i for i in items if i.nodeid in ids]
            if dropped:
                config.hook.pytest_deselected(items=dropped)

    code = int(pytest.main(list(args) + ["-p", "no:cacheprovider"], plugins=[Select()]))
    return NO_TESTS if code == NO_TESTS else code


def run_unittest(args, ids):
    import unittest

    class Runner(unittest.TextTestRunner):
        def run(self, test):
            return super().run(unittest.TestSuite([t for t in unittest_cases(test) if t.id() in ids]))

    program = unittest.main(module=None, argv=["python3 -m unittest"] + list(args), testRunner=Runner, exit=False)
    result = program.result
    if result.testsRun == 0:
        return NO_TESTS
    return 0 if result.wasSuccessful() else 1


def main():
    mode, args = sys.argv[1], sys.argv[2:]
    ids = set()
    if args and args[0].startswith("--ids="):
        ids = set(json.loads(args.pop(0).split("=", 1)[1]))
    sys.exit(run_pytest(args, ids) if mode == "pytest" else run_unittest(args, ids))


main()
