"""Errors the read tools report to the agent: a stable code, one actionable sentence, a hint."""

from __future__ import annotations

from talkthrough_assets.core.errors import TalkthroughError


class ReadError(TalkthroughError):
    """A request the reader cannot serve; surfaces turn it into an MCP ``isError`` result."""

    code = "error"

    def __init__(self, message: str, hint: str | None = None, echo: tuple[str, ...] = ()):
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.echo = echo  # the client's own text quoted in the message: never rewritten by the path scrubber

    @classmethod
    def with_code(cls, code: str, message: str, hint: str | None = None) -> "ReadError":
        err = cls(message, hint)
        err.code = code
        return err

    def to_dict(self) -> dict[str, str]:
        """The error as sent: ``{error, message, hint}`` (:class:`.answers.ErrorBody`)."""
        out = {"error": self.code, "message": self.message}
        if self.hint:
            out["hint"] = self.hint
        return out


class InvalidArgument(ReadError):
    code = "invalid_argument"


class UnknownRecording(ReadError):
    code = "unknown_recording"


class NotProcessed(ReadError):
    code = "not_processed"


class AudioOnly(ReadError):
    code = "audio_only"


class SourceUnavailable(ReadError):
    code = "source_unavailable"
