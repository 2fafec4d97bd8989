import importlib.metadata

import mjx_port


def test_version_is_single_sourced():
    assert importlib.metadata.version("mjx-port") == mjx_port.__version__
