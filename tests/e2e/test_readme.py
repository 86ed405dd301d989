"""The README's training example runs as written, on the bundled demo.

The example is what a new user copies first; it goes stale silently when the reader's
API moves. It is taken from the README itself (the Python block that starts with
``import torch``), run in a fresh interpreter from a directory holding the demo build
at the path the README names, and must reach a finite loss. Skipped without PyTorch.
"""

from __future__ import annotations

import math
import re
import subprocess
import sys

import pytest

from conftest import REPO_ROOT
from mintdim_beam.cli.commands import main

README = REPO_ROOT / "README.md"


def _training_example() -> str:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    found = [b for b in blocks if b.startswith("import torch\n")]
    assert len(found) == 1, "the README has one training example starting with 'import torch'"
    return found[0]


def test_readme_training_example_runs_on_the_demo(tmp_path):
    pytest.importorskip("torch")
    code = _training_example()
    assert main(["demo", str(tmp_path / "artifacts" / "demo"), "--quiet"]) == 0
    # DataLoader workers start by fork or spawn; a main guard keeps both working.
    script = "if __name__ == '__main__':\n" + "".join(f"    {line}\n" for line in code.splitlines())
    script += "    print('loss', float(loss.detach()))\n"
    (tmp_path / "example.py").write_text(script, encoding="utf-8")
    done = subprocess.run([sys.executable, "example.py"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    loss = float(done.stdout.strip().splitlines()[-1].split()[1])
    assert math.isfinite(loss) and loss > 0
