"""The multilevel options in the package's grammar, ``'name'`` or ``('name', {kwargs})``:
each option's names, the parameters each name takes, their defaults and their checks."""

from numbers import Integral, Real

from ..errors import OptionError
from ..options import parse_option


def parse(value, spec, argname):
    """Parse an option and fill in the defaults of its parameters.

    Parameters
    ----------
    value : str or (str, dict)
        The option as given.
    spec : dict
        ``{name: {parameter: (default, check)}}``; ``check(value, label)`` returns the
        validated value or raises :class:`~pastixpy.errors.OptionError`.
    argname : str
        The argument's name, for messages.

    Returns
    -------
    name : str
    params : dict
        Every parameter of ``name``, given or defaulted.

    Examples
    --------
    >>> spec = {"jacobi": {"omega": (0.6, positive_float)}}
    >>> parse(("jacobi", {"omega": 0.8}), spec, "smoother")
    ('jacobi', {'omega': 0.8})
    """
    name, given = parse_option(value, {n: set(params) for n, params in spec.items()}, argname)
    params = {}
    for key, (default, check) in spec[name].items():
        params[key] = check(given[key], f"{argname} {name!r}: {key}") if key in given else default
    return name, params


def positive_int(value, label):
    if isinstance(value, bool) or not isinstance(value, Integral) or value < 1:
        raise OptionError(f"{label} must be an integer >= 1, got {value!r}")
    return int(value)


def nonnegative_int(value, label):
    if isinstance(value, bool) or not isinstance(value, Integral) or value < 0:
        raise OptionError(f"{label} must be an integer >= 0, got {value!r}")
    return int(value)


def positive_float(value, label):
    if isinstance(value, bool) or not isinstance(value, Real) or not 0 < value < float("inf"):
        raise OptionError(f"{label} must be a positive number, got {value!r}")
    return float(value)


def nonnegative_float(value, label):
    if isinstance(value, bool) or not isinstance(value, Real) or not 0 <= value < float("inf"):
        raise OptionError(f"{label} must be a number >= 0, got {value!r}")
    return float(value)


def above_one(value, label):
    value = positive_float(value, label)
    if not value > 1.0:
        raise OptionError(f"{label} must be a number above 1, got {value!r}")
    return value


def fraction(value, label):
    """A number in (0, 1]."""
    if isinstance(value, bool) or not isinstance(value, Real) or not 0 < value <= 1:
        raise OptionError(f"{label} must be a number in (0, 1], got {value!r}")
    return float(value)


def one_of(*choices):
    """A check accepting exactly the given values."""

    def check(value, label):
        if value not in choices:
            raise OptionError(f"{label} must be one of {list(choices)}, got {value!r}")
        return value

    return check


def optional(check):
    """A check that also accepts None."""

    def wrapped(value, label):
        return None if value is None else check(value, label)

    return wrapped


def grid_shape(value, label):
    """A tuple of 1 to 3 positive grid sizes."""
    try:
        shape = tuple(value)
    except TypeError:
        raise OptionError(f"{label} must be a tuple of grid sizes, got {value!r}") from None
    if not 1 <= len(shape) <= 3 or not all(
        isinstance(s, Integral) and not isinstance(s, bool) and s >= 1 for s in shape
    ):
        raise OptionError(f"{label} must be 1 to 3 positive integers, got {value!r}")
    return tuple(int(s) for s in shape)
