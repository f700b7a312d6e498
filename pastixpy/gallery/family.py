"""The seeded family of Helmholtz test problems: named combinations of a discretization, a
boundary treatment and a medium, each built at any wavenumber by :func:`helmholtz_problem`.

A member's name is ``helm{2d,3d}-SCHEME-MEDIUM``:

* SCHEME: ``fd-abc``, ``fd-pml`` (5/7-point finite differences), ``p1l-abc``,
  ``p1c-abc``, ``p1c-pml``, ``p2l-abc``, ``p2c-abc``, ``p2c-pml`` (P1/P2 triangles, lumped
  or consistent mass), the absorbing boundary condition or a PML of one wavelength;
* MEDIUM: ``const``, ``wedge``, ``marm`` (Marmousi-like), ``grfLL-sS`` (the Gaussian
  random field of correlation length ``0.LL`` and seed S, contrast 3).

The choice, 50 members in 2D and 8 in 3D rather than the full cross product: every 2D
scheme in the constant, wedge, Marmousi-like media and one random field (``grf10-s0``);
the other random fields (seeds 1–4 at correlation 0.1, seeds 0–4 at 0.05) with the two
extreme schemes only, ``fd-abc`` (the cheapest, the existing benchmarks') and ``p2c-pml``
(the most accurate); in 3D, finite differences with either boundary in the constant
medium and three random fields.
"""

from dataclasses import dataclass, field

from .helmholtz import helmholtz_problem

#: The discretization and boundary of each scheme (a member's name's middle part).
SCHEMES = {
    "fd-abc": dict(discretization="fd", boundary="abc"),
    "fd-pml": dict(discretization="fd", boundary="pml"),
    "p1l-abc": dict(discretization="p1", mass="lumped", boundary="abc"),
    "p1c-abc": dict(discretization="p1", mass="consistent", boundary="abc"),
    "p1c-pml": dict(discretization="p1", mass="consistent", boundary="pml"),
    "p2l-abc": dict(discretization="p2", mass="lumped", boundary="abc"),
    "p2c-abc": dict(discretization="p2", mass="consistent", boundary="abc"),
    "p2c-pml": dict(discretization="p2", mass="consistent", boundary="pml"),
}

_SCHEME_WORDS = {
    "fd": "finite differences",
    "p1l": "P1, lumped mass",
    "p1c": "P1, consistent mass",
    "p2l": "P2, lumped mass",
    "p2c": "P2, consistent mass",
    "abc": "absorbing boundary",
    "pml": "PML of 1 wavelength",
}


def _grf(correlation, seed):
    token = f"grf{round(100 * correlation):02d}-s{seed}"
    return token, dict(medium="grf", correlation=correlation, seed=seed, contrast=3.0)


def _media(token):
    if token == "const":
        return dict(medium="constant")
    if token == "wedge":
        return dict(medium="wedge")
    if token == "marm":
        return dict(medium="marmousi")
    raise KeyError(token)


@dataclass(frozen=True)
class FamilyMember:
    """One member of the Helmholtz family.

    Attributes
    ----------
    name : str
        ``helm{2d,3d}-SCHEME-MEDIUM``, the name :func:`pastixpy.gallery.problem` takes
        (``problem("helm2d-p2c-pml-grf05-s3:40")``: the size is the wavenumber k).
    dims : int
    kwargs : dict
        :func:`helmholtz_problem`'s keyword arguments, all but k.
    description : str
    """

    name: str
    dims: int
    kwargs: dict = field(hash=False)
    description: str

    def __call__(self, k, **overrides):
        """The :class:`HelmholtzProblem` at the largest wavenumber k (``overrides``: other
        keyword arguments of :func:`helmholtz_problem`, such as ``ppw``)."""
        return helmholtz_problem(k, **{**self.kwargs, **overrides})


def _member(dims, scheme, token, medium):
    words = [_SCHEME_WORDS[w] for w in scheme.split("-")]
    if medium["medium"] == "grf":
        what = (
            f"random medium (correlation {medium['correlation']:g}, seed {medium['seed']}, "
            "contrast 3)"
        )
    else:
        what = {"constant": "constant medium", "wedge": "wedge", "marmousi": "Marmousi-like"}[
            medium["medium"]
        ]
    description = f"{dims}D Helmholtz, {', '.join(words)}, {what}; SIZE = k, 10 ppw (complex)"
    return FamilyMember(
        f"helm{dims}d-{scheme}-{token}",
        dims,
        {"dims": dims, **SCHEMES[scheme], **medium},
        description,
    )


def _build():
    members = []
    for scheme in SCHEMES:
        for token in ("const", "wedge", "marm"):
            members.append(_member(2, scheme, token, _media(token)))
        members.append(_member(2, scheme, *_grf(0.1, 0)))
    for scheme in ("fd-abc", "p2c-pml"):
        for correlation, seeds in ((0.1, range(1, 5)), (0.05, range(5))):
            for seed in seeds:
                members.append(_member(2, scheme, *_grf(correlation, seed)))
    for scheme in ("fd-abc", "fd-pml"):
        members.append(_member(3, scheme, "const", _media("const")))
        for correlation, seed in ((0.1, 0), (0.1, 1), (0.05, 0)):
            members.append(_member(3, scheme, *_grf(correlation, seed)))
    return {m.name: m for m in members}


#: Every member of the family, by name.
HELMHOLTZ_FAMILY = _build()
#: The names of the 2D and 3D members.
HELMHOLTZ_FAMILY_2D = tuple(n for n, m in HELMHOLTZ_FAMILY.items() if m.dims == 2)
HELMHOLTZ_FAMILY_3D = tuple(n for n, m in HELMHOLTZ_FAMILY.items() if m.dims == 3)


def helmholtz_family(dims=None):
    """The family's members (all, or those of ``dims``), as :class:`FamilyMember`.

    Examples
    --------
    >>> len(helmholtz_family(2)), len(helmholtz_family(3))
    (50, 8)
    >>> m = HELMHOLTZ_FAMILY["helm2d-p2c-pml-grf05-s3"]
    >>> sorted(m.kwargs.items())  # doctest: +NORMALIZE_WHITESPACE
    [('boundary', 'pml'), ('contrast', 3.0), ('correlation', 0.05), ('dims', 2),
     ('discretization', 'p2'), ('mass', 'consistent'), ('medium', 'grf'), ('seed', 3)]
    >>> p = m(8)  # the problem at k = 8
    >>> p.discretization, p.boundary, p.seed, p.A.shape
    ('p2', 'pml', 3, (961, 961))
    """
    if dims not in (None, 2, 3):
        raise ValueError(f"dims must be 2, 3 or None, got {dims!r}")
    return [m for m in HELMHOLTZ_FAMILY.values() if dims in (None, m.dims)]
