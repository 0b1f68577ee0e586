"""The examples, on small sizes: the quickstart and the encoder against NumPy,
the decoder serving loop against the same loop in NumPy."""
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "examples"))

import decoder_serving  # noqa: E402
import encoder  # noqa: E402
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
