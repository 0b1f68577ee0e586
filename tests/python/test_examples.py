"""The examples, on small sizes: the quickstart and the encoder against NumPy,
the decoder serving loop against the same loop in NumPy, the NumPy models
(run unchanged) against NumPy running them."""
import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "examples"))

import decoder_serving  # noqa: E402
import encoder  # noqa: E402
import gpt2_numpy  # noqa: E402
import llama_numpy  # noqa: E402
import quickstart  # noqa: E402


def test_quickstart_compiles_once_for_every_batch():
    stats, worst = quickstart.main()
    assert stats["compiles"] == 1 and stats["calls"] == 3
    assert worst < 1e-4


def test_encoder_matches_numpy_and_compiles_once(capsys):
    worst = encoder.main(["--batches", "3", "--batch-size", "4", "--layers", "2", "--hidden", "64", "--heads", "4",
                          "--ffn", "128", "--vocab", "2000"])
    assert worst < 1e-4
    out = capsys.readouterr().out
    assert "compiles 1," in out  # three batches of different shapes, one dynamic entry


def test_decoder_serving_matches_numpy():
    server, mismatches = decoder_serving.main(["--requests", "3", "--max-decode", "4", "--max-context", "48", "--check"])
    assert mismatches == 0
    assert server.block.stats()["compiles"] == 2  # prefill and decode, each dynamic in its sizes


def test_llama_in_numpy_generates_numpys_ids_with_two_compiles():
    jit_ids, numpy_ids, stats, _ = llama_numpy.main(["--tokens", "40", "--layers", "2", "--dim", "64", "--heads", "4",
                                                      "--kv-heads", "2", "--hidden", "128", "--vocab", "256",
                                                      "--max-seq", "64"])
    assert jit_ids == numpy_ids and len(jit_ids) == 40
    # The prompt, then every later step: the cache written in place and the
    # growing position stay inside compiled calls.
    assert (stats["compiles"], stats["graph_breaks"], stats["calls"]) == (2, 0, 40)


def test_gpt2_in_numpy_generates_numpys_ids_with_one_compile():
    jit_ids, numpy_ids, stats = gpt2_numpy.main(["--vocab", "500", "--ctx", "64", "--embd", "64", "--layers", "2",
                                                 "--heads", "4", "--tokens", "24"])
    assert np.array_equal(jit_ids, numpy_ids) and len(jit_ids) == 8 + 24
    # The length is a symbol throughout (positions and mask made from it):
    # the prompt and every longer sequence share one dynamic entry.
    assert (stats["compiles"], stats["graph_breaks"], stats["calls"]) == (1, 0, 24)
