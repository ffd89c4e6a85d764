"""_errors.py - G4VError, the exception for every failure of libg4v (no ctypes here, so that a
missing library can be reported with it too). It imports nothing of the package: _lib imports it
and, once loaded, hands it the library's status names (_set_status_namer)."""
from __future__ import annotations

# g4v.h's g4v_status values (stable numbers) and names, for when the library itself cannot be
# asked (it is missing); otherwise the names come from g4v_status_name.
_FALLBACK_NAMES = ("G4V_OK", "G4V_ERR_ARG", "G4V_ERR_IO", "G4V_ERR_MODEL", "G4V_ERR_IMAGE",
                   "G4V_ERR_LIMIT", "G4V_ERR_NOMEM", "G4V_ERR_UNSUPPORTED", "G4V_ERR_INTERNAL")


# The library's name for a status number, set by _lib at its import (None until then).
_status_namer = None


def _set_status_namer(namer) -> None:
    global _status_namer
    _status_namer = namer


class G4VError(Exception):
    """A libg4v failure: .status (the g4v_status number), .status_name and .message (the
    library's text, which names the file or field at fault). Bad Python arguments raise
    TypeError / ValueError instead."""

    status: int
    status_name: str
    message: str

    def __init__(self, status: int, message: str, status_name_: str | None = None):
        self.status = int(status)
        if status_name_ is None and _status_namer is not None:
            try:
                status_name_ = _status_namer(self.status)
            except G4VError:  # the library is missing
                pass
        if status_name_ is None:  # without the library: its names are stable
            n = self.status
            status_name_ = (_FALLBACK_NAMES[n] if 0 <= n < len(_FALLBACK_NAMES)
                            else f"G4V_STATUS_{n}")
        self.status_name = status_name_
        self.message = message
        super().__init__(f"{self.status_name}: {message}")

    def __reduce__(self):  # picklable (Dask sends exceptions between processes)
        return (G4VError, (self.status, self.message, self.status_name))
