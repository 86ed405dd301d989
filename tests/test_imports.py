"""The package's import graph: consumers load no build side, and no module cycle.

Each check runs in a fresh interpreter, so what an earlier test imported cannot hide
what an import really loads.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "mintdim_beam"
BUILD_SIDE = ("apache_beam", "sentencepiece", "tokenizers", "mintdim_beam.launch.api", "mintdim_beam.core.config",
              "mintdim_beam.tokenization.adapters", "mintdim_beam.core.records", "mintdim_beam.launch.launcher",
              "mintdim_beam.beam.transforms")


def _loaded_after(statement: str) -> set:
    code = f"import sys\n{statement}\nprint('\\n'.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(out.stdout.split())


def test_importing_the_reader_loads_no_beam_tokenizer_or_build_module():
    loaded = _loaded_after("import mintdim_beam.reader.dataset")
    assert "mintdim_beam.reader.dataset" in loaded
    assert sorted(m for m in loaded if m.split(".")[0] in ("apache_beam", "sentencepiece", "tokenizers")
                  or m in BUILD_SIDE) == []


def test_the_package_names_are_still_there_on_first_use():
    loaded = _loaded_after("import mintdim_beam\nassert callable(mintdim_beam.pipeline)")
    assert "mintdim_beam.launch.api" in loaded and "apache_beam" not in loaded


def _package_imports(module: Path) -> set:
    """Modules of the package that ``module`` imports, at any level of its code."""
    found = set()
    for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module:
                found.add(node.module.split(".")[0])
            else:
                found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("mintdim_beam."):
            found.add(node.module.split(".")[1])
    return found


# The face and launch side: the command line, job declaration, launcher and planner.
FACE_AND_LAUNCH = {"cli", "consumer_cli", "api", "launcher", "unit_planner", "digests", "cores", "options"}


def test_no_import_cycle_through_the_command_line_and_launch_modules():
    """``cli`` imported ``consumer_cli``, which imported ``cli`` back for the job file."""
    graph = {p.stem: _package_imports(p) & {q.stem for q in PACKAGE.glob("*.py")}
             for p in PACKAGE.glob("*.py") if p.stem != "__init__"}
    cycles = []

    def visit(node, path):
        for nxt in sorted(graph.get(node, ())):
            if nxt == path[0]:
                cycles.append(path + [nxt])
            elif nxt not in path and nxt > path[0]:
                visit(nxt, path + [nxt])

    for start in sorted(graph):
        visit(start, [start])
    assert [c for c in cycles if FACE_AND_LAUNCH & set(c)] == []


def test_the_training_view_imports_first_or_second():
    """``training`` imports ``reader``; importing it first used to fail half-way because
    ``reader`` imported ``training`` back at its end."""
    loaded = _loaded_after("import mintdim_beam.reader.training\nfrom mintdim_beam.reader import CausalLMDataset\n"
                           "assert CausalLMDataset is mintdim_beam.reader.training.CausalLMDataset")
    assert "mintdim_beam.reader.training" in loaded and "apache_beam" not in loaded
    assert "mintdim_beam.reader.training" not in _loaded_after("import mintdim_beam.reader.dataset")
