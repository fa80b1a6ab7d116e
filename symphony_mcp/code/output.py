"""Reading a child's output into a bounded buffer: what is past the cap is read and dropped, so 100 MB of output
costs the server no more memory than the cap."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

CHUNK = 65_536


@dataclass
class CappedOutput:
    cap: int
    kept: bytearray = field(default_factory=bytearray)
    dropped: int = 0

    async def drain(self, stream: asyncio.StreamReader) -> None:
        while chunk := await stream.read(CHUNK):
            room = self.cap - len(self.kept)
            if room > 0:
                self.kept += chunk[:room]
            self.dropped += max(0, len(chunk) - max(room, 0))

    @property
    def truncated(self) -> bool:
        return self.dropped > 0

    def text(self) -> str:
        """The kept bytes as text, with a notice of what was dropped and the setting that bounds it."""
        text = self.kept.decode("utf-8", errors="replace")
        return text + truncation_notice(self.dropped, self.cap) if self.dropped else text


def truncation_notice(dropped: int, cap: int) -> str:
    """What a caller reads after output cut at the cap: how much was dropped and the setting that bounds it."""
    return (
        f"\n[output truncated: {dropped:,} more bytes dropped; the cap is {cap:,} bytes "
        "(SYMPHONY_CODE__OUTPUT_BYTES); write large output to a file instead]"
    )
