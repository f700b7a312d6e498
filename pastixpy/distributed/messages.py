"""Messages between the ranks of a distributed factorization: non-blocking sends whose
buffers are kept until they complete, receives and barriers that sleep while they wait
(so that Ctrl-C reaches a waiting rank, and a rank waiting does not take a core from
another's work), and the count of what was sent and received.

Messages are numpy buffers (mpi4py's upper-case calls), tagged with the cblk they
belong to. :class:`~.local.LocalComm` offers the same calls between threads.
"""

import time

import numpy as np


class Traffic:
    """Bytes and messages this rank sent and received, and its time waiting for them."""

    def __init__(self):
        self.sent = 0
        self.received = 0
        self.messages = 0
        self.waited = 0.0

    def as_dict(self):
        return {
            "sent_bytes": self.sent,
            "received_bytes": self.received,
            "messages_sent": self.messages,
            "wait_seconds": self.waited,
        }


class Sender:
    """Non-blocking sends whose buffers are kept until they complete, then handed to
    ``done`` (a fan-in panel sent from its own memory is released then)."""

    def __init__(self, comm, traffic):
        self.comm = comm
        self.traffic = traffic
        self.pending = []

    def send(self, buffers, dest, tag, done=None):
        """Send ``buffers`` (one array or several, in order, with one tag)."""
        if isinstance(buffers, np.ndarray):
            buffers = [buffers]
        requests = []
        for buffer in buffers:
            buffer = np.ascontiguousarray(buffer)
            requests.append((self.comm.Isend(buffer, dest=dest, tag=tag), buffer))
            self.traffic.sent += buffer.nbytes
            self.traffic.messages += 1
        self.pending.append((requests, done))
        self.progress()

    def progress(self):
        """Give back the buffers of the sends that completed."""
        still = []
        for requests, done in self.pending:
            if all(r.Test() for r, _ in requests):
                if done is not None:
                    done()
            else:
                still.append((requests, done))
        self.pending = still

    def wait(self):
        for requests, done in self.pending:
            for r, _ in requests:
                r.Wait()
            if done is not None:
                done()
        self.pending = []


def receive(comm, traffic, shape, dtype, source, tag):
    buffer = np.empty(shape, dtype=dtype)
    t0 = time.perf_counter()
    wait_for_message(comm, source, tag)
    comm.Recv(buffer, source=source, tag=tag)
    traffic.waited += time.perf_counter() - t0
    traffic.received += buffer.nbytes
    return buffer


#: Longest sleep between two looks for a message (seconds).
POLL_MAX_SLEEP = 2e-3


def wait_for_message(comm, source, tag):
    """Return once a message from ``source`` with ``tag`` has arrived, sleeping between
    looks (MPI implementations spin in a blocking receive, which takes the core from
    another rank's work when ranks outnumber cores, as in tests on two cores)."""
    if not hasattr(comm, "Iprobe"):
        return
    pause = 2e-5
    while not comm.Iprobe(source=source, tag=tag):
        time.sleep(pause)
        pause = min(2 * pause, POLL_MAX_SLEEP)


def probe_any(comm):
    """``(source, tag)`` of a message that has arrived, from any rank, or None."""
    if hasattr(comm, "probe_any"):  # LocalComm
        return comm.probe_any()
    from mpi4py import MPI

    status = MPI.Status()
    if comm.Iprobe(source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG, status=status):
        return status.Get_source(), status.Get_tag()
    return None


def wait_for_all(comm):
    """A barrier that sleeps while it waits (see :func:`wait_for_message`)."""
    if not hasattr(comm, "Ibarrier"):
        comm.Barrier()
        return
    request = comm.Ibarrier()
    pause = 2e-5
    while not request.Test():
        time.sleep(pause)
        pause = min(2 * pause, POLL_MAX_SLEEP)
