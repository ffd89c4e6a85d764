"""wget.py - a stand-in for PyPI's `wget`, which llama.cpp's server/tests/utils.py imports for
download_file(): make chat-compat downloads nothing (tests/chat/compat/conftest.py), so a test
that would download fails here, saying so, the same on every machine."""


def download(url, out=None, bar=None):
    raise RuntimeError(f"make chat-compat downloads nothing (asked for {url})")
