"""_errors.py - G4VError, the exception for every failure of libg4v (no ctypes here, so that a
missing library can be reported with it too)."""
from __future__ import annotations

# g4v.h's g4v_status values (stable numbers) and names, for when the library itself cannot be
# asked (it is missing); otherwise the names come from g4v_status_name.
_FALLBACK_NAMES = ("G4V_OK", "G4V_ERR_ARG", "G4V_ERR_IO", "G4V_ERR_MODEL", "G4V_ERR_IMAGE",
                   "G4V_ERR_LIMIT", "G4V_ERR_NOMEM", "G4V_ERR_UNSUPPORTED", "G4V_ERR_INTERNAL")


def status_name(status: int) -> str:
    """The C constant's name for a status number ("G4V_ERR_IMAGE"), from the library."""
    from ._lib import lib
    return lib.g4v_status_name(int(status)).decode()


class G4VError(Exception):
    """A libg4v failure: .status (the g4v_status number), .status_name and .message (the
    library's text, which names the file or field at fault). Bad Python arguments raise
    TypeError / ValueError instead."""

    status: int
    status_name: str
    message: str

    def __init__(self, status: int, message: str, status_name_: str | None = None):
        self.status = int(status)
        if status_name_ is None:
            try:
                status_name_ = status_name(self.status)
            except G4VError:  # the library is missing: its names are stable
                n = self.status
                status_name_ = (_FALLBACK_NAMES[n] if 0 <= n < len(_FALLBACK_NAMES)
                                else f"G4V_STATUS_{n}")
        self.status_name = status_name_
        self.message = message
        super().__init__(f"{self.status_name}: {message}")

    def __reduce__(self):  # picklable (Dask sends exceptions between processes)
        return (G4VError, (self.status, self.message, self.status_name))
