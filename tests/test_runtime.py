"""The runtime's rule for what a process may do, and its forked child."""

import os
import sys
import warnings

import numpy as np
import pytest

from pastixpy.runtime import Allowance, available_cores, fork_child, peak_memory


def test_an_ordinary_process_takes_every_core_and_may_fork_on_linux():
    every = Allowance.process()
    assert every.cores == available_cores()
    linux = sys.platform.startswith("linux")
    assert every.may_fork == (linux and available_cores() > 1)
    assert Allowance.process(1) == Allowance(1, False) and Allowance.process(1).children == 0
    assert Allowance.process(3) == Allowance(3, linux)
    assert Allowance.process(3).children == (2 if linux else 0)


def test_an_mpi_rank_takes_one_core_by_default_and_never_forks():
    assert Allowance.mpi_rank() == Allowance(1, False)
    assert Allowance.mpi_rank(4) == Allowance(4, False)
    assert Allowance.mpi_rank(4).children == 0


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork()")
def test_a_forked_child_sends_its_array_back_or_none_when_it_fails():
    child = fork_child(lambda: np.arange(5) * 3)
    assert np.array_equal(child.wait(), np.arange(5) * 3)
    assert fork_child(lambda: 1 / 0).wait() is None
    stopped = fork_child(lambda: np.zeros(3))
    stopped.kill()  # without waiting for its array: the process is reaped
    with pytest.raises(ChildProcessError):
        os.waitpid(stopped.pid, 0)


def test_peak_memory_is_at_least_the_arrays_held():
    held = np.ones(2**23)  # 64 MiB, touched
    peak = peak_memory()
    if peak is not None:
        assert peak >= held.nbytes


def test_a_fork_beside_jax_warns_nothing(monkeypatch):
    """The analysis forks METIS runs; JAX (pastixpy.jax) warns at every fork of a
    process that imported it, from a fork hook: the fork of a child that touches none
    of its threads' locks says nothing."""
    jax = pytest.importorskip("jax")
    jax.numpy.zeros(3).block_until_ready()  # JAX's runtime and threads started
    unraised = []
    monkeypatch.setattr(sys, "unraisablehook", unraised.append)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        child = fork_child(lambda: np.arange(4))
    assert np.array_equal(child.wait(), np.arange(4))
    assert unraised == []


def test_without_huge_pages_switches_numpy_off_and_restores_it():
    """Nested and concurrent blocks: numpy's huge-page advice is off inside any of them
    and back to what it was once the last one leaves (the factors' panels are allocated
    inside one: pastixpy.numeric.kernels.allocate_storage)."""
    import threading

    from pastixpy import runtime

    switch = runtime._hugepage_switch
    if switch is None:
        pytest.skip("this numpy has no huge-page switch")
    before = switch(True)
    try:
        with runtime.without_huge_pages():
            assert switch(False) is False  # off inside (reading it sets it: set it back)
            with runtime.without_huge_pages():
                assert switch(False) is False
            assert switch(False) is False  # the inner block left it off
        assert switch(True) is True  # restored
        inside, release = threading.Event(), threading.Event()

        def other():
            with runtime.without_huge_pages():
                inside.set()
                release.wait(10)

        thread = threading.Thread(target=other)
        thread.start()
        inside.wait(10)
        with runtime.without_huge_pages():
            pass  # left first: the other block still holds it off
        assert switch(False) is False
        release.set()
        thread.join()
        assert switch(True) is True
    finally:
        switch(before)
