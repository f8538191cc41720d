"""The README's Python examples run as written (the torch one where torch is installed)."""

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S) if README.exists() else []


def test_the_readme_has_python_examples():
    if not README.exists():
        pytest.skip("the tests run outside a checkout of the repository")
    assert len(BLOCKS) >= 3


@pytest.mark.parametrize("code", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_readme_example(code):
    if "import torch" in code:
        pytest.importorskip("torch", reason="torch is not installed: the torch example cannot run")
    exec(compile(code, str(README), "exec"), {})
