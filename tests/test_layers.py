"""The import graph of ``pastixpy/``: no circle anywhere, and every import runs down the
layers of docs/design.md ("Layers"), never up.

Read from the source with :mod:`ast` (no module is imported), imports inside functions
included: a late import is a dependency all the same. The package's ``__init__`` files
that only gather names for users are the facade, outside the layers.
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "pastixpy"

#: The layers, top to bottom (docs/design.md lists the same): a module imports modules
#: of its own layer or of the layers below it. Entries are module names under
#: ``pastixpy``; a package's name stands for all its modules.
LAYERS = [
    ("front ends", ["__main__", "cli"]),
    ("user surface", ["api", "multilevel", "jax"]),
    ("distributed backend", ["distributed"]),
    ("handle", ["factorization", "determinants", "selected_inverse"]),
    ("pipeline", ["pipeline", "budget"]),
    ("solve", ["solve", "solve_policy", "refine", "krylov", "simplicial"]),
    ("numeric", ["numeric"]),
    (
        "analysis",
        ["analysis", "symbolic", "clusters", "ordering", "ordering_methods", "preprocess"],
    ),
    (
        "foundations",
        [
            "options",
            "compression",
            "kinds",
            "matrix",
            "norms",
            "memory",
            "runtime",
            "permutation",
            "persist",
            "version",
            "schur",
            "io",
            "errors",
            "gallery",
            "_graph",
            "_numeric",
            "_symbolic",
            "_amd",
            "_matching",
            "_simplicial",
            "_simplicial_ldl",
            "_selinv",
            "_colamd",
        ],
    ),
]

#: Facade modules: they import from every layer to offer the names to users.
FACADES = {"pastixpy"}

#: The compiled modules (setup.py's extensions), kernels at the bottom.
COMPILED = (
    "_numeric",
    "_symbolic",
    "_graph",
    "_amd",
    "_matching",
    "_simplicial",
    "_simplicial_ldl",
    "_selinv",
    "_colamd",
)


def modules():
    """Every module of the package: dotted name -> path."""
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    for name in COMPILED:
        found[f"pastixpy.{name}"] = None
    return found


def imports_of(name, path, known):
    """The package's modules that module ``name`` (at ``path``) imports."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package
            for _ in range(node.level - 1):
                base = base.rpartition(".")[0]
            mod = node.module or ""
            if node.level:
                mod = f"{base}.{mod}" if mod else base
            # "from . import x" names a submodule where one exists.
            targets = [f"{mod}.{a.name}" if f"{mod}.{a.name}" in known else mod for a in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target.startswith("pastixpy") and target != name:
                out.add(target)
    return out


def graph():
    known = modules()
    return {name: imports_of(name, path, known) for name, path in known.items() if path}


def layer_of(name):
    """The layer index of a dotted module name (the longest entry that covers it)."""
    rest = name.split(".", 1)[1] if "." in name else ""
    best, index = "", None
    for i, (_, entries) in enumerate(LAYERS):
        for entry in entries:
            if (rest == entry or rest.startswith(entry + ".")) and len(entry) > len(best):
                best, index = entry, i
    return index


def circles(edges):
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def test_the_reader_sees_the_imports_it_must():
    """The graph reader itself: imports it must find (relative, from-package, late)."""
    g = graph()
    assert "pastixpy.pipeline" in g["pastixpy.factorization"]
    assert "pastixpy.numeric.factorize" in g["pastixpy.numeric.backend"]
    assert "pastixpy.factorization" in g["pastixpy.distributed"]
    assert "pastixpy.distributed" in g["pastixpy.api"]


def test_no_import_circle():
    found = circles(graph())
    assert not found, f"import circles: {found}"


def test_every_module_has_a_layer():
    missing = [m for m in graph() if m not in FACADES and layer_of(m) is None]
    assert not missing, f"put these modules in a layer of LAYERS and docs/design.md: {missing}"


def test_imports_run_down_the_layers():
    upward = []
    for name, targets in graph().items():
        if name in FACADES:
            continue
        for target in targets:
            if target in FACADES:
                upward.append(f"{name} imports the facade {target}")
            elif layer_of(target) < layer_of(name):
                upward.append(
                    f"{name} ({LAYERS[layer_of(name)][0]}) imports {target} "
                    f"({LAYERS[layer_of(target)][0]})"
                )
    assert not upward, "imports up the layers:\n" + "\n".join(sorted(upward))


@pytest.mark.parametrize("layer", [name for name, _ in LAYERS])
def test_the_design_page_lists_the_layers(layer):
    """docs/design.md shows each layer with the same modules."""
    text = (ROOT / "docs" / "design.md").read_text()
    entries = dict(LAYERS)[layer]
    line = f"| {layer} | " + ", ".join(f"`{e}`" for e in entries) + " |"
    assert line in text, f"docs/design.md's layer table lacks the row {line!r}"


def test_the_reader_finds_a_circle():
    """The circle finder on a made-up graph: a -> b -> c -> a, and d apart."""
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
