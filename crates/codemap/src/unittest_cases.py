# Shared by the scripts that run a suite the test command's way (the line
# tracer, the failing tests alone), put before each.


def unittest_cases(suite):
    """The test cases of a unittest suite, its nested suites flattened."""
    import unittest

    for t in suite:
        if isinstance(t, unittest.TestSuite):
            yield from unittest_cases(t)
        else:
            yield t


