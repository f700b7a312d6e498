"""One grammar for options: ``'name'`` or ``('name', {kwargs})``, parsed in one place; the
default of the ``threads`` options."""

import os

from .errors import OptionError


def available_cores():
    """Cores this process may run on: the default of every ``threads`` option."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


def parse_option(value, choices, argname):
    """Split an option into its name and keyword arguments, and validate both.

    Parameters
    ----------
    value : str or tuple of (str, dict)
        ``'name'`` or ``('name', {kwargs})``.
    choices : dict
        Maps each accepted name to the set of keyword arguments it accepts.
    argname : str
        Name of the argument, used in error messages.

    Returns
    -------
    name : str
    kwargs : dict

    Examples
    --------
    >>> parse_option(("metis", {"seed": 3}), {"metis": {"seed"}}, "ordering")
    ('metis', {'seed': 3})
    """
    if isinstance(value, str):
        name, kwargs = value, {}
    elif (
        isinstance(value, tuple)
        and len(value) == 2
        and isinstance(value[0], str)
        and isinstance(value[1], dict)
    ):
        name, kwargs = value[0], dict(value[1])
    else:
        raise OptionError(
            f"{argname}={value!r} is not understood: give a name or a (name, {{kwargs}}) pair, "
            f"with name one of {sorted(choices)}"
        )
    if name not in choices:
        raise OptionError(f"unknown {argname} {name!r}: choose one of {sorted(choices)}")
    unknown = set(kwargs) - set(choices[name])
    if unknown:
        allowed = sorted(choices[name]) or "none"
        raise OptionError(
            f"{argname} {name!r} got unknown parameter(s) {sorted(unknown)}; accepted: {allowed}"
        )
    return name, kwargs
