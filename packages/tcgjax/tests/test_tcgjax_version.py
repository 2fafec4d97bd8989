import importlib.metadata

import tcgjax


def test_version_is_single_sourced():
    assert importlib.metadata.version("tcgjax") == tcgjax.__version__
