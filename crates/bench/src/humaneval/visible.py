"""Visible tests for one HumanEval candidate: the examples written in the
prompt's docstring, in every shape HumanEval writes them (doctests,
`f(x) == y`, `f(x) ➞ y`, "For x = ... the output should be y",
"Input: ... Output: ..."). Only the prompt is read; the package's hidden
tests are never seen here.

Runs inside agentloop's persistent Python session (the `python` tool): the
caller appends `print(json.dumps(visible(PROMPT, ENTRY_POINT, CANDIDATE)))`,
which prints {"examples": n, "passed": k, "defined": bool}. Time limits
borrow the session's interval timer and give it back.
"""

import ast
import contextlib
import doctest
import inspect
import io
import json
import math
import re
import signal
import sys
import time

SEPARATOR = re.compile(
    r"^\s*#?\s*(?:==>|==|=>|➞|-->|->|→)?\s*"
    r"(?:should\s+return|should\s+be|would\s+return|returns?|gives?|is)?\s*:?\s*"
)


def literal(text):
    """The Python value a docstring writes after an example, or ValueError."""
    text = re.sub(r"\btrue\b", "True", re.sub(r"\bfalse\b", "False", text.strip()))
    tries = [text, text.rstrip(".,;"), text.split("#", 1)[0]]
    if "=" in text and text.rsplit("=", 1)[0].strip():  # "19 - 5 - 6 = 8": the value after the last '='
        tries.append(text.rsplit("=", 1)[1].rstrip(".,;"))
    for t in tries:
        try:
            return ast.literal_eval(t.strip())
        except Exception:
            pass
    for end in range(len(text) - 1, 0, -1):  # "'No' (because ...)": longest prefix
        if not text[end].isspace():
            continue
        try:
            return ast.literal_eval(text[:end].strip())
        except Exception:
            continue
    raise ValueError(text)


def call_args(args, entry):
    """`x = 1, y = "a"` or `grid : [[1]]` as a call of ENTRY, positional."""
    pieces = args.split(",")
    for cut in range(len(pieces), 0, -1):  # drop trailing prose after a comma
        text = ",".join(pieces[:cut]).strip()
        try:
            call = ast.parse(f"{entry}({text})", mode="eval").body
        except SyntaxError:
            continue
        values = [ast.unparse(a) for a in call.args] + [ast.unparse(k.value) for k in call.keywords]
        if values and all(is_literal(a) for a in call.args + [k.value for k in call.keywords]):
            return f"{entry}({', '.join(values)})"
    return None


def is_literal(node):
    try:
        ast.literal_eval(node)
        return True
    except Exception:
        return False


def docstring(prompt, entry):
    """The docstring of ENTRY in the prompt (the whole prompt if it does not parse)."""
    try:
        for node in ast.walk(ast.parse(prompt)):
            if isinstance(node, ast.FunctionDef) and node.name == entry:
                for stmt in node.body:  # usually first, after an import in a few
                    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str):
                        return inspect.cleandoc(stmt.value.value)
                return ""
    except SyntaxError:
        pass
    return prompt


def calls_in_line(line, entry):
    """(call source, text after it) for each `entry(...)` in a line."""
    for m in re.finditer(r"(?<![\w.])" + re.escape(entry) + r"\s*\(", line):
        for end in [i for i, c in enumerate(line) if c == ")" and i >= m.end() - 1]:
            src = line[m.start() : end + 1]
            try:
                node = ast.parse(src, mode="eval").body
            except SyntaxError:
                continue
            if isinstance(node, ast.Call) and all(is_literal(a) for a in node.args):
                yield src, line[end + 1 :]
                break


def examples(prompt, entry):
    """(call source, kind, expected) triples; kind is 'doctest' or 'value'."""
    whole, prompt = prompt, docstring(prompt, entry)
    found = []
    try:
        doctests = doctest.DocTestParser().get_examples(prompt)
    except ValueError:  # inconsistent indentation once the docstring is dedented
        doctests = doctest.DocTestParser().get_examples(whole)
    for ex in doctests:
        source = ex.source.strip()
        if ex.want.strip():
            if "Traceback" not in ex.want:
                found.append((source, "doctest", ex.want.split('"""')[0]))
        elif re.search(r"[^=!<>]==[^=]", source):  # `>>> f(x) == y` asserts with no output
            found.append((source, "value", True))
    for raw in prompt.splitlines():
        line = raw.strip()
        if line.startswith(">>>") or line.startswith("def ") or line.startswith("..."):
            continue
        for src, rest in calls_in_line(line, entry):
            if line.startswith(src) and re.match(r"\s*=[^=>]", rest):  # `f(x) = y` at a line's start
                rest = rest.split("=", 1)[1]
            rest = SEPARATOR.sub("", rest, count=1)
            try:
                found.append((src, "value", literal(rest)))
            except ValueError:
                pass
        m = re.match(r"(?i)for\s+(.*?)\s*,?\s*the\s+(?:output|result)\s+should\s+be\s*:?\s*(.+)$", line)
        if m:
            call = call_args(m.group(1), entry)
            try:
                if call:
                    found.append((call, "value", literal(m.group(2))))
            except ValueError:
                pass
    block = re.compile(r"Input\s*:(.*?)Output\s*:(.*?)(?=\n\s*\n|Explanation|Example|Note|Constraints|\Z)", re.S | re.I)
    for m in block.finditer(prompt):
        lines = [re.sub(r"^(\w+)\s*:\s*", r"\1 = ", l.strip()) for l in m.group(1).strip().splitlines() if l.strip()]
        call = call_args(", ".join(lines), entry)
        output = m.group(2).strip().splitlines()
        try:
            if call and output:
                found.append((call, "value", literal(output[0])))
        except ValueError:
            pass
    unique, seen = [], set()
    for item in found:
        if item[0] not in seen:
            seen.add(item[0])
            unique.append(item)
    return unique


class Timeout(Exception):
    pass


def on_alarm(signum, frame):
    raise Timeout()


@contextlib.contextmanager
def deadline(seconds):
    """Raises Timeout after `seconds`; then puts back the session's own
    timer and handler, less the time spent here."""
    started = time.monotonic()
    previous = signal.signal(signal.SIGALRM, on_alarm)
    left, _ = signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if left > 0:
            signal.setitimer(signal.ITIMER_REAL, max(left - (time.monotonic() - started), 0.001))


def same(got, want):
    if isinstance(got, float) or isinstance(want, float):
        try:
            return math.isclose(got, want, rel_tol=1e-6, abs_tol=1e-9)
        except TypeError:
            return False
    return got == want


def passes(namespace, src, kind, want):
    out = io.StringIO()
    try:
        with deadline(2), contextlib.redirect_stdout(out):
            try:
                value = eval(compile(src, "<example>", "eval"), namespace)
            except SyntaxError:
                exec(compile(src, "<example>", "exec"), namespace)
                value = None
    except BaseException:
        return False
    if kind == "value":
        return same(value, want)
    shown = out.getvalue() + ("" if value is None else repr(value) + "\n")
    if " ".join(shown.split()) == " ".join(want.split()):
        return True
    try:
        return same(value, literal(want))
    except ValueError:
        return False


def visible(prompt, entry, candidate):
    namespace = {"__name__": "candidate"}
    try:
        with deadline(5), contextlib.redirect_stdout(io.StringIO()):
            exec(compile(candidate, "candidate.py", "exec"), namespace)
        defined = callable(namespace.get(entry))
    except BaseException:
        defined = False
    cases = examples(prompt, entry)
    passed = sum(1 for c in cases if passes(namespace, *c)) if defined else 0
    return {"examples": len(cases), "passed": passed, "defined": defined}
