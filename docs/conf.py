"""Sphinx configuration of pastixpy's documentation site: the API reference (autodoc and
numpydoc over the public modules), the Markdown pages of docs/ as guides (MyST), and a
page per script of examples/.

Build it from the repository's root (``pip install ".[docs]"`` first)::

    python -m sphinx -W --keep-going -b html docs docs/_build/html
"""

import ast
import importlib.util
import sys
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.directives.code import container_wrapper
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
# autodoc imports the package. A checkout built in place (pip install -e .) is that
# package; an unbuilt one (pip install . put the package elsewhere) would shadow it,
# being first on the path under `python -m sphinx` from the root, so it leaves the path.
if any((ROOT / "pastixpy" / f"_numeric{s}").exists() for s in EXTENSION_SUFFIXES):
    sys.path.insert(0, str(ROOT))
else:
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != ROOT]

import pastixpy  # noqa: E402

logger = logging.getLogger(__name__)

project = "pastixpy"
author = "the pastixpy developers"
copyright = "the pastixpy developers"
release = pastixpy.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "numpydoc",
    "myst_parser",
    "sphinxarg.ext",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]

# The guides are the Markdown pages that README.md links to on GitHub; their in-page
# links (solve.md#a-memory-budget) need the headings' anchors.
myst_heading_anchors = 3

# The API: autodoc fills the pages of api/, numpydoc reads the docstrings' sections.
# Each page lists its members with autodoc itself, so numpydoc's member tables are off.
autodoc_member_order = "bysource"
autodoc_default_options = {"members": True, "show-inheritance": True}
autodoc_typehints = "none"
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
autosummary_generate = False

# pastixpy.jax needs jax, an optional dependency: without it, autodoc documents the
# module against a stand-in of jax.
autodoc_mock_imports = [] if importlib.util.find_spec("jax") else ["jax", "jaxlib"]

html_theme = "furo"
html_title = f"pastixpy {release}"


# The gallery: one page per script of examples/, its docstring as the text and its code
# below (the scripts are run by tests/test_examples.py, not by this build).
EXAMPLES = ROOT / "examples"
GALLERY = DOCS / "examples"


def _example_page(script):
    """The reST of one example's page and the first paragraph of its docstring."""
    doc = ast.get_docstring(ast.parse(script.read_text(encoding="utf-8"))) or ""
    summary = " ".join(doc.split("\n\n", 1)[0].split())
    title = script.name
    text = "\n".join(
        [
            f".. _example-{script.stem}:",
            "",
            title,
            "=" * len(title),
            "",
            doc,
            "",
            f".. pastixpy-example:: {script.name}",
            "",
        ]
    )
    return text, summary


def _write_gallery():
    """Write docs/examples/ (generated, not committed) from examples/*.py."""
    GALLERY.mkdir(exist_ok=True)
    scripts = sorted(EXAMPLES.glob("*.py"))
    entries = []
    for script in scripts:
        text, summary = _example_page(script)
        page = GALLERY / f"{script.stem}.rst"
        # Rewritten only when changed, so that an incremental build stays incremental.
        if not page.exists() or page.read_text(encoding="utf-8") != text:
            page.write_text(text, encoding="utf-8")
        entries.append((script, summary))
    for stale in set(GALLERY.glob("*.rst")) - {GALLERY / f"{s.stem}.rst" for s in scripts}:
        if stale.name != "index.rst":
            stale.unlink()
    lines = [
        "Examples",
        "========",
        "",
        "Runnable scripts from the repository's ``examples/`` folder: each runs as",
        "``python examples/NAME.py`` and prints what it measures (the test suite runs them",
        "all). Each page shows the script's docstring, then its code.",
        "",
        ".. toctree::",
        "   :hidden:",
        "",
        *[f"   {s.stem}" for s, _ in entries],
        "",
        *[f"* :doc:`{s.name} <{s.stem}>` — {summary}" for s, summary in entries],
        "",
    ]
    index = GALLERY / "index.rst"
    text = "\n".join(lines)
    if not index.exists() or index.read_text(encoding="utf-8") != text:
        index.write_text(text, encoding="utf-8")


_write_gallery()


class ExampleCode(SphinxDirective):
    """``.. pastixpy-example:: NAME.py``: the code of a script of examples/ below its
    docstring, which the page gives as text."""

    required_arguments = 1
    option_spec = {"caption": directives.unchanged}

    def run(self):
        script = EXAMPLES / self.arguments[0]
        self.env.note_dependency(str(script))
        source = script.read_text(encoding="utf-8")
        tree = ast.parse(source)
        start = tree.body[0].end_lineno if ast.get_docstring(tree) else 0
        code = "\n".join(source.splitlines()[start:]).strip("\n")
        block = nodes.literal_block(code, code, language="python")
        self.set_source_info(block)
        if "caption" in self.options:
            return [container_wrapper(self, block, self.options["caption"])]
        return [block]


class CliEpilog(SphinxDirective):
    """The epilog of the command line's subcommands (the built-in problems) as the
    terminal shows it: it is preformatted text, which sphinx-argparse would read as
    reST."""

    def run(self):
        from pastixpy.cli import _examples_epilog

        return [nodes.literal_block(text=_examples_epilog())]


def _all_documented(app, env):
    """Every name of ``pastixpy.__all__`` has an entry in the API reference: a warning
    (an error under -W) names any that a new export left out."""
    documented = env.get_domain("py").objects
    for name in pastixpy.__all__:
        obj = getattr(pastixpy, name)
        where = {f"pastixpy.{name}", f"{obj.__module__}.{obj.__qualname__}"}
        if not where & documented.keys():
            logger.warning(f"pastixpy.{name} (in pastixpy.__all__) is in no page of docs/api/")


def setup(app):
    app.connect("env-check-consistency", _all_documented)
    app.add_directive("pastixpy-cli-epilog", CliEpilog)
    app.add_directive("pastixpy-example", ExampleCode)
