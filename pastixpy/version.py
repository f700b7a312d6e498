"""The package's version (pyproject.toml has the same), in a module of its own so that
the modules below the facade can read it (saved files record it)."""

__version__ = "0.1.0"
