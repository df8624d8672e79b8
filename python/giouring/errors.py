"""The package's exception."""

from __future__ import annotations


class GiouringError(OSError):
    """A giouring call failed.

    Attributes:
        errno: the error as a positive errno value (``errno.EINVAL``, ``errno.EIO``, ...).
        strerror: the library's message: what failed and the values involved.
        nvme_status: the 15-bit NVMe status field of the failing command (SC, SCT, CRD, More,
            DNR), 0 where the failure was not an NVMe error.
        results: for a batch that failed (:meth:`giouring.Plan.finish`), each key's
            :class:`giouring.Result`; else None.
    """

    def __init__(self, errno: int, message: str, nvme_status: int = 0, results: list | None = None,
                 status_name: str = ""):
        super().__init__(errno, message)
        self.nvme_status = nvme_status
        self.results = results
        self._status_name = status_name

    def __str__(self) -> str:
        s = f"[errno {self.errno}] {self.strerror}"
        if self.nvme_status:
            s += f" (NVMe status 0x{self.nvme_status:04x}"
            s += f": {self._status_name})" if self._status_name else ")"
        return s
