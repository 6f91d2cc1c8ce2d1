"""Decoders' messages on standard error, told to the decode that wrote them:
vlad.images._decoder_messages."""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from vlad.images._decoder_messages import (
    CAPTURE_VARIABLE,
    capture_decoder_messages,
    capturing_decoder_messages,
    decode_with_messages,
)


@pytest.fixture
def capturing():
    """Inside capture_decoder_messages, as the command line decodes."""
    with capture_decoder_messages():
        yield


def test_decodes_capture_only_inside_the_block(capfd):
    def decode():
        os.write(2, b"Corrupt JPEG data: 4 extraneous bytes\n")
        return 1

    assert not capturing_decoder_messages()
    assert decode_with_messages(decode) == (1, [])
    assert capfd.readouterr().err == "Corrupt JPEG data: 4 extraneous bytes\n"
    with capture_decoder_messages():
        assert os.environ[CAPTURE_VARIABLE] == "1"  # for processes started here
        assert decode_with_messages(decode) == (
            1,
            ["Corrupt JPEG data: 4 extraneous bytes"],
        )
    assert capfd.readouterr().err == ""
    assert CAPTURE_VARIABLE not in os.environ


def test_messages_go_to_the_decode_that_wrote_them_however_decodes_overlap(
    capturing,
):
    """Eight decodes that all run at once, three of them writing a message:
    each message ends up with its own decode (the overlapping ones run again,
    alone), and the decoders' results are kept."""
    noisy = {1, 4, 6}
    started = threading.Barrier(8)
    calls = [0] * 8

    def decode(index: int) -> int:
        calls[index] += 1
        if calls[index] == 1:
            started.wait(timeout=10)  # every first run overlaps every other
        if index in noisy:
            os.write(2, f"Corrupt JPEG data: image {index}\n".encode())
        time.sleep(0.01)
        return index

    with ThreadPoolExecutor(8) as pool:
        results = list(
            pool.map(lambda i: decode_with_messages(lambda: decode(i)), range(8))
        )
    for index, (result, messages) in enumerate(results):
        assert result == index
        expected = [f"Corrupt JPEG data: image {index}"] if index in noisy else []
        assert messages == expected
    assert all(count == 2 for index, count in enumerate(calls) if index in noisy)


def test_other_output_on_standard_error_is_passed_on(capturing, capfd):
    def decode():
        os.write(2, b"not a decoder's line\nlibpng warning: iCCP: known incorrect\n")
        return 1

    assert decode_with_messages(decode) == (
        1,
        ["libpng warning: iCCP: known incorrect"],
    )
    captured = capfd.readouterr()
    assert captured.err == "not a decoder's line\n"


def test_standard_error_is_given_back(capturing, capfd):
    decode_with_messages(lambda: None)
    os.write(2, b"after\n")
    assert capfd.readouterr().err == "after\n"


def test_overlapping_blocks_in_threads_keep_capturing_until_the_last_ends():
    first_in, second_in, first_out = (threading.Event() for _ in range(3))
    seen = []

    def first():
        with capture_decoder_messages():
            first_in.set()
            second_in.wait()
        first_out.set()

    def second():
        first_in.wait()
        with capture_decoder_messages():
            second_in.set()
            first_out.wait()
            seen.append(capturing_decoder_messages())
        seen.append(capturing_decoder_messages())

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert seen == [True, False]
    assert CAPTURE_VARIABLE not in os.environ
