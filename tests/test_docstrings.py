"""The examples in the docstrings of the installed package run and print what they say."""

import doctest
import importlib
import importlib.util
import pkgutil

import pytest

import pastixpy

#: Modules of an optional extra, and the package they need (skipped without it).
OPTIONAL = {"pastixpy.jax": "jax"}


def _modules():
    names = ["pastixpy"]
    for info in pkgutil.walk_packages(pastixpy.__path__, "pastixpy."):
        if not info.name.rsplit(".", 1)[-1].startswith("_") and info.name != "pastixpy.__main__":
            names.append(info.name)
    return sorted(names)


@pytest.mark.parametrize("name", _modules())
def test_docstring_examples(name):
    if name in OPTIONAL and importlib.util.find_spec(OPTIONAL[name]) is None:
        pytest.skip(f"{OPTIONAL[name]} is not installed")
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{name}: {result.failed} of {result.attempted} examples failed"
