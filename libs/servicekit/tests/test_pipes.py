"""A pipe read on the event loop: every byte reaches the sink, in order, until its end; the
cleanup is safe to call again."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys

from servicekit.pipes import CHUNK, follow_pipe


class _Sink:
    def __init__(self) -> None:
        self.chunks: list[bytes] = []

    def feed(self, chunk: bytes) -> None:
        self.chunks.append(chunk)


async def test_a_child_s_output_arrives_whole_and_the_end_resolves() -> None:
    size = 5 * CHUNK + 7
    code = f"import sys; sys.stdout.buffer.write(b'x' * {size}); sys.stdout.flush()"
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    assert proc.stdout is not None
    sink = _Sink()
    done, finish = follow_pipe(asyncio.get_running_loop(), proc.stdout, sink)
    await asyncio.wait_for(done, 10)
    assert b"".join(sink.chunks) == b"x" * size
    assert all(len(c) <= CHUNK for c in sink.chunks)
    assert proc.stdout.closed
    finish()  # again: nothing happens (the descriptor may belong to another pipe by now)
    proc.wait()


async def test_the_cleanup_ends_a_pipe_that_is_still_open() -> None:
    read_end, write_end = os.pipe()
    pipe = os.fdopen(read_end, "rb", buffering=0)
    sink = _Sink()
    done, finish = follow_pipe(asyncio.get_running_loop(), pipe, sink)
    os.write(write_end, b"partial")
    await asyncio.sleep(0.05)
    finish()
    assert done.done()
    assert pipe.closed
    assert sink.chunks == [b"partial"]
    os.close(write_end)
