"""Plays a recorded trajectory (a JSON file of model replies) through the real loop.

Powers `gitbot demo` and tests that need no server. Everything it produces is labelled as a
replay: the usage and cost are what the recording says, not money spent now.
"""

from __future__ import annotations

import json
from pathlib import Path

from gitbot.llm.base import Endpoint, ModelReply, ModelRequest, ProviderError
from gitbot.llm.usage import Usage


class ReplayProvider:
    is_replay = True
    endpoint = Endpoint("replay")

    def __init__(self, path: Path):
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        self.model = data["model"]
        self._replies = list(data["replies"])
        self.position = 0

    def complete(self, request: ModelRequest) -> ModelReply:
        if self.position >= len(self._replies):
            raise ProviderError(f"replay exhausted after {self.position} replies")
        reply = self._replies[self.position]
        self.position += 1
        return ModelReply(content=reply["content"], stop_reason=reply["stop_reason"],
                          usage=Usage(**reply.get("usage", {})), request_id=f"replay-{self.position}")
