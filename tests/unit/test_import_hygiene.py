"""Import hygiene (#13 item 4): no import circles among Talkthrough's modules, and the MCP server and the
Dagster-free core never pull in Dagster.

The circle check is static: every ``import`` in every module, function-local ones included (a circle
hidden in a function still couples the two modules), read with ``ast``."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("talkthrough_assets", "talkthrough_mcp")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))}


def _imports(name: str, path: Path) -> set[str]:
    """Every module ``path`` names in an import (absolute, or relative resolved against ``name``)."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            out.add(target)
            out.update(f"{target}.{a.name}" for a in node.names)  # `from . import store` names a module
    return out


def import_graph() -> dict[str, set[str]]:
    mods = _modules()
    return {name: {m for m in _imports(name, path) if m in mods and m != name} for name, path in mods.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_cycle_finder_finds_a_circle_hidden_in_a_function(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "a.py").write_text("from . import b\n")
    (pkg / "b.py").write_text("def f():\n    from .a import x\n")
    (pkg / "c.py").write_text("import pkg.a\n")
    graph = {f"pkg.{p.stem}": {m for m in _imports(f"pkg.{p.stem}", p) if m.startswith("pkg.")}
             for p in pkg.glob("*.py")}
    assert graph["pkg.b"] == {"pkg.a", "pkg.a.x"}
    assert cycles({k: {m for m in v if m in graph} for k, v in graph.items()}) == [["pkg.a", "pkg.b"]]


def test_no_import_circles_among_talkthrough_modules():
    graph = import_graph()
    assert "talkthrough_assets.defs.assets" in graph and "talkthrough_mcp.server" in graph
    assert cycles(graph) == []


def _dagster_modules_after_import(modules: list[str]) -> list[str]:
    code = ("import importlib, json, sys\n"
            f"for m in {modules!r}:\n"
            "    importlib.import_module(m)\n"
            "print(json.dumps(sorted(k for k in sys.modules if k.split('.')[0].startswith('dagster'))))\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_importing_talkthrough_mcp_does_not_import_dagster():
    assert _dagster_modules_after_import(["talkthrough_mcp"]) == []


def test_the_mcp_server_and_all_its_modules_do_not_import_dagster():
    mods = sorted(m for m in _modules() if m.startswith("talkthrough_mcp") and m != "talkthrough_mcp.__main__")
    assert "talkthrough_mcp.server" in mods
    assert _dagster_modules_after_import(mods) == []


@pytest.mark.parametrize("module", ["talkthrough_assets.pipeline.scheduler", "talkthrough_assets.pipeline.engines",
                                    "talkthrough_assets.pipeline.dropdir", "talkthrough_assets.pipeline.registry"])
def test_the_dagster_free_core_does_not_import_dagster(module):
    """pipeline (the stage runners), the engines, the drop-folder logic and registration take plain objects."""
    assert _dagster_modules_after_import([module]) == []


# The layers, bottom up (docs/architecture.md "Layers"): each is a folder of talkthrough_assets, and a module
# imports only from its own folder or one below. The MCP server (talkthrough_mcp) sits on top of the read model and
# may import core, store, stages and read only; talkthrough_assets never imports talkthrough_mcp.
FOLDERS = ("core", "store", "model", "stages", "read", "pipeline", "defs", "app", "cli")
RANK = {name: i for i, name in enumerate(FOLDERS)} | {"mcp": len(FOLDERS)}
MCP_MAY_IMPORT = {"core", "store", "model", "read"}


def layer_of(module: str) -> str:
    parts = module.split(".")
    if parts[0] == "talkthrough_mcp":
        return "mcp"
    if module == "talkthrough_assets":  # the package root: __version__ and one environment default, no imports
        return "core"
    if module == "talkthrough_assets.definitions":  # Dagster's entry module: assembles defs/
        return "defs"
    assert parts[1] in FOLDERS, f"{module} sits in no layer folder: move it into one of {FOLDERS}"
    return parts[1]


def test_every_module_sits_in_a_layer_folder():
    tops = sorted(p.name for p in (ROOT / "talkthrough_assets").iterdir()
                  if p.suffix == ".py" or (p.is_dir() and (p / "__init__.py").exists()))
    assert tops == sorted(["__init__.py", "definitions.py", *FOLDERS])
    for mod in import_graph():
        layer_of(mod)


def test_modules_import_only_from_their_layer_or_below():
    bad = []
    for mod, deps in import_graph().items():
        for dep in deps:
            lm, ld = layer_of(mod), layer_of(dep)
            if RANK[ld] > RANK[lm]:
                bad.append(f"{mod} ({lm}) imports {dep} ({ld})")
            if lm == "mcp" and ld not in MCP_MAY_IMPORT | {"mcp"}:
                bad.append(f"{mod} (MCP: {sorted(MCP_MAY_IMPORT)} only) imports {dep}")
    assert bad == []


def test_the_two_packages_depend_one_way():
    graph = import_graph()
    upward = sorted(f"{m} imports {d}" for m, deps in graph.items() if m.startswith("talkthrough_assets")
                    for d in deps if d.startswith("talkthrough_mcp"))
    assert upward == []
    assert any(d.startswith("talkthrough_assets") for d in graph["talkthrough_mcp.server"])


def test_the_upward_check_catches_an_upward_import():
    assert RANK[layer_of("talkthrough_assets.cli.main")] > RANK[layer_of("talkthrough_assets.stages.ocr")]
    assert layer_of("talkthrough_assets.definitions") == "defs" and layer_of("talkthrough_mcp.server") == "mcp"
    with pytest.raises(AssertionError):
        layer_of("talkthrough_assets.somewhere_else")


MAX_LINES = 400


def test_modules_stay_readable():
    long = sorted(f"{p.relative_to(ROOT)}: {n}" for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")
                  if (n := len(p.read_text().splitlines())) > MAX_LINES)
    assert long == [], f"modules over {MAX_LINES} lines"


HEAVY = ("dagster", "faster_whisper", "ctranslate2", "rapidocr", "onnxruntime", "sherpa_onnx", "av", "cv2", "duckdb",
         "sqlalchemy", "alembic", "talkthrough_mcp")


@pytest.mark.parametrize("argv", [["--help"], ["process", "--help"]])
def test_the_cli_help_imports_no_engine_nor_dagster(argv):
    """`talkthrough --help` (and a command's) loads no model runtime, media library nor Dagster: those are imported
    when a run needs them (issue #33 item 3: the cold start)."""
    code = ("import json, sys\n"
            f"sys.argv = ['talkthrough', *{argv!r}]\n"
            "from talkthrough_assets.cli.main import app\n"
            "try:\n    app()\nexcept SystemExit:\n    pass\n"
            f"print(json.dumps(sorted({{k.split('.')[0] for k in sys.modules}} & set({HEAVY!r}))))\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "Usage" in out.stdout
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []
