"""Report text says its reasons itself: no string a system can put in the report cites an issue,
notes or a review (a reader has the papers and the repository, not the team's tracker). The
report refuses such rows at run time; this catches them before a reproducer runs."""

import ast
import re
from pathlib import Path

WORDS = re.compile(r"\b(issues?|notes|reviews?|reviewers?)\b", re.IGNORECASE)
INTERNAL = re.compile(r"\bstripped\b|\bour copy\b|\bthe text we have\b", re.IGNORECASE)
UNITS = re.compile(r"unit=\"(x-1|rel\.)\"")
ROOT = Path(__file__).resolve().parents[2] / "python" / "veil"


def _strings(tree: ast.AST):
    docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                  if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))
                  and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    for n in ast.walk(tree):
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docstrings:
            yield n.lineno, n.value


def test_no_system_string_cites_issues_notes_or_reviews():
    hits = []
    for path in sorted(ROOT.glob("*/**/*.py")):
        if path.parts[-2] == "core" and path.parent.parent == ROOT:
            continue  # the framework's own messages (the refusal names the words)
        for line, text in _strings(ast.parse(path.read_text())):
            if WORDS.search(text):
                hits.append(f"{path.relative_to(ROOT)}:{line}: {text[:80]!r}")
    assert not hits, "\n".join(hits)


def test_no_system_string_uses_internal_phrases_or_units():
    """What the team calls its copy of a paper, and shorthand units, mean nothing to a reader."""
    hits = []
    for path in sorted(ROOT.glob("*/**/*.py")):
        if path.parts[-2] == "core" and path.parent.parent == ROOT:
            continue
        text = path.read_text()
        hits += [f"{path.relative_to(ROOT)}: {m.group(0)}" for m in UNITS.finditer(text)]
        for line, s in _strings(ast.parse(text)):
            if INTERNAL.search(s):
                hits.append(f"{path.relative_to(ROOT)}:{line}: {s[:80]!r}")
    assert not hits, "\n".join(hits)
