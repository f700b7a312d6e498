"""How much memory this process may still take, and the check made before the factors
are allocated.

Three limits can stop an allocation, and the smallest counts: the address-space
limit (``ulimit -v``, RLIMIT_AS) less the address space already mapped, the
memory cgroup's limit less its usage (containers, batch schedulers), and the
system's available memory plus free swap. Linux only; elsewhere nothing is
known and nothing is refused.
"""

import math
import os
import re
import resource
from dataclasses import dataclass
from numbers import Integral, Real
from pathlib import Path

from .errors import OptionError, OutOfMemoryError

#: A cgroup "limit" this large means no limit (cgroup v1 reports 2⁶³ rounded to pages).
_NO_LIMIT = 2**60


@dataclass(frozen=True)
class Headroom:
    """Bytes this process may still allocate, and which limit sets that figure
    (``address_space``: the address-space limit, against which mappings count whether
    or not their pages are ever used)."""

    bytes: int
    limit: str
    address_space: bool = False


#: The units :func:`parse_bytes` reads (any case): decimal (kB, MB, GB, TB: powers of
#: 1000) and binary (KiB, MiB, GiB, TiB: powers of 1024) multiples of a byte.
BYTE_UNITS = {
    "b": 1,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
}

_SIZE = re.compile(r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z]*)\s*")


def parse_bytes(value, argname="memory_limit"):
    """A size in bytes: a positive number of bytes, or a string such as ``"8GiB"``,
    ``"512MiB"``, ``"2.5GB"`` or ``"1000000"`` (units: :data:`BYTE_UNITS`).

    Raises
    ------
    OptionError
        Naming ``argname``, for anything else (zero, a negative or fractional count of
        bytes, an unknown unit).

    Examples
    --------
    >>> parse_bytes("512MiB"), parse_bytes("2.5GB"), parse_bytes(4096)
    (536870912, 2500000000, 4096)
    """
    hint = "give a number of bytes or a size such as '8GiB', '512MiB' or '2.5GB'"
    if isinstance(value, str):
        match = _SIZE.fullmatch(value)
        unit = match.group(2).lower() if match else None
        if match is None or (unit and unit not in BYTE_UNITS):
            raise OptionError(
                f"{argname}={value!r} is not a size: {hint} (units: B, kB, MB, GB, TB, "
                "KiB, MiB, GiB, TiB)"
            )
        nbytes = float(match.group(1)) * BYTE_UNITS[unit or "b"]
    elif isinstance(value, Real) and not isinstance(value, bool):
        nbytes = float(value)
        if isinstance(value, Integral):
            nbytes = int(value)
        elif math.isfinite(nbytes) and nbytes != int(nbytes):
            raise OptionError(f"{argname}={value!r} is not a whole number of bytes: {hint}")
    else:
        raise OptionError(f"{argname}={value!r} is not a size: {hint}")
    if not (math.isfinite(nbytes) and nbytes >= 1):
        raise OptionError(f"{argname}={value!r} must be a finite size of at least one byte: {hint}")
    return int(nbytes)


def headroom():
    """The :class:`Headroom` of this process, or None where no limit is known."""
    found = [h for h in (_address_space(), _cgroup(), _system()) if h is not None]
    return min(found, key=lambda h: h.bytes) if found else None


def address_space_limited():
    """Whether an address-space limit (``ulimit -v``) is set."""
    return _address_space() is not None


def address_space_room():
    """Bytes of address space this process may still map under ``ulimit -v``, or None
    where it has no such limit."""
    room = _address_space()
    return None if room is None else room.bytes


def check_memory(needed, what, advice, reserve=0, detail=""):
    """Raise :class:`OutOfMemoryError` when ``needed`` bytes exceed the headroom.

    ``what`` names the allocation (``"the factors"``), ``advice`` says what to try,
    ``detail`` (optional) what the figure is made of. ``reserve`` bytes of address
    space come on top under an address-space limit only (threads' stacks and buffers:
    mapped, mostly never touched). Returns the headroom (None where no limit is known).
    """
    room = headroom()
    if room is not None and needed > room.bytes:
        raise _refused(needed, 0, room, what, advice, detail)
    space = _address_space() if reserve else None
    if space is not None and needed + reserve > space.bytes:
        raise _refused(needed, reserve, space, what, advice, detail)
    return room


def _refused(needed, reserve, room, what, advice, detail):
    extra = f" and {_gib(reserve)} of threads' address space" if reserve else ""
    return OutOfMemoryError(
        f"{what} need {_gib(needed)}{extra} but this process may take only "
        f"{_gib(room.bytes)} more ({room.limit})"
        + (f" [{detail}]" if detail else "")
        + f"; {advice}",
        needed=needed + reserve,
        available=room.bytes,
    )


def stack_bytes():
    """A new thread's stack: glibc gives it the soft stack limit (8 MiB where that is
    unlimited)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_STACK)
    return 8 * 2**20 if soft == resource.RLIM_INFINITY else int(soft)


def _gib(nbytes):
    return f"{nbytes / 2**30:.2f} GiB"


def _address_space():
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY:
        return None
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    mapped = pages * os.sysconf("SC_PAGE_SIZE")
    return Headroom(max(0, soft - mapped), f"address-space limit {_gib(soft)}, ulimit -v", True)


def _cgroup():
    """Limit less usage of this process's memory cgroup (v2, else v1), when limited."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        hid, controllers, path = (line.split(":", 2) + ["", ""])[:3]
        if hid == "0" and controllers == "":
            found = _cgroup_files("/sys/fs/cgroup", path, "memory.max", "memory.current")
            if found is None:
                found = _cgroup_files(
                    "/sys/fs/cgroup/unified", path, "memory.max", "memory.current"
                )
        elif "memory" in controllers.split(","):
            found = _cgroup_files(
                "/sys/fs/cgroup/memory", path, "memory.limit_in_bytes", "memory.usage_in_bytes"
            )
        else:
            continue
        if found is not None:
            return found
    return None


def _cgroup_files(root, path, limit_name, usage_name):
    """The tightest limit less usage from the cgroup's folder up to the root (inside a
    container the folder may be mounted as the root itself)."""
    best = None
    folder = Path(root + path)
    candidates = [folder, *folder.parents] if folder.is_dir() else [Path(root)]
    for d in candidates:
        if not str(d).startswith(root):
            break
        try:
            raw = (d / limit_name).read_text().strip()
            usage = int((d / usage_name).read_text().strip())
        except (OSError, ValueError):
            continue
        if raw == "max" or int(raw) >= _NO_LIMIT:
            continue
        limit = int(raw)
        room = Headroom(max(0, limit - usage), f"memory cgroup limit {_gib(limit)}")
        if best is None or room.bytes < best.bytes:
            best = room
    return best


def _system():
    try:
        info = dict(line.split(":", 1) for line in Path("/proc/meminfo").read_text().splitlines())
        kib = int(info["MemAvailable"].split()[0]) + int(info.get("SwapFree", "0 kB").split()[0])
    except (OSError, ValueError, KeyError):
        return None
    return Headroom(kib * 1024, "the system's available memory and free swap")
