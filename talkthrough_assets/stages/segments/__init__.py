"""The segments stage: Whisper in chunks (stage, chunks, transcribe, word_timing)."""
