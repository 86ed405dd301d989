"""The package's layer contract, read from its source, and what importing a layer loads.

Every module of ``mintdim_beam`` is parsed with ``ast``; every import it makes (at the
top or inside a function, relative or absolute) is resolved to the package module it
names. Then:

* an importer's layer may import only the layers its rules allow (its own layer,
  ``version`` and the ones below), and no layer imports the package root;
* no two modules import each other through any chain, lazy imports counted;
* no module is over ``MAX_LINES`` lines;
* no private name (a leading underscore, ``__version__`` aside) is imported from
  another module of the package.

Every broken rule is listed in one assertion message. Separately, each pure layer is
imported module by module in a fresh interpreter, which must not load Beam.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import pytest

from conftest import REPO_ROOT

PACKAGE_DIR = REPO_ROOT / "mintdim_beam"
PACKAGE = "mintdim_beam"
MAX_LINES = 700

#: What each layer may import from the package, besides itself and ``version``.
ALLOWED = {
    "errors": set(),
    "format": {"errors"},
    "tokenization": {"errors", "format"},
    "storage": {"errors"},               # Beam only lazily, inside functions
    "core": {"errors", "format", "tokenization"},
    "reader": {"errors", "format", "tokenization", "storage"},
    "beam": {"errors", "format", "tokenization", "storage", "core"},
    "launch": {"errors", "format", "tokenization", "storage", "core", "beam"},
    "cli": {"errors", "format", "tokenization", "storage", "core", "beam", "launch", "reader"},
    "version": set(),
}
#: Layers whose modules must import without loading Beam.
PURE_LAYERS = ("errors", "format", "tokenization", "core", "reader", "storage")



@dataclass(frozen=True)
class Import:
    importer: str
    target: str          # the package module the import loads (its own name or its package)
    name: str | None     # the name taken from it (``from target import name``), if any
    line: int

    def where(self) -> str:
        return f"{self.importer}:{self.line}"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@lru_cache(maxsize=None)
def modules() -> dict:
    """``{module name: path}`` of every module of the package, packages as their ``__init__``."""
    return {_module_name(p): p for p in sorted(PACKAGE_DIR.rglob("*.py"))}


def _known(name: str) -> str:
    """The longest prefix of ``name`` that is a module of the package."""
    mods = modules()
    while name not in mods and "." in name:
        name = name.rsplit(".", 1)[0]
    return name


@lru_cache(maxsize=None)
def imports_of(module: str) -> tuple:
    """Every package import of ``module``, anywhere in its code."""
    path = modules()[module]
    is_package = path.name == "__init__.py"
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == PACKAGE or alias.name.startswith(PACKAGE + "."):
                    found.append(Import(module, _known(alias.name), None, node.lineno))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_package else module.split(".")[:-1]
                base = base[:len(base) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            if source != PACKAGE and not source.startswith(PACKAGE + "."):
                continue
            for alias in node.names:
                full = f"{source}.{alias.name}"
                if full in modules():
                    found.append(Import(module, full, alias.name, node.lineno))
                else:
                    found.append(Import(module, _known(source), alias.name, node.lineno))
    return tuple(found)


def layer(module: str) -> str:
    """``errors``, ``core``, ... ``version``; the package root is ``""``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def layer_violations() -> list:
    problems = []
    for module in modules():
        own = layer(module)
        if own == "":
            continue        # the root's lazy names point anywhere, by design
        if own not in ALLOWED:
            problems.append(f"{module}: not in any layer ({sorted(ALLOWED)})")
            continue
        for imp in imports_of(module):
            target = layer(imp.target)
            if target == "":
                problems.append(f"{imp.where()}: imports the package root ({imp.name}); "
                                f"import the module that defines it")
            elif target != own and target != "version" and target not in ALLOWED[own]:
                problems.append(f"{imp.where()}: layer {own} imports {imp.target} (layer {target}); "
                                f"{own} may import {sorted(ALLOWED[own]) or 'nothing'}")
    return problems


def private_imports() -> list:
    return [f"{imp.where()}: imports private name {imp.name} from {imp.target}"
            for module in modules() for imp in imports_of(module)
            if imp.name and imp.name.startswith("_") and imp.name != "__version__"
            and imp.target != module]


def import_graph() -> dict:
    return {m: {imp.target for imp in imports_of(m) if imp.target != m} for m in modules()}


def cycles() -> list:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    graph = import_graph()
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(graph) + 100))
    try:
        for v in sorted(graph):
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(limit)
    return sorted(found)


def _describe_cycle(component: list) -> str:
    graph = import_graph()
    edges = [f"{a} -> {b} (line {', '.join(str(i.line) for i in imports_of(a) if i.target == b)})"
             for a in component for b in sorted(graph[a]) if b in component]
    return "import cycle between " + ", ".join(component) + ":\n      " + "\n      ".join(edges)


def line_counts() -> dict:
    return {m: len(p.read_text(encoding="utf-8").splitlines()) for m, p in modules().items()}


def long_modules() -> list:
    return [f"{m}: {n} lines (at most {MAX_LINES})" for m, n in sorted(line_counts().items()) if n > MAX_LINES]


# --------------------------------------------------------------------------- the contract


def test_the_package_is_parsed_whole():
    """The checks below see every layer, and resolve imports to real modules."""
    mods = modules()
    assert {layer(m) for m in mods} == set(ALLOWED) | {""}
    assert "mintdim_beam.beam.transforms" in mods and "mintdim_beam.errors" in mods
    targets = {imp.target for imp in imports_of("mintdim_beam.beam.transforms")}
    assert {"mintdim_beam.core.blocks", "mintdim_beam.format.inputs", "mintdim_beam.storage.files"} <= targets
    # a lazy import inside a function counts too
    assert "mintdim_beam.core.digests" in targets


def test_the_layer_contract_holds():
    problems = layer_violations() + private_imports()
    problems += [_describe_cycle(c) for c in cycles()]
    problems += long_modules()
    assert not problems, f"{len(problems)} broken layer rule(s):\n  " + "\n  ".join(problems)


# --------------------------------------------------------------------------- what imports load


def _subprocess_env() -> dict:
    """This checkout's package first, whatever is installed (the subprocesses also run in
    ``REPO_ROOT``, which ``python -c`` puts first on its path)."""
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO_ROOT)] + ([path] if path else []))}


def _loaded_after(statement: str) -> set:
    code = f"import sys\n{statement}\nprint('\\n'.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env=_subprocess_env(), cwd=REPO_ROOT)
    return set(out.stdout.split())


_FIRST_BEAM = """
import importlib, json, sys
found = {}
for name in json.loads(sys.argv[1]):
    before = set(sys.modules)
    importlib.import_module(name)
    if "apache_beam" in set(sys.modules) - before:
        found[name] = sorted(m for m in set(sys.modules) - before if m.startswith("mintdim_beam."))
print(json.dumps(found))
"""


@pytest.mark.parametrize("pure", PURE_LAYERS)
def test_a_pure_layer_imports_without_beam(pure):
    """Each module of the layer, imported in turn in one fresh interpreter: none loads Beam."""
    names = [m for m in modules() if layer(m) == pure]
    assert names
    out = subprocess.run([sys.executable, "-c", _FIRST_BEAM, json.dumps(names)], capture_output=True,
                         text=True, env=_subprocess_env(), cwd=REPO_ROOT)
    assert out.returncode == 0, out.stderr
    loaded_beam = json.loads(out.stdout.strip().splitlines()[-1])
    assert loaded_beam == {}, "\n".join(f"importing {name} loaded apache_beam, with {mods}"
                                         for name, mods in loaded_beam.items())


BUILD_SIDE = ("apache_beam", "sentencepiece", "tokenizers", "mintdim_beam.launch.api", "mintdim_beam.core.config",
              "mintdim_beam.tokenization.adapters", "mintdim_beam.core.records", "mintdim_beam.launch.launcher",
              "mintdim_beam.beam.transforms")


def test_importing_the_reader_loads_no_beam_tokenizer_or_build_module():
    loaded = _loaded_after("import mintdim_beam.reader.dataset")
    assert "mintdim_beam.reader.dataset" in loaded
    assert sorted(m for m in loaded if m.split(".")[0] in ("apache_beam", "sentencepiece", "tokenizers")
                  or m in BUILD_SIDE) == []


def test_the_package_names_are_still_there_on_first_use():
    loaded = _loaded_after("import mintdim_beam\nassert callable(mintdim_beam.pipeline)")
    assert "mintdim_beam.launch.api" in loaded and "apache_beam" not in loaded


def test_the_training_view_imports_first_or_second():
    """Importing ``training`` first used to fail half-way, when the reader module imported
    ``training`` back at its end. (``reader.dataset`` now imports ``training`` at its top,
    which imports no ``dataset``: the cycle check above keeps it that way.)"""
    loaded = _loaded_after("import mintdim_beam.reader.training\nfrom mintdim_beam.reader import CausalLMDataset\n"
                           "assert CausalLMDataset is mintdim_beam.reader.training.CausalLMDataset")
    assert "mintdim_beam.reader.training" in loaded and "apache_beam" not in loaded
    loaded = _loaded_after("import mintdim_beam.reader.dataset\nimport mintdim_beam.reader.training\n"
                           "from mintdim_beam.reader import CausalLMDataset, open_output\n"
                           "assert CausalLMDataset is mintdim_beam.reader.training.CausalLMDataset")
    assert "mintdim_beam.reader.dataset" in loaded and "apache_beam" not in loaded
