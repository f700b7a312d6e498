"""What one rank does, and in which order, in a distributed factorization and its solves.

Fan-in (PaStiX's): a rank sums all its updates to a cblk another rank owns in a fan-in
panel of its own, and sends it once, when the last of its cblks facing that cblk is
factored; the owner adds the sums of every such rank into its panel before factoring
it. A rank factors its cblks in ascending order, in *steps*: a run of consecutive
cblks factored by one kernel call (on the rank's threads), cut before a cblk that
waits for other ranks' sums, after a cblk that completes a fan-in panel, which then
goes out at once, and once it holds a sixteenth of the rank's work; between steps a
rank takes whatever sums have arrived for its cblks (the senders keep them in memory
until it does). Sends do not block; a rank waits only for sums to its own
cblks, which come from lower cblks only, so no two ranks wait for each other.

The solves follow the same pattern on the vector: forward, the same steps, each rank
summing its updates to another rank's rows and sending them; backward, the steps in
reverse, the owner of a cblk sending its solved rows to the ranks whose cblks face it
(those that sent it sums in the forward sweep), each receiving them before the first
of its cblks that needs them.
"""

from dataclasses import dataclass

import numpy as np

from .mapping import cblk_work

#: A rank's forward steps hold at most this fraction of its work each, so that between
#: two it takes the sums that other ranks sent it (they keep them in memory until then).
STEP_PIECES = 16


@dataclass(frozen=True)
class Step:
    """One kernel call of a rank and the messages around it.

    Attributes
    ----------
    cblks : ndarray of int64
        Consecutive cblks of this rank, ascending.
    receive : dict
        Before the call (forward): cblk (this rank's, the step's first) → the ranks
        whose sums it waits for.
    send : list of int
        After the call (forward): other ranks' cblks whose fan-in panels the step
        completed, each sent to its owner.
    """

    cblks: np.ndarray
    receive: dict
    send: list


@dataclass(frozen=True)
class Schedule:
    """Rank ``rank``'s part of a distributed factorization (see the module docstring).

    Attributes
    ----------
    rank, ranks : int
    owner : ndarray of int32
        Owner of each cblk.
    fanin : ndarray of bool
        The other ranks' cblks this rank's cblks update (a fan-in panel each).
    contributors : dict
        Each of this rank's cblks that other ranks update → those ranks (sorted).
    steps : list of Step
        Forward: the factorization and the forward sweep.
    backward : list of Step
        The backward sweep, in its order (descending): ``receive`` maps a cblk of
        another rank → its owner, whose solved rows this rank needs before the step;
        ``send`` lists this rank's cblks whose solved rows go, after the step, to
        their ``contributors``.
    """

    rank: int
    ranks: int
    owner: np.ndarray
    fanin: np.ndarray
    contributors: dict
    steps: list
    backward: list

    @property
    def owned(self):
        """This rank's cblks (bool)."""
        return self.owner == self.rank

    @classmethod
    def build(cls, layout, owner, rank, pieces=STEP_PIECES):
        """The schedule of ``rank`` for cblk owners ``owner`` (see the module docstring);
        a forward step ends, besides, once it holds ``pieces``-th of the rank's work."""
        owner = np.asarray(owner, dtype=np.int32)
        ncblk = layout.ncblk
        ranks = int(owner.max()) + 1 if ncblk else 1
        nblok = layout.fcblk.shape[0]
        source = np.repeat(np.arange(ncblk, dtype=np.int64), np.diff(layout.bloknum))
        off = np.ones(nblok, dtype=bool)
        off[layout.bloknum[:-1]] = False  # diagonal blocks
        src, tgt = source[off], layout.fcblk[off]
        src_owner, tgt_owner = owner[src], owner[tgt]
        cross = src_owner != tgt_owner
        # Other ranks' updates to this rank's cblks.
        mine_in = cross & (tgt_owner == rank)
        contributors = {}
        for f, r in set(zip(tgt[mine_in].tolist(), src_owner[mine_in].tolist(), strict=True)):
            contributors.setdefault(f, set()).add(r)
        contributors = {f: sorted(rs) for f, rs in sorted(contributors.items())}
        # This rank's updates to other ranks' cblks: the last of its cblks facing each.
        mine_out = cross & (src_owner == rank)
        fanin = np.zeros(ncblk, dtype=bool)
        fanin[tgt[mine_out]] = True
        last = {}
        for k, f in zip(src[mine_out].tolist(), tgt[mine_out].tolist(), strict=True):
            last[f] = max(last.get(f, -1), k)
        completes = {}
        for f, k in last.items():
            completes.setdefault(k, []).append(f)
        owned = np.flatnonzero(owner == rank)
        work = cblk_work(layout)
        piece = work[owned].sum() / max(pieces, 1)
        steps = _steps(owned, contributors, completes, work, piece)
        # Backward: the mirror image. Before the first (highest) of this rank's cblks
        # facing another rank's cblk f, f's solved rows; after each of its cblks that
        # other ranks face, its solved rows to them.
        needs = {}
        for f, k in last.items():
            needs.setdefault(k, []).append(f)
        backward = _backward_steps(owned, needs, owner, contributors)
        return cls(rank, ranks, owner, fanin, contributors, steps, backward)


def _steps(owned, contributors, completes, work, piece):
    """Runs of ``owned`` cut before a cblk in ``contributors``, after one in
    ``completes``, and once they hold ``piece`` work."""
    steps, run, receive, send, held = [], [], {}, [], 0.0
    for k in owned.tolist():
        if k in contributors and run:
            steps.append(Step(np.array(run, dtype=np.int64), receive, send))
            run, receive, send, held = [], {}, [], 0.0
        if k in contributors:
            receive = {k: contributors[k]}
        run.append(k)
        held += work[k]
        if k in completes or held >= piece:
            send = sorted(completes.get(k, ()))
            steps.append(Step(np.array(run, dtype=np.int64), receive, send))
            run, receive, send, held = [], {}, [], 0.0
    if run:
        steps.append(Step(np.array(run, dtype=np.int64), receive, send))
    return steps


def _backward_steps(owned, needs, owner, contributors):
    """Runs of ``owned`` in descending order, cut before a cblk that needs other
    ranks' rows (``needs``) and after one whose rows others need."""
    steps, run, receive, send = [], [], {}, []
    for k in owned[::-1].tolist():
        if k in needs and run:
            steps.append(Step(np.array(run[::-1], dtype=np.int64), receive, send))
            run, receive, send = [], {}, []
        if k in needs:
            receive = {f: int(owner[f]) for f in sorted(needs[k], reverse=True)}
        run.append(k)
        if k in contributors:
            send = [k]
            steps.append(Step(np.array(run[::-1], dtype=np.int64), receive, send))
            run, receive, send = [], {}, []
    if run:
        steps.append(Step(np.array(run[::-1], dtype=np.int64), receive, send))
    return steps
