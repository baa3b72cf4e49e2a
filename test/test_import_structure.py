"""The package's structure, read from its imports: no cycles, and no import against the layers.

Every `import` of a react_ros module by another, at module level or inside a function,
TYPE_CHECKING ones included (a type is a dependency too), is an arrow. Two rules:

- no cycle: no two modules import each other, however indirectly;
- layers, lowest first (README "Layout"; format readers -> kinds -> sinks -> CLI, ROS
  helpers beside): a module imports only from its own layer or below.

KNOWN lists the arrows that still run upward, each with why; issue 40 removes them.
"""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / 'react_ros'
LAYERS = [
    {'', 'errors', 'streams', 'options', 'progress', 'output',  # the root: errors, time,
     'play_options', 'convert_options'},  # where writers may write, the stop flag, and
    # what each command is asked for (one options type per command)
    {'formats'},                                        # file readers, no ROS
    {'ros'},                                            # small ROS helpers
    {'adapters', 'samples'},                            # the adapter interface, builders
    {'kinds'},                                          # one folder per dataset
    {'registry'},                                       # finds the kinds
    {'info', 'sinks'},                                  # what consumes an episode's streams
    {'rosbag2', 'preview', 'release', 'launch_args'},  # rosbag2: bags, read and written
    {'play', 'node'},
    {'cli'},
    {'kit'},                                            # test tooling: may run the CLI
]
KNOWN: dict[tuple[str, str], str] = {}  # (from, to): why; empty since issue 40


def _module(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix('').parts)
    return '.'.join(parts[:-1] if parts[-1] == '__init__' else parts)


def _modules() -> dict[str, Path]:
    return {_module(p): p for p in PACKAGE.rglob('*.py') if 'template' not in p.parts}


def _arrows() -> dict[str, set[str]]:
    mods = _modules()

    def known(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition('.')[0]
        return name or None
    arrows: dict[str, set[str]] = {}
    for mod, path in mods.items():
        out: set[str | None] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                out |= {known(a.name) for a in node.names if a.name.startswith('react_ros')}
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = mod.split('.')[:len(mod.split('.')) - node.level
                                           + (path.name == '__init__.py')]
                    full = '.'.join(base + ([node.module] if node.module else []))
                else:
                    full = node.module or ''
                if full.startswith('react_ros'):
                    for a in node.names:  # a submodule imported by name is that module
                        sub = f'{full}.{a.name}'
                        out.add(sub if sub in mods else known(full))
        arrows[mod] = {m for m in out if m and m != mod}
    return arrows


def _layer(mod: str) -> int:
    top = mod.split('.')[1] if '.' in mod else ''
    return next(i for i, names in enumerate(LAYERS) if top in names)


def test_every_module_has_a_layer() -> None:
    tops = {m.split('.')[1] if '.' in m else '' for m in _modules()}
    assert tops <= set().union(*LAYERS), sorted(tops - set().union(*LAYERS))


def test_no_cycle() -> None:
    arrows = _arrows()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in arrows[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))
    for v in sorted(arrows):
        if v not in index:
            visit(v)
    assert cycles == [], cycles


def test_no_import_runs_up_the_layers() -> None:
    up = sorted((m, o) for m, outs in _arrows().items() for o in outs
                if _layer(o) > _layer(m) and (m, o) not in KNOWN)
    assert up == [], '\n'.join(f'{m} -> {o}' for m, o in up)


def test_every_known_exception_still_exists() -> None:
    """An exception that no longer holds is taken off the list."""
    arrows = _arrows()
    gone = [pair for pair in KNOWN if pair[1] not in arrows.get(pair[0], set())]
    assert gone == [], gone
